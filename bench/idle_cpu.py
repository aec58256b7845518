"""CPU used by idle teammates: 10 shell workers with nothing to do, on an empty board and, side by
side in the same run, on a board of 2,000 completed tasks.

Spawns each team's teammates as subprocesses in a temporary config root, waits until each has
read its prompt and gone idle, then reads their user+system CPU time from /proc before and after
the measuring window. Prints each team's total as a percentage of one core, and the ratio of
the big board's to the empty one's (the baseline). The last line is ``key=value`` pairs.
Targets: under 1% of one core for 10 idle teammates, and the same (within 0.5 points) whatever
the board holds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchkit import verdict

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.tasks import NewTask, TaskBoard
from swarm.team.lifecycle import request_shutdown, spawn_member
from swarm.team.members import member_pid
from teammate.options import MemberSpec

TARGET_PERCENT = 1.0
SAME_WITHIN_POINTS = 0.5
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def idle_team(root: Path, team: str, teammates: int, completed: int, backend: str) -> TeamPaths:
    """A team of idle teammates on a board of `completed` completed tasks."""
    paths = TeamPaths(root, team)
    team_file = TeamFile(paths)
    team_file.create(description="idle CPU")
    board = TaskBoard(paths)
    for task in board.create_many([NewTask(f"done {n}") for n in range(completed)]):
        board.update(task.id, status="completed")
    names = [f"w{n}" for n in range(teammates)]
    for name in names:
        spawn_member(paths, name, "Nothing to do yet.", MemberSpec(backend=backend, cwd=str(root)))
    mailbox = Mailbox(paths)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
        all(e.is_read for e in mailbox.read_all(n)) and team_file.load().member(n).isActive is False
        for n in names
    ):
        time.sleep(0.1)
    return paths


def pids_of(paths: TeamPaths) -> list[int]:
    members = TeamFile(paths).load().members[1:]
    return [pid for m in members if (pid := member_pid(m)) is not None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teammates", type=int, default=10)
    parser.add_argument("--completed", type=int, default=2000, help="tasks on the big board")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--backend", default="subprocess", choices=["subprocess", "tmux"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarm-bench-idle-") as directory:
        root = Path(directory)
        os.environ["CLAUDE_CONFIG_DIR"] = directory
        os.environ.pop("TMUX", None)
        os.environ["SWARM_TMUX_SOCKET"] = f"swarm-bench-{os.getpid()}"
        empty = idle_team(root, "empty", args.teammates, 0, args.backend)
        big = idle_team(root, "big", args.teammates, args.completed, args.backend)
        pids = {empty: pids_of(empty), big: pids_of(big)}
        before = {p: sum(cpu_seconds(pid) for pid in pids[p]) for p in pids}
        start = time.monotonic()
        time.sleep(args.seconds)  # the measuring window itself, not a wait for a condition
        elapsed = time.monotonic() - start
        used = {p: sum(cpu_seconds(pid) for pid in pids[p]) - before[p] for p in pids}
        percent = {p: used[p] / elapsed * 100 for p in pids}
        for paths, board in ((empty, "an empty board"), (big, f"{args.completed:,} done tasks")):
            print(
                f"{args.teammates} idle {args.backend} teammates on {board}: {used[paths]:.2f} s "
                f"of CPU in {elapsed:.0f} s = {percent[paths]:.2f}% of one core  target < "
                f"{TARGET_PERCENT}%  {verdict(percent[paths] < TARGET_PERCENT)}"
            )
        gap = percent[big] - percent[empty]
        print(
            f"the big board costs {gap:+.2f} points over the empty one (baseline, same run)  "
            f"target within {SAME_WITHIN_POINTS}  {verdict(abs(gap) <= SAME_WITHIN_POINTS)}"
        )
        for paths in (empty, big):
            for member in TeamFile(paths).load().members[1:]:
                request_shutdown(paths, member.name, wait_s=10, force=True)
    print(
        f"cpu_percent={percent[empty]:.2f} cpu_percent_big_board={percent[big]:.2f} "
        f"completed={args.completed} seconds={elapsed:.0f} teammates={args.teammates} "
        f"backend={args.backend}"
    )


if __name__ == "__main__":
    main()
