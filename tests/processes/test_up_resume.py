"""`swarm up --resume FILE`: a team brought back after every teammate process was killed (kill -9,
and for tmux the server too). Each task runs exactly once: what completed before the crash is
not run again, what was in progress is run again once by the member that held it, no task is
added twice, and live members are left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import BACKENDS, swarm, wait_for

from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.up.apply import TaskPlan
from swarm.up.resume import match_tasks

# the held tasks wait for a gate file, so the crash finds them in progress and nothing written
WAIT = "while [ ! -e gate ]; do sleep 0.05; done; "
TEAM_FILE = f"""\
team: rerun
defaults: {{model: shell}}
members:
  - {{name: ann, prompt: Work the board.}}
  - {{name: ben, prompt: Work the board.}}
tasks:
  - {{key: a, subject: first, command: "echo first >> runs.txt"}}
  - {{key: b, subject: second, command: "echo second >> runs.txt"}}
  - {{subject: held, command: "{WAIT}echo held-1 >> runs.txt", blocked_by: [a, b]}}
  - {{subject: held, command: "{WAIT}echo held-2 >> runs.txt", blocked_by: [a, b]}}
  - {{subject: last, command: "echo last >> runs.txt", blocked_by: [3, 4]}}
"""
LATE = '  - {subject: late, command: "echo late >> runs.txt", blocked_by: [a]}\n'


def kill_everything(paths: TeamPaths, backend: str, socket: str | None) -> list[int]:
    """kill -9 every teammate's process group (what a crash or a reboot does), and for tmux
    the server too; the pids that were killed."""
    pids = [m.model_extra["pid"] for m in TeamFile(paths).load().members[1:]]
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            os.kill(pid, signal.SIGKILL)
    if backend == "tmux":
        subprocess.run(["tmux", "-L", str(socket), "kill-server"], capture_output=True)
    wait_for(lambda: not any(pid_alive(p) for p in pids), "every teammate to be gone")
    return pids


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_restarts_the_dead_and_runs_every_task_exactly_once(
    backend: str, config_root: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    socket = request.getfixturevalue("tmux_socket") if backend == "tmux" else None
    work = tmp_path / "work"
    work.mkdir()
    team_file = work / "team.yaml"
    team_file.write_text(TEAM_FILE)
    up = swarm("up", str(team_file), "--backend", backend, team=None)
    assert up.returncode == 0, up.stderr
    paths = TeamPaths(config_root, "rerun")
    board = TaskBoard(paths)

    def held() -> dict[str, str | None]:
        """The two gated tasks that are in progress (not `first` or `second` while they run:
        either member may take either, and a kill while one runs would lose its line)."""
        return {
            t.id: t.owner for t in board.list() if t.subject == "held" and t.status == "in_progress"
        }

    wait_for(lambda: len(held()) == 2, "both held tasks in progress", timeout=60)
    owners = held()
    assert sorted(owners.values()) == ["ann", "ben"]
    killed = kill_everything(paths, backend, socket)
    assert sorted((work / "runs.txt").read_text().splitlines()) == ["first", "second"]
    assert swarm("status", "--json", team="rerun").returncode == 0

    team_file.write_text(TEAM_FILE + LATE)  # one task more in the file than on the board
    resumed = swarm("up", str(team_file), "--resume", "--backend", backend, team=None)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.splitlines()
    assert "task #1: first (on the board already: completed)" in lines
    assert "task #6: late (after #1) (added)" in lines
    assert lines[-1] == (
        "team 'rerun' is back: 0 running, 2 started again; 1 tasks added, 5 on the board already"
    )
    for name in ("ann", "ben"):
        task = next(i for i, owner in owners.items() if owner == name)
        assert any(
            line.startswith(f"{name}: was dead; restarted fresh")
            and f"takes up #{task} " in line + " "
            for line in lines
        ), lines
    members = TeamFile(paths).load().members[1:]
    assert sorted(m.name for m in members) == ["ann", "ben"]
    assert all(
        m.model_extra["pid"] not in killed and pid_alive(m.model_extra["pid"]) for m in members
    )
    # the held tasks are still their owners': each takes its own up again
    assert {t.id: t.owner for t in board.list() if t.id in owners} == owners

    (work / "gate").touch()
    wait_for(
        lambda: len(board.list()) == 6 and all(t.status == "completed" for t in board.list()),
        "every task completed",
        timeout=60,
    )
    runs = (work / "runs.txt").read_text().splitlines()
    assert sorted(runs) == sorted(["first", "second", "held-1", "held-2", "last", "late"]), runs

    again = swarm("up", str(team_file), "--resume", "--json", team=None)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert [(m["name"], m["outcome"]) for m in report["members"]] == [
        ("ann", "running"),
        ("ben", "running"),
    ]
    assert [t["created"] for t in report["tasks"]] == [False] * 6
    assert len(board.list()) == 6
    down = swarm("down", "--team", "rerun", "--wait", "10", "--json", team=None)
    assert down.returncode == 0, down.stderr
    gone = json.loads(down.stdout)
    assert gone["deleted"] and [(m["name"], m["outcome"]) for m in gone["members"]] == [
        ("ann", "approved"),
        ("ben", "approved"),
    ]


def test_resume_of_a_team_that_does_not_exist_says_how_to_start_it(
    config_root: Path, tmp_path: Path
) -> None:
    team_file = tmp_path / "team.yaml"
    team_file.write_text(TEAM_FILE)
    result = swarm("up", str(team_file), "--resume", team=None)
    assert result.returncode == 1
    assert result.stderr.startswith("swarm: error: team 'rerun' does not exist at ")
    assert f"start it with `swarm up {team_file}` (without --resume)" in result.stderr
    assert not (config_root / "teams" / "rerun").exists()
    both = swarm("up", str(team_file), "--resume", "--dry-run", team=None)
    assert both.returncode == 2 and "without --resume" in both.stderr


def plan(subject: str, command: str | None = None, description: str = "") -> TaskPlan:
    return TaskPlan(subject, description, {"command": command} if command else None, (), None)


def test_tasks_match_by_subject_description_and_command_each_board_task_once(
    paths: TeamPaths, team: TeamFile
) -> None:
    board = TaskBoard(paths)
    one = board.create("build", metadata={"command": "make"})
    two = board.create("build", metadata={"command": "make"})
    board.create("build", metadata={"command": "make all"})
    board.create("build", "with care", metadata={"command": "make"})
    found = match_tasks(
        (plan("build", "make"), plan("build", "make"), plan("build", "make"), plan("test")),
        board.list(),
    )
    assert [t.id if t else None for t in found] == [one.id, two.id, None, None]
