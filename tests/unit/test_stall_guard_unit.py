"""`teammate.agent.stall_guard`: which turns count as progress, and when a stall is asked about."""

from __future__ import annotations

from pathlib import Path

from helpers import git

from teammate.agent.stall_guard import DEFAULT_TURNS, StallGuard, turns_from


def test_the_number_of_turns_comes_from_the_environment() -> None:
    assert turns_from({}) == DEFAULT_TURNS
    assert turns_from({"SWARM_STALL_TURNS": "0"}) == 0
    assert turns_from({"SWARM_STALL_TURNS": "many"}) == DEFAULT_TURNS  # a bad value: the default


def test_reading_turns_stall_and_changes_messages_and_task_moves_do_not(tmp_path: Path) -> None:
    guard = StallGuard(3, tmp_path)
    guard.started()
    assert not guard.turn([("Read", False), ("Grep", False)], heard=False)
    assert not guard.turn([("Write", True)], heard=False)  # a failed write changed nothing
    assert guard.turn([("Glob", False)], heard=False)  # the third turn without progress
    for progress in ([("Edit", False)], [("SendMessage", False)], [("TaskUpdate", False)]):
        guard.forgive()
        assert not guard.turn([("Read", False)], heard=False)
        assert not guard.turn(progress, heard=False)
        assert guard.quiet == 0
    assert not guard.turn([("Read", False)], heard=True)  # a message came: not lost
    assert guard.quiet == 0


def test_outside_git_a_command_that_ran_counts_and_one_that_failed_does_not(
    tmp_path: Path,
) -> None:
    guard = StallGuard(2, tmp_path)
    guard.started()
    assert not guard.turn([("Bash", False)], heard=False)
    assert guard.quiet == 0
    assert not guard.turn([("Bash", True)], heard=False)
    assert guard.turn([("Bash", True)], heard=False)


def test_in_git_a_command_counts_only_when_the_tree_changed(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    guard = StallGuard(2, tmp_path)
    guard.started()
    assert not guard.turn([("Bash", False)], heard=False)  # nothing changed: quiet 1
    assert guard.quiet == 1
    (tmp_path / "new.txt").write_text("made by a command\n")
    assert not guard.turn([("Bash", False)], heard=False)
    assert guard.quiet == 0
    assert not guard.turn([("Bash", False)], heard=False)
    assert guard.turn([("Bash", False)], heard=False)


def test_zero_turns_is_off(tmp_path: Path) -> None:
    guard = StallGuard(0, tmp_path)
    guard.started()
    assert not any(guard.turn([("Read", False)], heard=False) for _ in range(100))
