"""Spawn latency: from `swarm spawn` (the library call behind it) to the teammate's first inbox
read, for the tmux and subprocess backends.

Each round creates a member with `swarm.team.lifecycle.spawn_member` and waits (inotify on the
member's inbox, with a deadline) until the prompt entry is marked read: that is the teammate process
having started, imported its code, registered, and read its inbox. Everything runs under a
temporary config root and a private tmux socket. The last line is ``key=value`` pairs.
Target: under 1 s for both backends.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchkit import percentile, verdict

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.watch.wakeup import InboxWatcher
from swarm.team.lifecycle import request_shutdown, spawn_member
from teammate.options import MemberSpec

TARGET_S = 1.0


def measure(backend: str, rounds: int, root: Path) -> list[float]:
    paths = TeamPaths(root, f"spawn-{backend}")
    TeamFile(paths).create(description="spawn latency")
    mailbox = Mailbox(paths)
    seconds = []
    for n in range(rounds):
        name = f"w{n}"
        inbox = paths.inbox(name)
        with InboxWatcher(inbox) as watcher:
            started = time.perf_counter()
            spawn_member(paths, name, "hello", MemberSpec(backend=backend, cwd=str(root)))
            deadline = started + 30
            while time.perf_counter() < deadline:
                watcher.clear()
                if any(e.is_read for e in mailbox.read_all(name)):
                    break
                watcher.wait(deadline - time.perf_counter())
            seconds.append(time.perf_counter() - started)
        request_shutdown(paths, name, wait_s=10, force=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    backends = ["subprocess"] + (["tmux"] if shutil.which("tmux") else [])
    figures = {}
    with tempfile.TemporaryDirectory(prefix="swarm-bench-spawn-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root
        os.environ.pop("TMUX", None)
        socket = f"swarm-bench-{os.getpid()}"
        os.environ["SWARM_TMUX_SOCKET"] = socket
        try:
            for backend in backends:
                seconds = measure(backend, args.rounds, Path(root))
                p50, worst = percentile(seconds, 50), max(seconds)
                print(
                    f"{backend:>10}: spawn -> first inbox read  p50 {p50 * 1000:6.0f} ms  "
                    f"max {worst * 1000:6.0f} ms  ({args.rounds} spawns)  target < "
                    f"{TARGET_S * 1000:.0f} ms  {verdict(worst < TARGET_S)}"
                )
                figures[f"{backend}_p50_ms"] = round(p50 * 1000)
                figures[f"{backend}_max_ms"] = round(worst * 1000)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    print(" ".join(f"{k}={v}" for k, v in figures.items()) + f" rounds={args.rounds}")


if __name__ == "__main__":
    main()
