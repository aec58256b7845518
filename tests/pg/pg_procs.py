"""Code run in the child processes of the PostgreSQL store's tests (and the benchmark).

The tests fork the children from the ``forkserver``'s clean single-threaded server
(`procs.forkserver_context`), the benchmark spawns them; never a fork of the pytest process.
Each gets the database's conninfo as an argument, puts exactly one report on its results queue
(with the traceback instead of dying silently when something raised), and waits at the `start`
barrier first so that all begin together (`procs.run_together`).
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from protocols.pg import Database, Leases, PgMailbox, PgTaskBoard
from protocols.tasks.board import NewTask

TEAM = "t"
START_TIMEOUT_S = 60.0
RECONNECT_S = 90.0  # longer than any restart a test does


@dataclass
class SendReport:
    sender: str
    acked: list[str] = field(default_factory=list)
    retries: int = 0
    error: str | None = None


def send_many(
    start: Barrier, results: Queue[Any], conninfo: str, sender: str, to: str, count: int
) -> None:
    """Send `count` messages to `to`, each with its own id; report the ids acknowledged."""
    report = SendReport(sender)
    db = Database(conninfo, reconnect_s=RECONNECT_S)
    try:
        mailbox = PgMailbox(db, TEAM)
        start.wait(START_TIMEOUT_S)
        for n in range(count):
            message_id = f"{sender}-{n}"
            mailbox.send(to, f"message {n} from {sender}", sender=sender, message_id=message_id)
            report.acked.append(message_id)
    except Exception:
        report.error = traceback.format_exc()
    report.retries = db.retries
    db.close()
    results.put(report)


@dataclass
class ReceiveReport:
    reader: str
    received: list[str] = field(default_factory=list)  # swarm ids, in the order received
    retries: int = 0
    error: str | None = None


def receive_until(
    start: Barrier,
    results: Queue[Any],
    conninfo: str,
    reader: str,
    expected: int,
    deadline_s: float,
) -> None:
    """Receive (wait, then mark read) until `expected` messages came or the deadline passed."""
    report = ReceiveReport(reader)
    db = Database(conninfo, reconnect_s=RECONNECT_S)
    try:
        mailbox = PgMailbox(db, TEAM, rescan_s=0.5)
        start.wait(START_TIMEOUT_S)
        deadline = time.monotonic() + deadline_s
        with mailbox.listener() as listener:
            while len(report.received) < expected and time.monotonic() < deadline:
                got = mailbox.receive(reader, deadline - time.monotonic(), listener)
                report.received.extend(str(entry.id) for entry in got)
    except Exception:
        report.error = traceback.format_exc()
    report.retries = db.retries
    db.close()
    results.put(report)


@dataclass
class ClaimReport:
    worker: str
    claims: list[tuple[str, int]] = field(default_factory=list)  # (task id, epoch)
    refusals: list[str] = field(default_factory=list)
    timed_out: bool = False
    error: str | None = None


def claim_until_done(
    start: Barrier, results: Queue[Any], conninfo: str, worker: str, deadline_s: float
) -> None:
    """Claim the next task and complete it with the claim's epoch, until no task is left
    unfinished. When nothing is claimable yet (a blocker is being worked on), look again after
    a few milliseconds, as an idle worker does."""
    report = ClaimReport(worker)
    db = Database(conninfo, reconnect_s=RECONNECT_S)
    try:
        board = PgTaskBoard(db, TEAM)
        start.wait(START_TIMEOUT_S)
        deadline = time.monotonic() + deadline_s
        while True:
            if time.monotonic() > deadline:
                report.timed_out = True
                break
            result = board.claim_next(worker)
            if result is None:
                if not unfinished(db):
                    break
                time.sleep(0.005 + random.random() * 0.01)  # idle worker: look again soon
                continue
            if not result.success or result.task is None or result.epoch is None:
                report.refusals.append(str(result.reason))
                continue
            board.complete(result.task.id, worker, result.epoch)
            report.claims.append((result.task.id, result.epoch))
    except Exception:
        report.error = traceback.format_exc()
    db.close()
    results.put(report)


CLONE_NEWNET = 0x40000000


def claim_until_done_in(
    start: Barrier,
    results: Queue[Any],
    namespace: str,
    conninfo: str,
    worker: str,
    deadline_s: float,
) -> None:
    """`claim_until_done` from inside network namespace `namespace` (another machine's network:
    the server is reached over its veth pair), entered before any connection is made."""
    fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {namespace}")
    finally:
        os.close(fd)
    claim_until_done(start, results, conninfo, worker, deadline_s)


def dependent_tasks(board: PgTaskBoard, count: int) -> dict[str, tuple[str, ...]]:
    """`count` tasks in chains (every tenth waits for the one before) and with some random
    blockers among earlier ones; their blockers by id."""
    rng = random.Random(20)
    specs = []
    for n in range(count):
        after: set[int] = set()
        if n % 10 == 9:
            after.add(n - 1)
        if n >= 50 and rng.random() < 0.2:
            after.update(rng.sample(range(n), 2))
        specs.append(NewTask(f"task {n}", after=tuple(sorted(after))))
    return {t.id: tuple(t.blockedBy) for t in board.create_many(specs)}


def check_the_race(
    db: Database, reports: list[ClaimReport], blocked_by: dict[str, tuple[str, ...]]
) -> None:
    """Every task claimed and completed once, none claimed before its blockers were
    completed (by the server's own record of events), no worker refused by the busy rule."""
    assert [r.error for r in reports] == [None] * len(reports)
    assert not any(r.timed_out for r in reports)
    assert [r.refusals for r in reports] == [[]] * len(reports)
    claimed = Counter(task_id for r in reports for task_id, _ in r.claims)
    assert set(claimed) == set(blocked_by) and max(claimed.values()) == 1
    assert all(t.status == "completed" for t in PgTaskBoard(db, TEAM).list())
    events = db.run(
        lambda c: c.execute(
            "SELECT task_id, event, seq FROM task_events WHERE team = %s", [TEAM]
        ).fetchall()
    )
    claimed_at = {str(t): seq for t, event, seq in events if event == "claimed"}
    completed_at = {str(t): seq for t, event, seq in events if event == "completed"}
    count = len(blocked_by)
    assert Counter(event for _, event, _ in events) == {"claimed": count, "completed": count}
    early = [
        f"#{task} claimed before #{blocker} completed"
        for task, blockers in blocked_by.items()
        for blocker in blockers
        if claimed_at[task] < completed_at[blocker]
    ]
    assert early == []


def unfinished(db: Database) -> int:
    row = db.run(
        lambda c: c.execute(
            "SELECT count(*) FROM tasks WHERE team = %s AND status <> 'completed'", [TEAM]
        ).fetchone()
    )
    return int(row[0]) if row else 0


def claim_and_hang(conninfo: str, worker: str, lease_s: float, report: Connection) -> None:
    """Take a lease and a task, say which (task id, epoch), then wait to be killed."""
    try:
        db = Database(conninfo)
        Leases(db, TEAM).heartbeat(worker, lease_s)
        result = PgTaskBoard(db, TEAM).claim_next(worker)
        assert result is not None and result.task is not None
        report.send((result.task.id, result.epoch))
    except Exception:
        report.send(("error", traceback.format_exc()))
        return
    while True:
        signal.pause()  # until SIGKILL


def connect_and_migrate(start: Barrier, results: Queue[Any], conninfo: str) -> None:
    """Connect to a new database at the same moment as others: each migrates if needed."""
    try:
        start.wait(START_TIMEOUT_S)
        with Database(conninfo) as db:
            db.run(lambda c: c.execute("SELECT 1"))
        results.put("ok")
    except Exception:
        results.put(traceback.format_exc())
