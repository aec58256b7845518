"""The PostgreSQL store beside the file store, in one run: durable sends, wake-up latency, claims.

What it measures
    The same work on both stores (`protocols.inbox.mailbox.Mailbox` and
    `protocols.tasks.board.TaskBoard` under a temporary config root; `protocols.pg.PgMailbox` and
    `PgTaskBoard` on a temporary PostgreSQL server started for the run, `fsync` and
    `synchronous_commit` on, over its Unix socket):

    * send rate: W writer processes (1, then 8) each send N messages, one `send` after the
      other, each to an inbox of its own (so writers wait for the store, not for each other's
      inbox); every send returns once durable (files: fsync; PostgreSQL: the commit's WAL flush);
    * delivery latency: one process waits for its inbox (files: inotify; PostgreSQL: LISTEN/
      NOTIFY) while another sends M messages one at a time, each after the previous one was
      received; latency is send call to the waiting reader returning it (``time.monotonic_ns``,
      one clock for the whole machine on Linux);
    * claim rate: T tasks, every 10th blocked by the one before, then K worker processes loop
      ``claim_next`` and complete what they claimed (on PostgreSQL with the claim's epoch);
      claims per second of wall time, and tasks claimed twice (must be 0).

The last line printed is one line of ``key=value`` pairs (``file_`` and ``pg_`` figures side by
side). Nothing outside the temporary directories is touched.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from benchkit import collect, percentile, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "pg"))

from pg_server import running

from protocols import Mailbox, TaskBoard, TeamFile, TeamPaths
from protocols.tasks.board import NewTask

TEAM = "bench"
START_TIMEOUT_S = 60.0
IDLE_SLEEP_S = 0.005
CREATE_BATCH = 50  # a multiple of 10: a task and the one it waits for are in one batch


def stores(kind: str, where: str) -> tuple[Any, Any]:
    """(mailbox, board) of `kind` (``file`` or ``pg``) at `where` (a config root, a conninfo)."""
    if kind == "file":
        os.environ["CLAUDE_CONFIG_DIR"] = where
        paths = TeamPaths(Path(where), TEAM)
        return Mailbox(paths), TaskBoard(paths)
    from protocols.pg import Database, PgMailbox, PgTaskBoard

    db = Database(where)
    return PgMailbox(db, TEAM, rescan_s=1.0), PgTaskBoard(db, TEAM)


def make_team(kind: str, where: str, members: list[str]) -> None:
    if kind == "file":
        team: Any = TeamFile(TeamPaths(Path(where), TEAM))
    else:
        from protocols.pg import Database, PgTeamFile

        team = PgTeamFile(Database(where), TEAM)
    team.create(description="store benchmark")
    for name in members:
        team.add_member(name)


def start(
    target: Callable[..., None], jobs: list[tuple[Any, ...]], timeout: float
) -> tuple[int, list[Any]]:
    """Run `target(ready, go, results, *job)` for every job in its own process, all released at
    once; returns (the start time in monotonic ns, their results)."""
    ctx = mp.get_context("spawn")
    ready, go, results = ctx.Queue(), ctx.Event(), ctx.Queue()
    processes = [ctx.Process(target=target, args=(ready, go, results, *job)) for job in jobs]
    for process in processes:
        process.start()
    if len(collect(ready, len(jobs), START_TIMEOUT_S)) < len(jobs):
        raise SystemExit("not every process started")
    started = time.monotonic_ns()
    go.set()
    done = collect(results, len(jobs), timeout)
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()
    if len(done) < len(jobs):
        raise SystemExit(f"only {len(done)} of {len(jobs)} processes reported")
    return started, done


def sender(
    ready: Queue, go: Event, results: Queue, kind: str, where: str, to: str, count: int
) -> None:
    mailbox, _ = stores(kind, where)
    ready.put(to)
    go.wait(START_TIMEOUT_S)
    for n in range(count):
        mailbox.send(to, f"message {n}", sender="team-lead", message_id=f"{to}-{n}")
    results.put(time.monotonic_ns())


def send_rate(kind: str, where: str, writers: int, each: int) -> float:
    started, ends = start(
        sender, [(kind, where, f"w{n}", each) for n in range(writers)], timeout=600
    )
    return writers * each / ((max(ends) - started) / 1e9)


def latency_reader(
    ready: Queue, go: Event, results: Queue, kind: str, where: str, count: int, acks: Queue
) -> None:
    mailbox, _ = stores(kind, where)
    ready.put("reader")
    go.wait(START_TIMEOUT_S)
    latencies = []
    while len(latencies) < count:
        entries = mailbox.wait("reader", 30.0)
        now = time.monotonic_ns()
        if not entries:
            break
        mailbox.mark_read("reader", entries)
        for entry in entries:
            latencies.append((now - int(entry.text)) / 1e6)
            acks.put(len(latencies))
    results.put(latencies)


def latency_sender(
    ready: Queue, go: Event, results: Queue, kind: str, where: str, count: int, acks: Queue
) -> None:
    mailbox, _ = stores(kind, where)
    ready.put("sender")
    go.wait(START_TIMEOUT_S)
    time.sleep(0.2)  # let the reader start waiting
    for _ in range(count):
        mailbox.send("reader", str(time.monotonic_ns()), sender="team-lead")
        acks.get(timeout=30)
    results.put(None)


def latency(kind: str, where: str, count: int) -> list[float]:
    acks = mp.get_context("spawn").Queue()
    _, done = start(
        _dispatch, [("r", kind, where, count, acks), ("s", kind, where, count, acks)], timeout=600
    )
    return next(d for d in done if d is not None)


def _dispatch(ready: Queue, go: Event, results: Queue, role: str, *args: Any) -> None:
    (latency_reader if role == "r" else latency_sender)(ready, go, results, *args)


def claimer(ready: Queue, go: Event, results: Queue, kind: str, where: str, worker: str) -> None:
    _, board = stores(kind, where)
    ready.put(worker)
    go.wait(START_TIMEOUT_S)
    claimed = []
    while True:
        result = board.claim_next(worker)
        if result is None:
            if not any(t.status != "completed" for t in board.list()):
                break
            time.sleep(IDLE_SLEEP_S)  # a blocker is being worked on
            continue
        if not result.success or result.task is None:
            time.sleep(IDLE_SLEEP_S)
            continue
        if kind == "pg":
            board.complete(result.task.id, worker, result.epoch)
        else:
            board.update(result.task.id, status="completed")
        claimed.append(result.task.id)
    results.put((claimed, time.monotonic_ns()))


def claim_rate(kind: str, where: str, workers: int, tasks: int) -> tuple[float, int]:
    _, board = stores(kind, where)
    for first in range(0, tasks, CREATE_BATCH):  # the file board holds its list lock per batch
        board.create_many(
            [
                NewTask(f"task {n}", after=(n - first - 1,) if n % 10 == 9 else ())
                for n in range(first, min(first + CREATE_BATCH, tasks))
            ]
        )
    started, done = start(
        claimer, [(kind, where, f"worker-{n}") for n in range(workers)], timeout=600
    )
    claims = Counter(task for claimed, _ in done for task in claimed)
    wall = (max(end for _, end in done) - started) / 1e9
    return sum(claims.values()) / wall, sum(1 for n in claims.values() if n > 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=300, help="messages per writer")
    parser.add_argument("--messages", type=int, default=200, help="latency samples")
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()

    figures: dict[str, str] = {}
    with running(fsync=True) as server, tempfile.TemporaryDirectory(prefix="swarm-bench-") as tmp:
        print(f"PostgreSQL {server.version()} at {server.host} (temporary; fsync on)")
        writers = [f"w{n}" for n in range(8)]
        places = {"file": {}, "pg": {}}  # type: dict[str, dict[str, str]]
        for part in ("send", "latency", "claims"):
            root = os.path.join(tmp, part)
            os.mkdir(root)
            places["file"][part] = root
            places["pg"][part] = server.create_database(part)
        for kind in ("file", "pg"):
            make_team(kind, places[kind]["send"], writers)
            make_team(kind, places[kind]["latency"], ["reader"])
            make_team(kind, places[kind]["claims"], [])

        print(f"send rate: each writer sends {args.sends} messages, each to its own inbox")
        for count in (1, 8):
            rates = {}
            for kind in ("file", "pg"):
                for name in writers:  # a fresh inbox per round: ids restart at 0
                    _clear(kind, places[kind]["send"], name)
                rates[kind] = send_rate(kind, places[kind]["send"], count, args.sends)
                figures[f"{kind}_send_per_s_{count}w"] = f"{rates[kind]:.0f}"
            print(f"  {count} writer(s): files {rates['file']:8.0f}/s   pg {rates['pg']:8.0f}/s")

        print(f"delivery latency: {args.messages} messages one at a time, send to received")
        for kind in ("file", "pg"):
            ms = latency(kind, places[kind]["latency"], args.messages)[5:]  # 5 to warm up
            p50, p99 = percentile(ms, 50), percentile(ms, 99)
            figures[f"{kind}_latency_p50_ms"] = f"{p50:.2f}"
            figures[f"{kind}_latency_p99_ms"] = f"{p99:.2f}"
            print(f"  {kind:4s}  p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")

        print(f"claims: {args.workers} workers, {args.tasks} tasks (every 10th blocked)")
        for kind in ("file", "pg"):
            rate, double = claim_rate(kind, places[kind]["claims"], args.workers, args.tasks)
            figures[f"{kind}_claims_per_s"] = f"{rate:.0f}"
            figures[f"{kind}_double_claims"] = str(double)
            print(
                f"  {kind:4s}  {rate:8.1f} claims/s   double claims {double}  {verdict(not double)}"
            )
    print(" ".join(f"{key}={value}" for key, value in figures.items()))


def _clear(kind: str, where: str, name: str) -> None:
    """Empty `name`'s inbox between rounds (its messages would be sent again as retries)."""
    if kind == "file":
        for path in Path(where, "teams", TEAM, "inboxes").glob(f"{name}.*"):
            path.unlink()
        Path(where, "teams", TEAM, "inboxes", f"{name}.json").write_text("[]")
        return
    from protocols.pg import Database

    with Database(where) as db:
        db.run(lambda c: c.execute("DELETE FROM messages WHERE recipient = %s", [name]))


if __name__ == "__main__":
    main()
