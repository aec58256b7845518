"""The test run's reaper: kills every process the run started once the runner is gone.

``python tests/reaper.py TOKEN PID`` waits on a pidfd of the pytest process PID
(`conftest.pytest_configure` starts it); when pytest ends, however it ends (done, Ctrl-C,
killed by a CI timeout), the wait returns. Every process whose environment says
``SWARM_TEST_RUN=TOKEN`` (pytest sets it before anything starts, so every process a test starts
inherits it: teammates, `swarm` commands, tmux servers, PostgreSQL, Claude Code) is then killed,
pass after pass until a pass finds none (a dying process may have forked). Nothing a test forgot
outlives the run, holding inotify instances or ports the next run needs.
"""

from __future__ import annotations

import os
import select
import signal
import sys

VARIABLE = "SWARM_TEST_RUN"
MAX_PASSES = 20
HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver")


def marked(token: str) -> list[int]:
    """The processes whose environment carries this run's token (not this one)."""
    marker = f"{VARIABLE}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if marker in environ.split(b"\0") and not _ends_with_the_runner(int(entry)):
            found.append(int(entry))
    return found


def _ends_with_the_runner(pid: int) -> bool:
    """multiprocessing's helpers (the resource tracker, the fork server) end by themselves once
    the runner that started them is gone: not left behind, only a moment slower than the reaper."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except OSError:
        return True  # gone already
    return any(helper in command for helper in HELPERS)


def reap(token: str) -> int:
    """Kill every process of the run; how many were killed."""
    killed: set[int] = set()
    for _ in range(MAX_PASSES):
        found = [pid for pid in marked(token) if _alive(pid)]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
    return len(killed)


def _alive(pid: int) -> bool:
    """Running (a zombie is dead already: only its parent can take it away)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def main() -> None:
    token, runner = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C at the runner is not for the reaper
    try:
        pidfd = os.pidfd_open(runner)
    except ProcessLookupError:  # gone already
        pass
    else:
        select.select([pidfd], [], [])  # readable once the runner has exited
    count = reap(token)
    if count:
        sys.stderr.write(f"tests/reaper.py: killed {count} processes the test run left\n")


if __name__ == "__main__":
    main()
