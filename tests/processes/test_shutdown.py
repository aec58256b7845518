"""`swarm shutdown`: the protocol from the lead's side with a real teammate process, a teammate
that does not answer, and --force."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from helpers import swarm, teammate_argv, wait_for

from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


def test_shutdown_of_a_live_teammate(team: TeamFile, tmp_path: Path) -> None:
    board = TaskBoard(team.paths)
    board.create("held", metadata={"command": "sleep 0"})
    proc = subprocess.Popen(teammate_argv("alice"), cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        wait_for(
            lambda: team.load().member("alice").model_extra.get("pid") == proc.pid, "alice to start"
        )
        result = swarm("shutdown", "alice", "--reason", "done for today")
        assert result.returncode == 0, result.stderr
        assert "approved; stopped and removed" in result.stdout
        assert proc.wait(10) == 0
        assert "alice" not in team.load().member_names()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_teammate_that_does_not_answer_is_stopped_only_with_force(
    team: TeamFile, tmp_path: Path
) -> None:
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        team.update_member("bob", pid=silent.pid)
        board = TaskBoard(team.paths)
        board.create("held")
        board.claim("1", "bob")
        started = time.monotonic()
        result = swarm("shutdown", "bob", "--wait", "0.5")
        assert (
            result.returncode == 1 and "no-answer" in result.stderr and "--force" in result.stderr
        )
        assert time.monotonic() - started < 30
        assert silent.poll() is None and "bob" in team.load().member_names()
        forced = swarm("shutdown", "bob", "--wait", "0.2", "--force")
        assert forced.returncode == 0 and "#1" in forced.stdout
        assert silent.wait(10) is not None
        assert "bob" not in team.load().member_names()
        assert board.require("1").owner is None
    finally:
        if silent.poll() is None:
            silent.kill()


def test_shutdown_of_an_unknown_member_is_an_error(team: TeamFile) -> None:
    result = swarm("shutdown", "zed")
    assert result.returncode == 1 and "no member named 'zed'" in result.stderr
    assert "asked" not in result.stderr  # nobody was asked anything
    typo = swarm("shutdown", "alcie")
    assert "did you mean 'alice'?" in typo.stderr and "asked" not in typo.stderr
    lead = swarm("shutdown", "team-lead")
    assert lead.returncode == 2 and "is the lead, not a teammate" in lead.stderr
