"""TaskBoard with Claude Code's semantics: ids, listing, updates, deletion, dependencies on both
sides, typed claim failures, auto-claim, release, and task_assignment on owner change."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from protocols.errors import InvalidTaskUpdate, TaskNotFound
from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import TaskAssignment
from protocols.paths import TeamPaths
from protocols.tasks.board import ClaimFailure, TaskBoard
from protocols.tasks.model import Task
from protocols.team.file import TeamFile


@pytest.fixture
def board(team: TeamFile) -> TaskBoard:
    return TaskBoard(team.paths, mailbox=Mailbox(team.paths))


def test_created_tasks_have_claude_codes_layout(board: TaskBoard, paths: TeamPaths) -> None:
    task = board.create("Write schema.sql", "users table", active_form="Writing schema.sql")
    raw = paths.task(task.id).read_text()
    assert not raw.endswith("\n")
    assert list(json.loads(raw)) == [
        "id",
        "subject",
        "description",
        "activeForm",
        "status",
        "blocks",
        "blockedBy",
    ]
    assert task.id == "1" and task.status == "pending"
    assert paths.highwatermark.read_text() == "1"


def test_create_file_writes_what_the_model_would(board: TaskBoard, paths: TeamPaths) -> None:
    def check(created: dict[str, object]) -> None:
        on_disk = json.loads(paths.task(str(created["id"])).read_text())
        assert created == on_disk and list(created) == list(on_disk)
        model = Task.model_validate(created).to_json_dict()  # the model's own key order
        assert model == created and list(model) == list(created)

    check(board.create_file("plain"))
    check(
        board.create_file(
            "full",
            "d",
            active_form="doing",
            metadata={"cmd": "true"},
            blocked_by=["1"],
            owner="bob",
        )
    )
    assert json.loads(paths.task("1").read_text())["blocks"] == ["2"]
    (assignment,) = Mailbox(paths).read_unread("bob")  # an owner is told, as with create
    assert isinstance(assignment.structured(), TaskAssignment)


@pytest.mark.parametrize(
    "fields",
    [{"subject": 5}, {"description": None}, {"active_form": ["x"]}, {"owner": 3}, {"metadata": []}],
)
def test_a_task_of_the_wrong_types_is_refused_and_nothing_written(
    board: TaskBoard, paths: TeamPaths, fields: dict[str, object]
) -> None:
    args: dict[str, object] = {"subject": "s", **fields}
    with pytest.raises(InvalidTaskUpdate, match=r"must be (text|an object)"):
        board.create_file(**args)  # type: ignore[arg-type]
    assert board.task_ids() == [] and not paths.highwatermark.exists()


def test_ids_continue_from_the_highest_file_or_the_highwatermark(cc_root: Path) -> None:
    board = TaskBoard(TeamPaths(cc_root, "demo-team"))  # files 1,2,3,5,6 and .highwatermark 5
    assert board.create("next").id == "7"
    (cc_root / "tasks" / "demo-team" / ".highwatermark").write_text("20")
    assert board.create("after a jump").id == "21"


def test_deleted_ids_are_never_reused_and_references_are_removed(board: TaskBoard) -> None:
    first, second, third = (board.create(s) for s in ("a", "b", "c"))
    board.update(second.id, addBlockedBy=[first.id], addBlocks=[third.id])
    assert board.update(third.id, status="deleted") is None
    assert board.get(third.id) is None
    assert board.require(second.id).blocks == []
    assert board.create("d").id == "4"
    board.delete("4")
    assert board.create("e").id == "5"


def test_list_hides_internal_tasks_and_skips_invalid_files(
    board: TaskBoard, paths: TeamPaths, caplog: pytest.LogCaptureFixture
) -> None:
    board.create("visible")
    board.create("hidden", metadata={"_internal": True})
    paths.task("3").write_text('{"id": "3", "subject": 5}')
    with caplog.at_level(logging.WARNING):
        assert [t.subject for t in board.list()] == ["visible"]
        assert [t.subject for t in board.list(include_internal=True)] == ["visible", "hidden"]
    assert "skipping invalid task file" in caplog.text and "3.json" in caplog.text


def test_unknown_update_fields_go_under_metadata_and_none_removes(board: TaskBoard) -> None:
    task = board.create("t", metadata={"keep": 1, "drop": 2})
    updated = board.update(
        task.id, status="in_progress", command="make test", metadata={"drop": None}
    )
    assert updated.metadata == {"keep": 1, "command": "make test"}
    assert updated.status == "in_progress"


def test_owner_is_written_at_the_end_like_claude_code(board: TaskBoard, paths: TeamPaths) -> None:
    task = board.create("t")
    board.update(task.id, owner="alice")
    assert list(json.loads(paths.task(task.id).read_text()))[-1] == "owner"


def test_bad_updates_are_refused(board: TaskBoard) -> None:
    task = board.create("t")
    with pytest.raises(InvalidTaskUpdate, match="allowed: pending, in_progress, completed"):
        board.update(task.id, status="done")
    with pytest.raises(InvalidTaskUpdate, match="itself"):
        board.update(task.id, addBlocks=[task.id])
    with pytest.raises(TaskNotFound):
        board.update(task.id, addBlockedBy=["99"])
    with pytest.raises(TaskNotFound):
        board.update("99", status="completed")


def test_dependencies_are_recorded_on_both_sides(board: TaskBoard) -> None:
    a, b, c = (board.create(s) for s in "abc")
    board.update(b.id, addBlockedBy=[a.id])
    board.update(b.id, addBlocks=[c.id])
    assert board.require(a.id).blocks == [b.id]
    assert board.require(b.id).blockedBy == [a.id]
    assert board.require(b.id).blocks == [c.id]
    assert board.require(c.id).blockedBy == [b.id]


def test_claim_failures_have_typed_reasons(board: TaskBoard) -> None:
    a, b = board.create("a"), board.create("b")
    board.update(b.id, addBlockedBy=[a.id])
    assert board.claim("42", "alice").reason is ClaimFailure.TASK_NOT_FOUND
    blocked = board.claim(b.id, "alice")
    assert blocked.reason is ClaimFailure.BLOCKED and blocked.blocked_by == [a.id]
    assert board.claim(a.id, "alice").success
    assert board.claim(a.id, "bob").reason is ClaimFailure.ALREADY_CLAIMED
    c = board.create("c")
    busy = board.claim(c.id, "alice")
    assert busy.reason is ClaimFailure.AGENT_BUSY and busy.busy_with == [a.id]
    board.update(a.id, status="completed")
    assert board.claim(a.id, "bob").reason is ClaimFailure.ALREADY_RESOLVED
    assert board.claim(b.id, "alice").success  # the blocker is done and alice is free


def test_claim_sets_owner_and_in_progress(board: TaskBoard) -> None:
    task = board.create("t")
    claimed = board.claim(task.id, "alice").task
    assert claimed.owner == "alice" and claimed.status == "in_progress"
    assert board.claim(task.id, "alice").success  # claiming your own task again is fine


def test_claim_next_takes_the_lowest_open_unblocked_unowned_task(board: TaskBoard) -> None:
    first = board.create("first")
    blocked = board.create("blocked")
    board.update(blocked.id, addBlockedBy=[first.id])
    board.create("internal", metadata={"_internal": True})
    owned = board.create("owned")
    board.update(owned.id, owner="carol")
    free = board.create("free")
    assert board.claim_next("alice").task.id == first.id
    assert board.claim_next("bob").task.id == free.id
    assert board.claim_next("dave") is None  # only blocked, internal and owned tasks left
    board.create("another")
    assert board.claim_next("bob").reason is ClaimFailure.AGENT_BUSY


def test_release_all_returns_unfinished_tasks_to_pending(board: TaskBoard) -> None:
    a, b, c = (board.create(s) for s in "abc")
    board.claim(a.id, "alice")
    board.update(b.id, owner="alice", status="completed")
    board.update(c.id, owner="bob")
    released = board.release_all("alice")
    assert [t.id for t in released] == [a.id]
    assert board.require(a.id).owner is None and board.require(a.id).status == "pending"
    assert board.require(b.id).owner == "alice"
    assert board.require(c.id).owner == "bob"


def test_an_owner_change_sends_task_assignment_to_the_new_owner(board: TaskBoard) -> None:
    task = board.create("Write schema.sql", "users table")
    board.update(task.id, owner="alice", actor="team-lead")
    (entry,) = board.mailbox.read_unread("alice")
    message = entry.structured()
    assert isinstance(message, TaskAssignment)
    assert (message.taskId, message.subject, message.assignedBy) == (
        task.id,
        "Write schema.sql",
        "team-lead",
    )
    board.update(task.id, owner="alice", actor="team-lead")  # no change, no message
    board.update(task.id, owner="bob", actor="bob")  # taking it yourself needs no message
    assert len(board.mailbox.read_unread("alice")) == 1
    assert board.mailbox.read_unread("bob") == []
