"""A busy team for the `swarm watch` tests: several working members with long activities in
several scripts and with control characters, a long board (most of it completed), messages to
the lead and permission requests waiting. Files only: every member's process is the test's own
(alive), so nothing runs and nothing changes unless the test changes it."""

from __future__ import annotations

import os
from pathlib import Path

from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.member.status import AgentStatus, SubAgentStatus, write_status
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

NAMES = ("alice", "bob", "carol-the-reviewer-with-a-long-name", "dmitri", "eve", "frank")
ACTIVITY = "Bash: echo \x1b[31mrød \u202eevil\x07 漢字 ünïcødé ✓ && pytest -q tests/processes"
SUBJECT = "refactor the módulo 漢字 so that the whole thing fits \x1b[2J the screen"
COMPLETED = 37
IN_PROGRESS = 4
TASKS = 60
USAGE = {
    "input_tokens": 12_000,
    "output_tokens": 9_000,
    "cache_read_input_tokens": 400_000,
    "cache_creation_input_tokens": 30_000,
}


def build(root: Path, requests: tuple[str, ...] = ("alice",)) -> TeamPaths:
    """Team ``t`` under `root`, with a permission request from each of `requests`."""
    paths = TeamPaths(root, "t")
    team = TeamFile(paths)
    team.create(description="a busy team", cwd=root)
    for name in NAMES:
        team.add_member(name, cwd=root, model="sonnet", pid=os.getpid(), isActive=True)
        subagents = []
        if name == "bob":
            subagents = [
                SubAgentStatus(
                    agentId="a1", agentType="Explore", description="find the tests", activity="Grep"
                )
            ]
        write_status(
            paths,
            AgentStatus(
                name=name,
                model="claude-sonnet-5-5",
                state="working",
                activity=ACTIVITY,
                requests=40,
                turns=40,
                toolCalls=60,
                usage=USAGE,
                subagents=subagents,
            ),
        )
    board = TaskBoard(paths)
    for i in range(1, TASKS + 1):
        board.create(f"task {i}: {SUBJECT}", "the description")
    for i in range(1, COMPLETED + 1):
        board.update(str(i), status="completed", owner=NAMES[i % len(NAMES)])
    for offset in range(IN_PROGRESS):
        board.update(str(COMPLETED + 1 + offset), status="in_progress", owner=NAMES[offset])
    mailbox = Mailbox(paths)
    for i, name in enumerate(NAMES[:3]):
        mailbox.send("team-lead", f"progress {i}: done with part {i} ☃ \x1b[2J", sender=name)
    for name in requests:
        request_permission(
            mailbox,
            worker=name,
            tool_name="Bash",
            tool_use_id=f"toolu-{name}",
            description="clean the build",
            input={"command": f"rm -rf build-{name} && echo $(whoami) 'done'"},
        )
    return paths
