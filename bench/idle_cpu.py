"""CPU used by idle teammates: 10 shell workers with nothing to do, over 60 s.

Spawns the teammates as subprocesses in a temporary config root, waits until each has read its
prompt and gone idle, then reads their user+system CPU time from /proc before and after the
measuring window. Prints the total as a percentage of one core; the last line is ``key=value``
pairs. Target: under 1% of one core in total.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchkit import verdict

from protocols import Mailbox, TeamFile, TeamPaths
from swarm.lifecycle import request_shutdown, spawn_member
from swarm.members import member_pid

TARGET_PERCENT = 1.0
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teammates", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--backend", default="subprocess", choices=["subprocess", "tmux"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarm-bench-idle-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root
        os.environ.pop("TMUX", None)
        os.environ["SWARM_TMUX_SOCKET"] = f"swarm-bench-{os.getpid()}"
        paths = TeamPaths(Path(root), "idle")
        team = TeamFile(paths)
        team.create(description="idle CPU")
        names = [f"w{n}" for n in range(args.teammates)]
        for name in names:
            spawn_member(paths, name, "Nothing to do yet.", backend=args.backend, cwd=Path(root))
        mailbox = Mailbox(paths)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            all(e.is_read for e in mailbox.read_all(n)) and team.load().member(n).isActive is False
            for n in names
        ):
            time.sleep(0.1)
        pids = [member_pid(team.load().member(n)) for n in names]
        before = sum(cpu_seconds(p) for p in pids)
        start = time.monotonic()
        time.sleep(args.seconds)  # the measuring window itself, not a wait for a condition
        elapsed = time.monotonic() - start
        used = sum(cpu_seconds(p) for p in pids) - before
        percent = used / elapsed * 100
        print(
            f"{args.teammates} idle {args.backend} teammates used {used:.2f} s of CPU in "
            f"{elapsed:.0f} s = {percent:.2f}% of one core  target < {TARGET_PERCENT}%  "
            f"{verdict(percent < TARGET_PERCENT)}"
        )
        for name in names:
            request_shutdown(paths, name, wait_s=10, force=True)
    print(
        f"cpu_percent={percent:.2f} cpu_s={used:.2f} seconds={elapsed:.0f} "
        f"teammates={args.teammates} backend={args.backend}"
    )


if __name__ == "__main__":
    main()
