"""How long `swarm status` / `swarm watch` take to read a big team and draw it: target < 100 ms.

What it measures
    For each team size of ``--members`` (default 10, 50 and 200 teammates besides the lead) a
    team is built in a temporary config root: every member has a live pid (this process) and a
    status file with usage; the board has ``--tasks`` tasks (default 500): one in progress per
    member, a third completed, the rest pending, every 10th blocked by the one before it; the
    lead's inbox has 200 messages (idle notifications and plain ones), most of them read and
    compacted into the archive, and 3 permission requests waiting; ``--record N`` puts N more
    messages in the lead's record and N/10 in each member's (a team that has run for days).
    Then, ``--runs`` times each (default 50):

    * ``swarm status`` in process: `snapshot(once=True)` cold (the process's caches cleared, as
      in a new `swarm status`: the board read through its summary on disk, every other file
      parsed) and `swarm.views.table.render`;
    * ``swarm status`` as the command, a new ``python -m swarm status`` process each time
      (``--command-runs``, default 10): Python's start, the imports, the reads, the text. Twice:
      on a *settled* board (nothing changed in the last `RACY_NS`, 2 s: the board's summary is
      trusted whole, as on a quiet team), and on a *busy* one (a task changed just before each
      run: every task file is stat'ed, the changed ones read);
    * one redraw of ``swarm watch``: `snapshot()` after an earlier one (every file read or
      stat'ed again, only changed ones parsed) and the frame drawn for a 120x40 terminal.

Figures
    A table, one row per team size: the median (and p95) of each, in milliseconds. The last line
    is one line of ``key=value`` pairs: per size N, ``status_cmd_median_ms_N`` (settled),
    ``status_cmd_busy_median_ms_N``,
    ``status_median_ms_N``, ``redraw_median_ms_N``, ``redraw_p95_ms_N``; and ``verdict``:
    whether, at every size, a redraw at p95 and ``swarm status`` (median, settled and busy) stay
    under the 100 ms target.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR`` points there), never
``~/.claude``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import percentile, verdict
from rich.console import Console

from protocols.clock import now_iso
from protocols.fs.jsonio import dumps_compact
from protocols.inbox.ids import msg_id_for
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.member.status import AgentStatus, write_status
from protocols.messages.models import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.tasks.summary_file import RACY_NS
from protocols.team.file import TeamFile
from swarm.views.dashboard_frame import frame
from swarm.views.snapshot import clear_cache, snapshot
from swarm.views.table import render

TEAM = "dashboard"
TARGET_MS = 100.0


def build(root: Path, members: int, tasks: int, record: int = 0) -> TeamPaths:
    """The team described in the module docstring, under `root`; with `record`, the lead's
    record (its inbox's archive) holds that many more messages, and each member's a tenth."""
    paths = TeamPaths(root, TEAM)
    team = TeamFile(paths, durability="process")
    team.create(description="dashboard benchmark", cwd=root)
    names = [f"worker-{i:02d}" for i in range(members)]
    for name in names:
        team.add_member(name, cwd=root, model="sonnet", pid=os.getpid(), isActive=True)
        write_status(
            paths,
            AgentStatus(
                name=name,
                model="claude-sonnet-5-5",
                state="working",
                activity="running Bash: make test",
                requests=40,
                turns=40,
                toolCalls=60,
                usage={
                    "input_tokens": 12_000,
                    "output_tokens": 9_000,
                    "cache_read_input_tokens": 400_000,
                    "cache_creation_input_tokens": 30_000,
                },
            ),
        )
    board = TaskBoard(paths, durability="process")
    for i in range(1, tasks + 1):
        board.create(f"task number {i}", f"do part {i} of the work")
        if i % 10 == 0 and i > 1:
            board.update(str(i), addBlockedBy=[str(i - 1)])
    for i in range(1, tasks // 3 + 1):
        board.update(str(i), status="completed", owner=names[i % members] if names else None)
    start = tasks // 3 + 1
    for offset, name in enumerate(names):
        if start + offset <= tasks:
            board.update(str(start + offset), status="in_progress", owner=name)
    mailbox = Mailbox(paths, durability="process")
    for i in range(200):
        sender = names[i % members] if names else LEAD_NAME
        if i % 2:
            mailbox.send(LEAD_NAME, f"progress note {i}: all good", sender=sender)
        else:
            note = IdleNotification.model_validate(
                {"from": sender, "timestamp": now_iso(), "completedTaskId": str(i % tasks + 1)}
            )
            mailbox.send(LEAD_NAME, note, sender=sender)
        if i < 180:
            mailbox.mark_read(LEAD_NAME, mailbox.read_unread(LEAD_NAME))
    for name in names[:3]:
        request_permission(
            mailbox,
            worker=name,
            tool_name="Bash",
            tool_use_id=f"toolu-{name}",
            description="rm -rf build",
            input={"command": "rm -rf build"},
        )
    for name, count in [(LEAD_NAME, record)] + [(n, record // 10) for n in names]:
        lines = []
        for i in range(count):
            sent = f"msg-bench-{name}-{i}"
            item = {"from": names[0] if names else LEAD_NAME, "text": f"progress note {i}"}
            item.update(timestamp=now_iso(), read=True, id=sent, msg_id=msg_id_for(sent))
            lines.append(dumps_compact(item) + "\n")
        with open(paths.inbox_archive(name), "a", encoding="utf-8") as archive:
            archive.writelines(lines)
    return paths


def timed(function: object, runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times, result


def draw_frame(view: Any, width: int = 120, height: int = 40) -> str:
    """The dashboard's frame for `view`, drawn as a `width` x `height` terminal would get it."""
    console = Console(
        file=io.StringIO(),
        width=width,
        height=height,
        force_terminal=True,
        color_system="truecolor",
    )
    console.print(frame(view, width, height))
    return console.file.getvalue()  # type: ignore[attr-defined]


def settle(paths: TeamPaths) -> None:
    """Wait until the board counts as settled (its directory and files older than `RACY_NS`),
    then look once, so that the summary the next looks read is trusted whole."""
    files = (paths.tasks_dir, *paths.tasks_dir.glob("*.json"))
    newest = max(max(s.st_mtime_ns, s.st_ctime_ns) for s in map(os.stat, files))
    time.sleep(max(0.0, (newest + RACY_NS - time.time_ns()) / 1e9 + 0.05))
    clear_cache()
    snapshot(paths, once=True)


def status_command(root: str) -> None:
    """`swarm status` as a person runs it: a new process."""
    subprocess.run(
        [sys.executable, "-m", "swarm", "status", "--team", TEAM],
        env={**os.environ, "CLAUDE_CONFIG_DIR": root},
        stdout=subprocess.DEVNULL,
        check=True,
    )


def measure(
    members: int, tasks: int, runs: int, command_runs: int, record: int = 0
) -> dict[str, float]:
    """The figures of one team size (medians and p95s in ms)."""
    with tempfile.TemporaryDirectory(prefix="swarm-bench-dashboard-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root
        paths = build(Path(root), members, tasks, record)
        cold = lambda: render((clear_cache(), snapshot(paths, once=True))[1])  # noqa: E731
        status_ms, _ = timed(cold, runs)
        settle(paths)
        command_ms, _ = timed(lambda: status_command(root), command_runs)
        board = TaskBoard(paths, durability="process")
        changes = iter(range(10**9))

        def busy_command() -> float:
            board.update("1", description=f"changed {next(changes)}")  # just now
            started = time.perf_counter()
            status_command(root)
            return (time.perf_counter() - started) * 1000

        busy_ms = [busy_command() for _ in range(command_runs)]
        # the dashboard's first frame; redraws come after it. Twice: building the board in this
        # process flooded its board watch (the kernel's queue overflows at 16,384 events), and
        # the look after an overflow reads every file again, as a `swarm watch` would once after
        # 10,000 tasks were added at once; not what a redraw costs
        for _ in range(2):
            draw_frame(snapshot(paths))
        redraw_ms, _ = timed(lambda: draw_frame(snapshot(paths)), runs)
    return {
        "status_cmd_median_ms": statistics.median(command_ms),
        "status_cmd_p95_ms": percentile(command_ms, 95),
        "status_cmd_busy_median_ms": statistics.median(busy_ms),
        "status_cmd_busy_p95_ms": percentile(busy_ms, 95),
        "status_median_ms": statistics.median(status_ms),
        "status_p95_ms": percentile(status_ms, 95),
        "redraw_median_ms": statistics.median(redraw_ms),
        "redraw_p95_ms": percentile(redraw_ms, 95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--members", default="10,50,200", help="team sizes, comma-separated (teammates)"
    )
    parser.add_argument("--tasks", type=int, default=500, help="tasks on the board")
    parser.add_argument("--runs", type=int, default=50, help="timed runs of each")
    parser.add_argument(
        "--record",
        type=int,
        default=0,
        help="messages already in the lead's record (each member's: a tenth): a long-lived team",
    )
    parser.add_argument(
        "--command-runs",
        type=int,
        help="timed `swarm status` processes (default: 10, at most --runs)",
    )
    args = parser.parse_args()
    args.command_runs = args.command_runs or min(10, args.runs)
    sizes = [int(n) for n in args.members.split(",")]

    print(
        f"{args.tasks} tasks; {args.record} more messages in the lead's record; "
        f"{args.runs} runs ({args.command_runs} of the command); ms"
    )
    heads = ("status cmd", "status cmd, busy", "status (in process)", "watch redraw")
    print(f"{'members':>8}" + "".join(f" {head:>20}" for head in heads))
    print(f"{'':>8}" + f" {'median    p95':>20}" * len(heads))
    figures = {}
    for members in sizes:
        got = measure(members, args.tasks, args.runs, args.command_runs, args.record)
        figures[members] = got
        cells = ("status_cmd", "status_cmd_busy", "status", "redraw")
        print(
            f"{members:>8}"
            + "".join(
                f" {got[cell + '_median_ms']:12.1f} {got[cell + '_p95_ms']:7.1f}" for cell in cells
            )
        )
    checks = {
        f"a watch redraw (snapshot + a 120x40 frame) p95 < {TARGET_MS:.0f} ms": "redraw_p95_ms",
        f"`swarm status` on a settled board, median < {TARGET_MS:.0f} ms": "status_cmd_median_ms",
        f"`swarm status` right after a change, median < {TARGET_MS:.0f} ms": (
            "status_cmd_busy_median_ms"
        ),
    }
    ok = True
    for text, key in checks.items():
        met = all(got[key] < TARGET_MS for got in figures.values())
        print(f"  {text}: {verdict(met)}")
        ok = ok and met
    pairs = [f"members={','.join(map(str, sizes))}", f"tasks={args.tasks}", f"runs={args.runs}"]
    pairs.append(f"record={args.record}")
    for members, got in figures.items():
        pairs += [f"{key}_{members}={value:.2f}" for key, value in got.items()]
    pairs += [f"target_ms={TARGET_MS:.0f}", f"verdict={verdict(ok)}"]
    print(" ".join(pairs))


if __name__ == "__main__":
    main()
