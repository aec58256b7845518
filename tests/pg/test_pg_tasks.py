"""The task board in PostgreSQL, what only it does: the file board's very records, claims with
epochs, fencing, and NUL refused (the rules every store keeps are in tests/contract)."""

from __future__ import annotations

import pytest

from protocols.errors import StaleClaim, UnstorableValue
from protocols.pg import Database, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.pg import claims as pg_claims
from protocols.tasks.board import NewTask, TaskBoard
from protocols.tasks.task import ClaimFailure


def test_tasks_are_the_file_boards_tasks(db: Database, pg_team: PgTeamFile, paths, team) -> None:
    on_file, in_store = TaskBoard(paths), PgTaskBoard(db, "t")
    for board in (on_file, in_store):
        a = board.create("design", "write it down", active_form="Designing")
        b = board.create("build", metadata={"area": "db", "_internal": False}, blocked_by=[a.id])
        c = board.create("ship", owner="alice")
        board.update(c.id, addBlockedBy=[b.id], extra="goes under metadata")
        board.update(a.id, status="in_progress", owner="bob")
        board.fail(b.id, "it broke", by="carol")
        board.update(b.id, metadata={"failed": {"reason": "x", "by": None, "at": "t"}})
        board.update(c.id, metadata={"late": 1})  # metadata after owner, as the file has it
        board.release_all("alice")
        board.release_all("bob")
        board.claim(c.id, "carol", check_busy=False)  # owner again, now after metadata
    files = [t.to_json_dict() for t in on_file.list(include_internal=True)]
    rows = [t.to_json_dict() for t in in_store.list(include_internal=True)]
    assert [list(t) for t in files] == [list(t) for t in rows]
    assert files == rows


def test_claim_next_takes_the_lowest_open_unblocked_task(db: Database, pg_team: PgTeamFile) -> None:
    board = PgTaskBoard(db, "t")
    board.create_many([NewTask("a"), NewTask("b", after=(0,)), NewTask("c")])
    board.create("hidden", metadata={"_internal": True})
    first = board.claim_next("alice")
    second = board.claim_next("bob")
    assert first and first.task and first.task.id == "1" and first.epoch == 1
    assert second and second.task and second.task.id == "3"
    assert board.claim_next("carol") is None  # 2 waits for 1; 4 is internal
    busy = board.claim("2", "alice")
    assert busy.reason == ClaimFailure.BLOCKED and busy.blocked_by == ["1"]
    board.complete("1", "alice", first.epoch)
    again = board.claim_next("bob")
    assert again and again.reason == ClaimFailure.AGENT_BUSY and again.busy_with == ["3"]
    third = board.claim_next("carol")
    assert third and third.task and third.task.id == "2" and third.task.owner == "carol"
    assert board.claim("2", "alice").reason == ClaimFailure.ALREADY_CLAIMED
    assert board.claim("1", "alice").reason == ClaimFailure.ALREADY_RESOLVED
    assert board.claim("77", "alice").reason == ClaimFailure.TASK_NOT_FOUND


def test_a_stale_epoch_is_refused_and_changes_nothing(db: Database, pg_team: PgTeamFile) -> None:
    board = PgTaskBoard(db, "t")
    task = board.create("one")
    old = board.claim_next("alice")
    assert old and old.epoch == 1
    assert [t.id for t in board.release_all("alice")] == [task.id]  # epoch 2
    new = board.claim_next("bob")
    assert new and new.epoch == 3
    with pytest.raises(StaleClaim, match=r"'alice''s claim \(epoch 1\) is no longer current"):
        board.complete(task.id, "alice", old.epoch)
    with pytest.raises(StaleClaim):
        board.update(task.id, actor="alice", epoch=old.epoch, subject="hijacked")
    with pytest.raises(StaleClaim):  # the right epoch, but not the owner
        board.complete(task.id, "alice", new.epoch)
    current = board.require(task.id)
    assert (current.status, current.owner, current.subject) == ("in_progress", "bob", "one")
    assert board.complete(task.id, "bob", new.epoch).status == "completed"
    assert board.complete(task.id, "bob", new.epoch).status == "completed"  # a retry: same
    events = db.run(
        lambda c: c.execute("SELECT event, agent, epoch FROM task_events ORDER BY seq").fetchall()
    )
    assert events == [
        ("claimed", "alice", 1),
        ("released", "alice", 2),
        ("claimed", "bob", 3),
        ("completed", "bob", 3),
    ]


def test_an_owner_change_by_the_lead_fences_the_old_owner(
    db: Database, pg_team: PgTeamFile
) -> None:
    mailbox = PgMailbox(db, "t")
    board = PgTaskBoard(db, "t", mailbox=mailbox)
    task = board.create("one")
    claim = board.claim_next("alice")
    assert claim and claim.epoch
    board.update(task.id, actor="team-lead", owner="bob")
    assert board.epoch(task.id) == claim.epoch + 1
    with pytest.raises(StaleClaim):
        board.complete(task.id, "alice", claim.epoch)
    [assignment] = mailbox.read_unread("bob")
    assert '"task_assignment"' in assignment.text


def test_a_claim_or_creation_done_again_after_its_commit_gives_the_same_answer(
    db: Database, pg_team: PgTeamFile
) -> None:
    """What `Database.run` does after a commit whose answer was lost: the same work with the
    same token, in a new transaction."""
    board = PgTaskBoard(db, "t")
    board.create_many([NewTask("a"), NewTask("b")])
    first = db.run(lambda c: pg_claims.claim_next(c, "t", "alice", True, "token-1"))
    again = db.run(lambda c: pg_claims.claim_next(c, "t", "alice", True, "token-1"))
    assert first and again and first.task and again.task
    assert (again.success, again.task.id, again.epoch) == (True, first.task.id, first.epoch)
    assert board.require("2").owner is None


def test_a_nul_in_task_text_is_refused_before_anything_is_written(
    db: Database, pg_team: PgTeamFile
) -> None:
    board = PgTaskBoard(db, "t")
    with pytest.raises(UnstorableValue, match=r"task subject .*NUL \(\\x00\)"):
        board.create("bad\x00subject")
    with pytest.raises(UnstorableValue, match="lone surrogate"):
        board.create("ok", "bad \ud800 description")
    good = board.create("fine")
    with pytest.raises(UnstorableValue):
        board.update(good.id, subject="now\x00bad")
    with pytest.raises(UnstorableValue):
        board.claim_next("ali\x00ce")
    assert good.id == "1"
    assert [t.subject for t in board.list()] == ["fine"]
