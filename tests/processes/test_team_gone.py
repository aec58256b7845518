"""A teammate whose team disappears under it: a Claude Code lead session (2.1.178 and later)
deletes its team ``session-<8 hex>`` when it exits, and leaves the task list."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

from helpers import DEADLINE_S, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
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
        lead = Mailbox(team.paths)
        lead.send("alice", "Take #1 and keep it.", sender="team-lead")
        wait_for(
            lambda: any('"idle_notification"' in e.text for e in lead.read_all("team-lead")),
            "alice idle, holding the task",
        )
        held = board.require(task.id)
        assert (held.status, held.owner) == (TaskStatus.IN_PROGRESS, "alice")

        # the lead session ended: its team goes (again, if the teammate's last writes of its
        # turn land while it is being removed: rm -rf meets that too)
        gone = team.paths.team_dir
        wait_for(lambda: shutil.rmtree(gone, ignore_errors=True) or not gone.exists(), "rm -rf")

        output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output
    assert "team 't' is gone" in output, output
    # its turn on the task ran out of script, so it failed the task: it is handed back unowned
    # but stays failed (it is not back on the board until someone retries it)
    assert "#1 not completed" in output and "released no tasks" in output, output
    released = board.require(task.id)  # the task list stays
    assert (released.status, released.owner, released.failed) == (TaskStatus.PENDING, None, True)
    left = sorted(str(p.relative_to(gone)) for p in gone.rglob("*")) if gone.exists() else None
    assert left is None, f"the stopping teammate made its team again: {left}"
