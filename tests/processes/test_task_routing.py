"""Tasks go to those who can do them, with real teammates and the real CLI: a shell command to
a shell worker and never to a scripted Claude teammate, a task `--for claude` to the latter; a
task retried after a failure to another worker, not straight back to the one that failed it; a
command run where `swarm task add` was typed (or `--cwd`); a failure shown with its output's
last lines, one word for its state everywhere; a killed worker restarted keeps its task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers import spawn_worker, swarm, wait_for

from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


def add(*args: str) -> str:
    added = swarm("task", "add", *args)
    assert added.returncode == 0, added.stderr
    return added.stdout.strip()


def test_tasks_go_to_who_can_do_them(config_root: Path, tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    board = TaskBoard(TeamPaths(config_root, "t"))
    script = tmp_path / "sam.yaml"
    script.write_text("- text: I looked at it.\n- text: I looked again.\n")
    try:
        spawn_worker("sam", work, "--script", str(script))  # a scripted Claude teammate
        # a shell command: for shell workers; sam, idle, does not take it
        shell_task = add("write it", "--command", "pwd > where.txt", "--cwd", str(elsewhere))
        thinking = add("think it over", "--for", "claude")
        wait_for(lambda: board.require(thinking).owner == "sam", "sam to take the claude task")
        assert board.require(shell_task).owner is None
        shown = swarm("task", "show", shell_task)
        assert "Who may take it: shell" in shown.stdout
        assert f"Runs in: {elsewhere}" in shown.stdout
        spawn_worker("ann", work)
        wait_for(lambda: board.require(shell_task).status == "completed", "ann to run it")
        assert board.require(shell_task).owner == "ann"
        # it ran where it was added, not in ann's directory
        assert (elsewhere / "where.txt").read_text().strip() == str(elsewhere)
        assert not (work / "where.txt").exists()

        # a failure: shown with its last lines, one word for its state
        flaky = add(
            "check it", "--command", "echo first; echo 'no ok file'; test -e ok", "--cwd", str(work)
        )
        wait_for(lambda: board.require(flaky).failed, "ann to fail it")
        shown = swarm("task", "show", flaky)
        assert "Status: failed: #" in shown.stdout and "exit code 1" in shown.stdout
        assert "Output (last lines):\n  first\n  no ok file" in shown.stdout
        listed = json.loads(swarm("task", "list", "--json").stdout)
        assert {t["id"]: t["state"] for t in listed}[flaky] == "failed"
        assert f"#{flaky} [failed] check it" in swarm("task", "list").stdout
        # retried: ann failed it and does not take it again by itself; bea does
        (work / "ok").touch()
        retried = swarm("task", "retry", flaky)
        assert retried.returncode == 0, retried.stderr
        assert "ann failed it before and will not take it again by itself" in retried.stdout
        spawn_worker("bea", work)
        wait_for(lambda: board.require(flaky).status == "completed", "bea to do it")
        assert board.require(flaky).owner == "bea"

        # a killed worker restarted keeps its task: nobody else takes it meanwhile
        held = add(
            "wait for go", "--command", "while [ ! -e go ]; do sleep 0.05; done", "--cwd", str(work)
        )
        wait_for(lambda: board.require(held).status == "in_progress", "someone to take it")
        holder = board.require(held).owner
        assert holder in ("ann", "bea")
        pid = TeamFile(TeamPaths(config_root, "t")).load().require(holder).model_extra["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_for(
            lambda: any(
                m["name"] == holder and m["state"] == "dead"
                for m in json.loads(swarm("status", "--json").stdout)["members"]
            ),
            "the holder to be seen dead",
        )
        restarted = swarm("restart", holder)
        assert restarted.returncode == 0, restarted.stderr
        assert board.require(held).owner == holder
        (work / "go").touch()
        wait_for(lambda: board.require(held).status == "completed", "the holder to finish it")
        assert board.require(held).owner == holder
    finally:
        swarm("down", "t", "--wait", "5")


def test_task_add_records_the_directory_it_was_typed_in(config_root: Path, tmp_path: Path) -> None:
    assert swarm("team", "create", "t", "--cwd", str(tmp_path), team=None).returncode == 0
    here = tmp_path / "here"
    here.mkdir()
    added = subprocess.run(
        [
            sys.executable,
            "-m",
            "swarm",
            "task",
            "add",
            "x",
            "--command",
            "true",
            "--json",
            "--for",
            "alcie",
        ],
        cwd=here,
        capture_output=True,
        text=True,
        env={**os.environ, "SWARM_TEAM": "t"},
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["metadata"] == {
        "command": "true",
        "cwd": str(here),
        "for": ["alcie"],
    }
    assert "no member or agent type 'alcie'" in added.stderr  # a warning: it may join later
    bad = swarm("task", "add", "y", "--for", "a b")
    assert bad.returncode == 1 and "--for 'a b'" in bad.stderr
    missing = swarm("task", "add", "y", "--cwd", str(tmp_path / "nope"))
    assert missing.returncode != 0 and "nope" in missing.stderr
