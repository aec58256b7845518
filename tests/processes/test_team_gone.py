"""A teammate whose team disappears under it: a Claude Code lead session (2.1.178 and later)
deletes its team ``session-<8 hex>`` when it exits, and leaves the task list."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

from helpers import DEADLINE_S, wait_for
from messages_api import MessagesAPI, Turn

from protocols.mailbox import Mailbox
from protocols.tasks import TaskBoard
from protocols.team import TeamFile
from protocols.values import TaskStatus

Start = Callable[..., subprocess.Popen[str]]


def test_a_teammate_whose_team_is_deleted_hands_back_its_task_and_stops(
    team: TeamFile, start: Start
) -> None:
    board = TaskBoard(team.paths)
    task = board.create("long job", "held until the lead goes")
    script = [
        Turn.tool("TaskUpdate", {"taskId": task.id, "status": "in_progress", "owner": "alice"}),
        Turn.text("Holding it."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Take #1 and keep it.", sender="team-lead")
        wait_for(lambda: len(api.requests) == 2, "alice's turn")
        held = board.require(task.id)
        assert (held.status, held.owner) == (TaskStatus.IN_PROGRESS, "alice")

        shutil.rmtree(team.paths.team_dir)  # the lead session ended

        output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output
    assert "team 't' is gone" in output and "released ['1']" in output, output
    released = board.require(task.id)  # the task list stays
    assert (released.status, released.owner) == (TaskStatus.PENDING, None)
    assert not team.paths.team_dir.exists(), "the stopping teammate made its team again"
