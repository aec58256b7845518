"""A team of real worker processes coordinating only through files, offline (`make demo`).

The lead (this process) creates a team in a temporary config root, adds three workers and puts
tasks on the board: one "count the lines of <file>" task per module in the `protocols` folders,
and a "sum up" task blocked by all of them. Each worker is its own OS process
(``python examples/protocols_demo.py worker ...``): it waits on its inbox, auto-claims the lowest
open task, does it, records the result in the task's ``metadata``, marks it completed and sends the
lead an ``idle_notification``. The lead wakes on each message (inotify, no polling), prints it with
its delivery latency, and when the board is done asks every worker to shut down with the
``shutdown_request`` protocol; each answers ``shutdown_approved`` and exits.

Usage: python examples/protocols_demo.py [--workers 3] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protocols import LEAD_NAME, Mailbox, TaskBoard, TeamFile, TeamPaths
from protocols.clock import ms_from_iso, now_iso, now_ms
from protocols.messages.correlation import PendingRequests, is_stale, shutdown_request_id
from protocols.messages.models import IdleNotification, ShutdownApproved, ShutdownRequest
from protocols.watch.wakeup import InboxWatcher

TEAM = "demo"
REPO = Path(__file__).resolve().parent.parent


def lead(workers: int, keep: bool) -> int:
    root = Path(tempfile.mkdtemp(prefix="swarm-demo-"))
    os.environ["CLAUDE_CONFIG_DIR"] = str(root)
    paths = TeamPaths(root, TEAM)
    team = TeamFile(paths)
    team.create(description="count the lines of the protocols package", cwd=REPO)
    mailbox = Mailbox(paths)
    board = TaskBoard(paths, mailbox)
    print(f"team {TEAM!r} in {root}")

    modules = sorted((REPO / "protocols").glob("*/*.py"))  # the modules of its folders
    counts = [
        board.create(f"count {m.relative_to(REPO)}", str(m), metadata={"file": str(m)})
        for m in modules
    ]
    total = board.create("sum up", "add the counts", metadata={"sum": True})
    board.update(total.id, addBlockedBy=[t.id for t in counts])
    print(f"{len(counts) + 1} tasks; #{total.id} is blocked by the other {len(counts)}")

    names = [f"worker-{n}" for n in range(1, workers + 1)]
    procs = []
    for name in names:
        team.add_member(name, agent_type="demo-worker", cwd=REPO, backend_type="subprocess")
        mailbox.send(name, "Work the board until it is empty.", sender=LEAD_NAME)
        command = [sys.executable, __file__, "worker", "--root", str(root), "--name", name]
        procs.append(subprocess.Popen(command))
    print(f"spawned {', '.join(names)} as separate processes\n")

    pending = PendingRequests()
    latencies: list[float] = []
    deadline = time.monotonic() + 120
    with InboxWatcher(paths.inbox(LEAD_NAME)) as watcher:
        while procs and time.monotonic() < deadline:
            entries = mailbox.wait(LEAD_NAME, 1.0, watcher)
            received = now_ms()
            for entry in entries:
                message = entry.structured()
                latencies.append(received - (ms_from_iso(entry.timestamp) or received))
                if isinstance(message, IdleNotification):
                    print(f"  {entry.from_:>9} idle   {message.summary or ''}")
                elif isinstance(message, ShutdownApproved) and pending.match(message):
                    print(f"  {entry.from_:>9} approved shutdown")
                    team.remove_member(entry.from_)
                else:
                    print(f"  {entry.from_:>9} says   {entry.text}")
            mailbox.mark_read(LEAD_NAME, entries)
            if all(t.status == "completed" for t in board.list()) and not len(pending):
                for name in team.load().member_names():
                    if name != LEAD_NAME:
                        request = ShutdownRequest(
                            requestId=shutdown_request_id(name),
                            from_=LEAD_NAME,
                            reason="board done",
                            timestamp=now_iso(),
                        )
                        pending.add(request)
                        mailbox.send(name, request, sender=LEAD_NAME)
            procs = [p for p in procs if p.poll() is None]

    result = board.require(total.id)
    print(f"\nresult: {result.metadata.get('result')}")
    print(
        f"lead received {len(latencies)} messages; delivery p50 "
        f"{sorted(latencies)[len(latencies) // 2]:.0f} ms (timestamps have 1 ms resolution)"
    )
    print(f"members left: {team.load().member_names()}")
    if keep:
        print(f"files kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if not procs and result.status == "completed" else 1


def worker(root: Path, name: str) -> int:
    paths = TeamPaths(root, TEAM)
    mailbox = Mailbox(paths)
    board = TaskBoard(paths, mailbox)
    me = TeamFile(paths).load().member(name)
    with InboxWatcher(paths.inbox(name)) as watcher:
        while True:
            for entry in mailbox.wait(name, 0.2, watcher):
                mailbox.mark_read(name, [entry])
                message = entry.structured()
                if isinstance(message, ShutdownRequest) and not is_stale(message, me.joinedAt):
                    board.release_all(name)
                    reply = ShutdownApproved(
                        requestId=message.requestId,
                        from_=name,
                        timestamp=now_iso(),
                        backendType="subprocess",
                    )
                    mailbox.send(LEAD_NAME, reply, sender=name, color=me.color)
                    return 0
            claim = board.claim_next(name)
            if claim is None or not claim.success:
                continue
            task = claim.task
            if (task.metadata or {}).get("sum"):
                done = [t for t in board.list() if "lines" in (t.metadata or {})]
                result = f"{sum(t.metadata['lines'] for t in done)} lines in {len(done)} modules"
                board.update(task.id, status="completed", result=result)
            else:
                lines = len(Path(task.metadata["file"]).read_text().splitlines())
                board.update(task.id, status="completed", lines=lines)
                result = f"{Path(task.metadata['file']).name}: {lines} lines"
            note = IdleNotification(
                from_=name,
                timestamp=now_iso(),
                idleReason="available",
                summary=f"#{task.id} {result}",
                completedTaskId=task.id,
                completedStatus="resolved",
            )
            mailbox.send(LEAD_NAME, note, sender=name, color=me.color)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="role")
    run = sub.add_parser("lead", help="run the demo (the default)")
    run.add_argument("--workers", type=int, default=3)
    run.add_argument("--keep", action="store_true", help="print where the team's files are")
    work = sub.add_parser("worker", help="internal: one worker process")
    work.add_argument("--root", type=Path, required=True)
    work.add_argument("--name", required=True)
    args = parser.parse_args(sys.argv[1:] or ["lead"])
    if args.role == "worker":
        return worker(args.root, args.name)
    return lead(args.workers, args.keep)


if __name__ == "__main__":
    sys.exit(main())
