"""`swarm wait` as a script uses it: a real process blocked until a task is completed, every
task is (or one failed), a message arrives (shown escaped), or the time is up; each with its
exit code. Nothing here sleeps: the test changes the files while the command waits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import DEADLINE_S, swarm

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


def waiting(*args: str) -> subprocess.Popen[str]:
    """`swarm wait ARGS` started, and seen to be waiting (it printed nothing and runs)."""
    return subprocess.Popen(
        [sys.executable, "-m", "swarm", "wait", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SWARM_TEAM": "t"},
    )


def ended(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=DEADLINE_S)
    return proc.returncode, out, err


def test_swarm_wait_for_a_task_all_tasks_a_message_and_a_timeout(team: TeamFile) -> None:
    board = TaskBoard(team.paths)
    one = board.create("build", "make")
    two = board.create("test", "make test")
    task = waiting("--task", one.id, "--json")
    everything = waiting("--all-tasks")
    board.update(one.id, status="completed")
    code, out, _ = ended(task)
    assert code == 0 and json.loads(out)["outcome"] == "met"
    assert json.loads(out)["detail"] == f"#{one.id} completed: build"
    board.update(two.id, status="in_progress", owner="alice")
    board.fail(two.id, "tests red", by="alice")
    code, out, _ = ended(everything)
    assert code == 3 and out.strip() == f"failed: #{two.id} failed: tests red"

    timeout = swarm("wait", "--message", "alice", "--timeout", "0.2")
    assert timeout.returncode == 124 and "timed out" in timeout.stdout


def test_swarm_wait_for_a_message_prints_the_unread_ones_escaped(team: TeamFile) -> None:
    mailbox = Mailbox(team.paths)
    mailbox.send("team-lead", "old news", sender="alice")
    mailbox.mark_read("team-lead", mailbox.read_unread("team-lead"))
    message = waiting("--message", "team-lead")
    mailbox.send("team-lead", "done \x1b[31m$(x)", sender="alice")  # before or after it looks
    code, out, _ = ended(message)
    assert code == 0 and "alice: done \\x1b[31m$(x)" in out and "old news" not in out


def test_swarm_wait_refuses_what_cannot_be_waited_for(team: TeamFile) -> None:
    none = swarm("wait")
    assert none.returncode == 2 and "exactly one of" in none.stderr
    unknown = swarm("wait", "--task", "99", "--timeout", "0")
    assert unknown.returncode == 1 and "no task #99" in unknown.stderr
    starting = swarm("wait", "--idle", "alice", "--timeout", "0.3")  # never started: not idle
    assert starting.returncode == 124 and "timed out" in starting.stdout
    nobody = swarm("wait", "--idle", "alcie", "--timeout", "0")
    assert nobody.returncode == 1 and "no member named 'alcie'" in nobody.stderr
    hostile = swarm("wait", "--message", "$(id)", "--timeout", "0")
    assert hostile.returncode == 1 and "no member named '$(id)'" in hostile.stderr
