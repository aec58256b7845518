"""How long `swarm status` / `swarm watch` take to read a big team and draw it: target < 100 ms.

What it measures
    A team of ``--members`` teammates (default 30) besides the lead is built in a temporary
    config root: every member has a live pid (this process) and a status file with usage; the
    board has ``--tasks`` tasks (default 500): one in progress per member, a third completed, the
    rest pending, every 10th blocked by the one before it; the lead's inbox has 200 messages
    (idle notifications and plain ones), most of them read and compacted into the archive, and
    3 permission requests waiting. Then `swarm.views.snapshot.snapshot()` runs 50 times (``--runs``)
    cold (its cache cleared first: every file parsed, as one `swarm status` does) and 50 times
    as a redraw of `swarm watch` does it (every file read or stat'ed again, only changed ones
    parsed), and `swarm.views.table.render` draws the view 50 times.

Figures
    * cold_median_ms, cold_p95_ms: one `snapshot()` parsing every file;
    * snapshot_median_ms, snapshot_p95_ms: one `snapshot()` after an earlier one (a redraw);
    * render_median_ms, render_p95_ms: one `render()` of that view;
    * frame_p95_ms: one frame of `swarm watch` (rich, 160 columns); redraw_p95_ms: snapshot
      (warm, as the dashboard redraws) + frame;
    * verdict: whether a redraw at p95 stays under the 100 ms target.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR`` points there), never
``~/.claude``. The last line printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import percentile, verdict
from rich.console import Console

from protocols.clock import now_iso
from protocols.mailbox import Mailbox
from protocols.messages import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.permissions import request_permission
from protocols.status import AgentStatus, write_status
from protocols.tasks import TaskBoard
from protocols.team import TeamFile
from swarm.views.dashboard import frame
from swarm.views.snapshot import clear_cache, snapshot
from swarm.views.table import render

TEAM = "dashboard"
TARGET_MS = 100.0


def build(root: Path, members: int, tasks: int) -> TeamPaths:
    """The team described in the module docstring, under `root`."""
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
    return paths


def timed(function: object, runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times, result


def draw_frame(view: Any) -> str:
    """The dashboard's frame for `view`, drawn as a 160-column terminal would get it."""
    console = Console(file=io.StringIO(), width=160, force_terminal=True, color_system="truecolor")
    console.print(frame(view))
    return console.file.getvalue()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=30, help="teammates besides the lead")
    parser.add_argument("--tasks", type=int, default=500, help="tasks on the board")
    parser.add_argument("--runs", type=int, default=50, help="timed runs of each")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="swarm-bench-dashboard-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root
        print(f"config root: {root} (temporary)")
        print(f"building: {args.members} members, {args.tasks} tasks ...")
        paths = build(Path(root), args.members, args.tasks)
        cold_ms, _ = timed(lambda: (clear_cache(), snapshot(paths))[1], args.runs)
        snap_ms, view = timed(lambda: snapshot(paths), args.runs)
        render_ms, text = timed(lambda: render(view), args.runs)  # type: ignore[arg-type]
        frame_ms, _ = timed(lambda: draw_frame(view), args.runs)  # the dashboard's frame
    snap_median, snap_p95 = statistics.median(snap_ms), percentile(snap_ms, 95)
    cold_median, cold_p95 = statistics.median(cold_ms), percentile(cold_ms, 95)
    render_median, render_p95 = statistics.median(render_ms), percentile(render_ms, 95)
    frame_median, frame_p95 = statistics.median(frame_ms), percentile(frame_ms, 95)
    print(f"{args.runs} runs; the text is {len(str(text).splitlines())} lines")
    print(f"  snapshot  median {snap_median:7.2f} ms   p95 {snap_p95:7.2f} ms   (a redraw)")
    print(f"  cold      median {cold_median:7.2f} ms   p95 {cold_p95:7.2f} ms   (all parsed)")
    print(f"  render    median {render_median:7.2f} ms   p95 {render_p95:7.2f} ms   (swarm status)")
    print(f"  frame     median {frame_median:7.2f} ms   p95 {frame_p95:7.2f} ms   (swarm watch)")
    total = cold_p95 + max(render_p95, frame_p95)
    redraw = snap_p95 + frame_p95
    ok = redraw < TARGET_MS
    print(
        f"  a dashboard redraw (snapshot + frame) p95 {redraw:.2f} ms   target < {TARGET_MS:.0f} ms"
    )
    print(f"  the first frame (cold snapshot + frame) p95 {total:.2f} ms")
    print(f"  {verdict(ok)}")
    print(
        f"members={args.members} tasks={args.tasks} runs={args.runs} "
        f"snapshot_median_ms={snap_median:.2f} snapshot_p95_ms={snap_p95:.2f} "
        f"cold_median_ms={cold_median:.2f} cold_p95_ms={cold_p95:.2f} "
        f"render_median_ms={render_median:.2f} render_p95_ms={render_p95:.2f} "
        f"frame_p95_ms={frame_p95:.2f} redraw_p95_ms={redraw:.2f} "
        f"target_ms={TARGET_MS:.0f} verdict={verdict(ok)}"
    )


if __name__ == "__main__":
    main()
