"""Claude Code 2.1.332's task changes on swarm's side (docs/interop.md).

TaskGet leaves the completed blockers out of ``blockedBy`` (TaskList always did, in 2.1.88
too); a blocker whose file is gone still shows, and the task file keeps them all. A delete takes
the task's own lock and the list's, at Claude Code's paths (``<N>.json.lock``, ``.lock.lock``):
while Claude Code holds either, swarm's delete waits and the task stays. The high-water mark
is raised before the file goes, as 2.1.332 does, so a delete cut short never frees the id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from protocols.errors import LockTimeout
from protocols.fs import safefs
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from teammate.tools.base import ToolContext
from teammate.tools.team import task_get, task_list


@dataclass
class Link:
    """The part of a `TeamLink` the task tools use."""

    name: str
    paths: TeamPaths
    board: TaskBoard
    mailbox: Mailbox
    color: str | None = None


@pytest.fixture
def ctx(team: TeamFile, paths: TeamPaths, tmp_path: Path) -> ToolContext:
    board = TaskBoard(paths)
    link = Link("alice", paths, board, Mailbox(paths))
    return ToolContext(cwd=tmp_path, team=link)  # type: ignore[arg-type]


def board_of(ctx: ToolContext) -> TaskBoard:
    board = ctx.link().board
    assert isinstance(board, TaskBoard)
    return board


def test_task_get_and_task_list_leave_completed_blockers_out(ctx: ToolContext) -> None:
    board = board_of(ctx)
    board.create("write the schema")
    board.create("review the schema")
    board.create("test the schema", blocked_by=["1", "2"])
    board.update("1", status="completed")

    got = task_get.run(ctx, {"taskId": "3"})
    assert got == "Task #3: test the schema\nStatus: pending\nDescription: \nBlocked by: #2"
    listed = task_list.run(ctx, {})
    assert "#3 [pending] test the schema [blocked by #2]" in str(listed).splitlines()
    assert json.loads(board.paths.task(3).read_text())["blockedBy"] == ["1", "2"]  # kept

    board.update("2", status="completed")
    assert "Blocked by" not in str(task_get.run(ctx, {"taskId": "3"}))
    assert "#3 [pending] test the schema" in str(task_list.run(ctx, {})).splitlines()
    assert "Blocks: #3" in str(task_get.run(ctx, {"taskId": "1"}))  # blocks stay as they are


def test_a_blocker_whose_file_is_gone_still_shows(ctx: ToolContext) -> None:
    board = board_of(ctx)
    board.create("first")
    board.create("second", blocked_by=["1"])
    safefs.unlink(board.paths.task(1))  # gone without a delete (references not removed)
    assert str(task_get.run(ctx, {"taskId": "2"})).endswith("Blocked by: #1")
    assert task_get.run(ctx, {"taskId": "9"}) == "Task not found"


@pytest.mark.parametrize("lock", ["1.json.lock", ".lock.lock"])
def test_a_delete_waits_while_claude_code_holds_the_tasks_or_the_lists_lock(
    team: TeamFile, paths: TeamPaths, lock: str
) -> None:
    board = TaskBoard(paths, lock_timeout=0.3)
    board.create("to delete")
    held = paths.tasks_dir / lock
    held.mkdir()  # Claude Code's proper-lockfile lock, fresh: held
    with pytest.raises(LockTimeout):
        board.delete("1")
    assert paths.task(1).exists()
    held.rmdir()  # Claude Code lets go
    assert board.delete("1") is True
    assert not paths.task(1).exists() and board.delete("1") is False
    assert not (paths.tasks_dir / "1.json.lock").exists()  # released
    assert board.create("next").id == "2"  # the id stays used


def test_the_high_water_mark_is_raised_before_the_file_goes(
    team: TeamFile, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = TaskBoard(paths)
    board.create("one")
    board.create("other", blocked_by=["1"])
    # a task Claude Code made: its create writes no high-water mark
    made = {"id": "7", "subject": "cc", "description": "", "status": "pending"}
    paths.task(7).write_text(json.dumps({**made, "blocks": [], "blockedBy": []}, indent=2))

    def killed(path: object, missing_ok: bool = False) -> None:
        raise OSError("killed before the file went")

    monkeypatch.setattr(safefs, "unlink", killed)
    with pytest.raises(OSError, match="killed"):
        board.delete("7")
    assert paths.highwatermark.read_text() == "7" and paths.task(7).exists()
    monkeypatch.undo()
    assert board.delete("1") is True
    assert board.get("2") is not None and board.get("2").blockedBy == []  # type: ignore[union-attr]
    assert board.create("after").id == "8"
