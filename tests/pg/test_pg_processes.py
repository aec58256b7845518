"""The store under real processes: many writers, many claimers, a claimer killed mid-task.

Every figure checked here is a count (lost, duplicated, claimed twice, claimed too early),
never a time."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest
from helpers import DEADLINE_S, wait_for
from pg_procs import (
    TEAM,
    check_the_race,
    claim_and_hang,
    claim_until_done,
    dependent_tasks,
    send_many,
)
from procs import forkserver_context, run_together

from protocols.errors import LeaseLost, StaleClaim
from protocols.messages.models import TeammateTerminated
from protocols.pg import Database, Leases, PgMailbox, PgTaskBoard, PgTeamFile

pytestmark = pytest.mark.slow


def test_every_acknowledged_send_of_many_writers_is_stored_exactly_once(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    writers, each = 8, 200
    reports = run_together(
        forkserver_context(),
        [(send_many, (conninfo, f"w{n}", "alice", each)) for n in range(writers)],
        timeout_s=300,
    )
    assert [r.error for r in reports] == [None] * writers
    acked = [message_id for r in reports for message_id in r.acked]
    assert len(acked) == writers * each
    stored = Counter(str(e.id) for e in PgMailbox(db, TEAM).peek_all("alice"))
    assert set(stored) == set(acked)
    assert max(stored.values()) == 1


def test_sixteen_workers_claim_a_thousand_tasks_once_each_in_dependency_order(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    blocked_by = dependent_tasks(PgTaskBoard(db, TEAM), 1000)
    assert sum(map(bool, blocked_by.values())) > 150
    reports = run_together(
        forkserver_context(),
        [(claim_until_done, (conninfo, f"worker-{n}", 240.0)) for n in range(16)],
        timeout_s=300,
    )
    check_the_race(db, reports, blocked_by)


def test_a_claimer_killed_mid_task_loses_its_lease_and_the_task_is_done_once(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    board = PgTaskBoard(db, TEAM)
    task = board.create("the only task")
    ctx = forkserver_context()
    ours, theirs = ctx.Pipe()
    doomed = ctx.Process(target=claim_and_hang, args=(conninfo, "bob", 1.0, theirs))
    doomed.start()
    assert ours.poll(DEADLINE_S), "the claimer never reported its claim"
    task_id, old_epoch = ours.recv()
    assert task_id == task.id, old_epoch
    assert doomed.pid is not None
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.join(DEADLINE_S)

    leases = Leases(db, TEAM)
    assert board.claim_next("alice") is None  # bob still holds it while his lease runs
    expired = wait_for(leases.sweep, "bob's lease to run out and be swept")
    assert [(e.name, e.released) for e in expired] == [("bob", [task.id])]
    assert leases.sweep() == []  # swept once

    again = board.claim_next("alice")
    assert again and again.task and again.task.id == task.id and again.epoch == old_epoch + 2
    with pytest.raises(StaleClaim):  # bob's late completion, were he only paused
        board.complete(task.id, "bob", old_epoch)
    board.complete(task.id, "alice", again.epoch)
    with pytest.raises(LeaseLost, match="declared dead"):
        leases.heartbeat("bob")

    events = db.run(
        lambda c: c.execute("SELECT event, agent FROM task_events ORDER BY seq").fetchall()
    )
    assert events == [
        ("claimed", "bob"),
        ("released", "bob"),
        ("claimed", "alice"),
        ("completed", "alice"),
    ]
    assert pg_team.load().require("bob").isActive is False
    [note] = PgMailbox(db, TEAM).read_unread("team-lead")
    message = note.structured()
    assert isinstance(message, TeammateTerminated)
    assert f"#{task.id}" in message.message and "lease ran out" in message.message
