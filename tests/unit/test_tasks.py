"""The task board on files, what only it does: Claude Code's file layout, ids from the highest
file or the high-water mark, invalid files skipped, the owner written last (the rules every
store keeps are in tests/contract)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from protocols.errors import InvalidTaskUpdate
from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import TaskAssignment
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
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
