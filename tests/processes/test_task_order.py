"""Dependencies never let a task run early (issue 13, item 5).

Idle workers race every task added with ``--blocked-by`` (it used to be created first and
blocked in a second write); a dependency update killed between its two files leaves the task
blocked; a cycle is refused from the CLI with its path, as team files already are.
"""

from __future__ import annotations

import os
import signal
from multiprocessing import get_context
from pathlib import Path

import pytest
from helpers import Processes, swarm, teammate_argv, wait_for

from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

BLOCKED_TASKS = 30


def test_idle_workers_never_run_a_task_before_its_blocker(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    for name in ("alice", "bob", "carol"):
        procs.start(teammate_argv(name))
    board = TaskBoard(paths)
    gate = "while [ ! -e release ]; do sleep 0.02; done; touch first.done"
    assert swarm("task", "add", "first", "--command", gate).stdout.strip() == "1"
    wait_for(lambda: board.require("1").status == "in_progress", "a worker to take #1")
    check = "if [ -e first.done ]; then echo ok >> order.log; else echo EARLY >> order.log; fi"
    for n in range(BLOCKED_TASKS):
        result = swarm("task", "add", f"after {n}", "--command", check, "--blocked-by", "1")
        assert result.returncode == 0, result.stderr
    (tmp_path / "release").touch()
    wait_for(
        lambda: all(t.status == "completed" for t in board.list()),
        "every task to complete",
        timeout=60,
    )
    lines = (tmp_path / "order.log").read_text().split()
    assert lines.count("EARLY") == 0 and len(lines) == BLOCKED_TASKS, lines


def _kill_between(root: str, add: str) -> None:
    """Child: add a dependency between #1 and #2, and die (SIGKILL) right after its first file."""
    os.environ["CLAUDE_CONFIG_DIR"] = root
    board = TaskBoard(TeamPaths(Path(root), "t"))
    rewrite = board._rewrite
    writes = 0

    def rewrite_then_die(*args: object, **kwargs: object) -> object:
        nonlocal writes
        result = rewrite(*args, **kwargs)  # type: ignore[arg-type]
        writes += 1
        if writes == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    board._rewrite = rewrite_then_die  # type: ignore[method-assign]
    if add == "addBlockedBy":
        board.update("2", addBlockedBy=["1"])
    else:
        board.update("1", addBlocks=["2"])


@pytest.mark.parametrize("add", ["addBlockedBy", "addBlocks"])
def test_a_dependency_update_killed_between_its_files_leaves_the_task_blocked(
    add: str, team: TeamFile, config_root: Path
) -> None:
    board = TaskBoard(team.paths)
    board.create("blocker")
    board.create("waits")
    child = get_context("spawn").Process(target=_kill_between, args=(str(config_root), add))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    assert board.require("2").blockedBy == ["1"]  # the side that decides was written first
    claim = board.claim_next("alice")
    assert claim is not None and claim.task is not None and claim.task.id == "1"
    assert board.claim_next("bob") is None  # #2 waits for #1


def test_a_dependency_cycle_is_refused_from_the_cli_with_its_path(team: TeamFile) -> None:
    for subject in ("a", "b", "c"):
        swarm("task", "add", subject)
    assert swarm("task", "update", "2", "--add-blocked-by", "1").returncode == 0
    assert swarm("task", "update", "3", "--add-blocked-by", "2").returncode == 0
    refused = swarm("task", "update", "1", "--add-blocked-by", "3")
    assert refused.returncode == 1
    assert "dependency cycle: #1 waits for #3 waits for #2 waits for #1" in refused.stderr
    assert "Traceback" not in refused.stderr
    self_loop = swarm("task", "update", "1", "--add-blocked-by", "1")
    assert self_loop.returncode == 1 and "itself" in self_loop.stderr
    board = TaskBoard(team.paths)
    assert board.require("1").blockedBy == [] and board.require("3").blocks == []
    missing = swarm("task", "add", "d", "--blocked-by", "9")
    assert missing.returncode == 1 and "task #9 not found" in missing.stderr
    assert [t.id for t in board.list()] == ["1", "2", "3"]  # nothing half made
