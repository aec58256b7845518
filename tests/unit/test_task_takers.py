"""Who may take a task (`protocols.tasks.task.may_take`) and a task's state in one word
(`protocols.tasks.task.state_of`): a task with a command is for shell workers, a task ``for`` a
kind, a name or an agent type is taken by those alone, a member that failed a task does not take
it again by itself (the board's claims on every store: tests/contract), and the file board's
claim under the lock checks the file again."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.tasks.board import TaskBoard
from protocols.tasks.task import (
    ClaimFailure,
    TaskState,
    failed_by,
    for_text,
    may_take,
    state_of,
    takers,
)
from protocols.team.file import TeamFile
from teammate.board_watch import labels_of
from teammate.brains.shell import task_directory

SHELL = labels_of("shell", None)
SCRIPTED = labels_of("scripted", "reviewer")
CLAUDE = labels_of("sonnet", None)


def test_labels_and_takers() -> None:
    assert {"shell"} == SHELL and {"claude"} == CLAUDE
    assert {"claude", "scripted", "reviewer"} == SCRIPTED
    assert takers(None) is None and takers({"command": ""}) is None
    assert takers({"command": "make"}) == ("shell",)
    assert takers({"command": "make", "for": "claude"}) == ("claude",)
    assert takers({"for": ["ann", 3, "", "reviewer"]}) == ("ann", "reviewer")
    assert for_text({"command": "x"}) == "for shell" and for_text({}) == ""


def test_may_take_by_kind_name_agent_type_and_past_failure() -> None:
    assert may_take({"command": "make"}, "ann", SHELL)
    assert not may_take({"command": "make"}, "sam", SCRIPTED)
    assert may_take({}, "ann", SHELL) and may_take({}, "sam", SCRIPTED)
    assert may_take({"for": ["claude"]}, "sam", SCRIPTED)
    assert not may_take({"for": ["claude"]}, "ann", SHELL)
    assert may_take({"for": "ann", "command": "x"}, "ann", SHELL)
    assert not may_take({"for": "ann"}, "bea", SHELL)
    assert may_take({"for": ["reviewer"]}, "sam", SCRIPTED)
    assert not may_take({"failedBy": ["ann"]}, "ann", SHELL)
    assert may_take({"failedBy": ["ann"]}, "bea", SHELL)
    assert failed_by({"failedBy": ["ann"]}, "bea") == ["ann", "bea"]
    assert failed_by({"failedBy": ["ann"]}, "ann") == ["ann"]
    assert failed_by({"failedBy": "junk"}, "ann") == ["ann"]


def test_one_word_for_each_state() -> None:
    assert state_of("pending", False) == TaskState.PENDING
    assert state_of("pending", False, waiting=True) == TaskState.BLOCKED
    assert state_of("in_progress", False) == TaskState.IN_PROGRESS
    assert state_of("in_progress", True) == TaskState.FAILED
    assert state_of("pending", True) == TaskState.FAILED  # failed, released by a shutdown
    assert state_of("completed", True) == TaskState.COMPLETED


@pytest.fixture
def board(team: TeamFile) -> TaskBoard:
    return TaskBoard(team.paths)


def test_the_claim_under_the_lock_checks_the_file_again(board: TaskBoard) -> None:
    """The index may not know yet that a task became another's: the file decides."""
    task = board.create("build", metadata={"command": "make"})
    board.update(task.id, metadata={"for": ["carol"]})
    with board._list_lock():
        index = board._refresh()
        with index.lock:
            result = board._claim_locked(task.id, "alice", True, True, index, SHELL)
    assert result.reason == ClaimFailure.NOT_FOR_AGENT and not result.success


def test_a_task_runs_where_it_was_added(tmp_path: Path) -> None:
    from protocols.tasks.model import Task

    def task(cwd: object) -> Task:
        return Task.model_validate(
            {
                "id": "1",
                "subject": "s",
                "description": "",
                "status": "pending",
                "blocks": [],
                "blockedBy": [],
                "metadata": {"cwd": cwd},
            }
        )

    home, there = tmp_path / "home", tmp_path / "repo" / "sub"
    home.mkdir()
    there.mkdir(parents=True)
    assert task_directory(task(str(there)), home) == there
    assert task_directory(task(None), home) == home
    assert "does not exist" in str(task_directory(task(str(tmp_path / "gone")), home))
    assert "not an absolute path" in str(task_directory(task("rel"), home))
    tree = tmp_path / "repo" / ".claude" / "worktrees" / "ann"
    (tree / "sub").mkdir(parents=True)
    assert task_directory(task(str(there)), tree) == tree / "sub"  # the same place, in its tree
    assert task_directory(task(str(home)), tree) == tree  # not in the repo: its own tree
