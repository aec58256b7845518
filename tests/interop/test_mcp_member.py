"""Real Claude Code as an MCP client of `swarm mcp` (docs/mcp-server.md): a member of a swarm
team through MCP tools alone, next to a swarm shell teammate.

Claude Code runs in print mode (``claude -p``), offline, its model the test suite's Messages API
server playing a script, with ``--mcp-config`` naming one server, ``swarm``, that runs
``python -m swarm mcp --team t --name cc`` over stdio. The script calls
``mcp__swarm__TaskList``, claims and completes with ``mcp__swarm__TaskUpdate`` the task a shell
teammate's task waits for, reads the lead's question with ``mcp__swarm__ReadInbox`` and answers
it with ``mcp__swarm__SendMessage``. What counts is on disk: the task completed by cc, the
dependent task then done by the shell teammate, the answer in the lead's inbox, and cc gone
from the team once Claude Code exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import claude_code
import pytest
import test_interop
from claude_code import MODEL
from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn
from test_interop import START_S

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = pytest.mark.interop

claude = test_interop.claude  # the fixtures, shared: Claude Code 2.1.88, 2.1.330 and 2.1.332
work = test_interop.work
team = test_interop.team

QUESTION = "Is the schema ready? Answer me when task #1 is done."
ANSWER = "Task #1 is done: the schema is ready, and the build can start."
STEPS = [
    ("mcp__swarm__TaskList", {}),
    ("mcp__swarm__TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "cc"}),
    ("mcp__swarm__TaskUpdate", {"taskId": "1", "status": "completed"}),
    ("mcp__swarm__ReadInbox", {"wait_seconds": 30}),
    ("mcp__swarm__SendMessage", {"to": "team-lead", "message": ANSWER, "summary": "task 1 done"}),
]


def tool_uses(body: dict[str, Any]) -> int:
    """How many tool calls the conversation so far has made (the script's step)."""
    return sum(
        1
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use"
    )


def play(body: dict[str, Any]) -> Turn:
    if not body.get("tools"):  # Claude Code's side calls (a session title)
        return Turn.text('{"title": "swarm member"}')
    step = tool_uses(body)
    if step < len(STEPS):
        name, arguments = STEPS[step]
        return Turn.tool(name, arguments)
    return Turn.text("Done: task #1 completed and the lead answered.")


def results(api: MessagesAPI) -> list[str]:
    """The text of every tool result Claude Code sent its model, in order (each once)."""
    last = max(api.requests, key=lambda body: len(body.get("messages", [])))
    texts = []
    for message in last["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(part.get("text", "") for part in inner)
                texts.append(str(inner))
    return texts


def test_claude_code_is_a_team_member_through_swarm_mcp(
    claude: Path, team: TeamPaths, work: Path
) -> None:
    # cc has been a member over MCP before (its session ended): work waits for it, assigned
    TeamFile(team).add_member("cc", agent_type=None, cwd=work, backend_type="mcp")
    board = TaskBoard(team)
    assert swarm("task", "add", "prepare the schema").stdout.strip() == "1"
    board.update("1", owner="cc")  # the lead's assignment: the shell worker leaves it alone
    built = swarm(
        "task", "add", "build", "--command", "echo built > built.txt", "--blocked-by", "1"
    )
    assert built.stdout.strip() == "2", built.stderr
    assert swarm("send", "cc", QUESTION, "--summary", "schema?").returncode == 0
    spawned = swarm(
        "spawn", "w1", "-p", "Work the board.", "--backend", "subprocess", "--cwd", str(work)
    )
    assert spawned.returncode == 0, spawned.stderr

    server = [sys.executable, "-m", "swarm", "mcp", "--team", "t", "--name", "cc"]
    # as in docs/mcp-server.md: no env of its own, it inherits Claude Code's CLAUDE_CONFIG_DIR
    config = {"mcpServers": {"swarm": {"command": server[0], "args": server[1:]}}}
    config_file = work / "swarm-mcp.json"
    config_file.write_text(json.dumps(config))
    with MessagesAPI(play) as api:
        env = {**os.environ, **claude_code.OFFLINE_ENV, "ANTHROPIC_BASE_URL": api.url}
        run = subprocess.run(
            [
                str(claude), "-p", "You are cc in a swarm team: work the board.",
                "--mcp-config", str(config_file), "--strict-mcp-config",
                "--allowedTools", "mcp__swarm__*",
                "--permission-mode", "acceptEdits",
                "--model", MODEL,
            ],
            cwd=work, env=env, capture_output=True, text=True, timeout=2 * START_S,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Done: task #1 completed" in run.stdout, run.stdout + run.stderr
        said = results(api)

    assert len(said) == len(STEPS), said  # every call reached swarm and was answered
    assert said[0].strip().splitlines()[0] == "#1 [pending] prepare the schema (cc)"
    assert "#2 [pending] build [blocked by #1]" in said[0]
    assert said[2].startswith("Updated task #1 status")
    assert QUESTION in said[3] and 'teammate_id="team-lead"' in said[3]
    assert (
        json.loads(said[4].strip().splitlines()[0])["success"] is True
    )  # 2.1.330 appends a reminder

    # on disk: cc completed #1, the shell teammate then did #2, the lead has the answer
    first = board.require("1")
    assert (first.status, first.owner) == ("completed", "cc")
    wait_for(lambda: board.require("2").status == "completed", "w1 to build", START_S)
    assert board.require("2").owner == "w1" and (work / "built.txt").exists()
    answers = [e for e in Mailbox(team).read_all("team-lead") if e.from_ == "cc"]
    assert [(e.text, e.summary) for e in answers] == [(ANSWER, "task 1 done")]

    # Claude Code has exited: its session with swarm mcp ended, and cc with it (2.1.330 stops
    # the server with SIGINT, then SIGTERM and SIGKILL within 500 ms, stdin still open)
    def left() -> Any:
        member = TeamFile(team).load().member("cc")
        return member if "pid" not in (member.model_extra or {}) else None

    gone = wait_for(left, "cc to leave the team")
    assert gone.isActive is False and gone.backendType == "mcp"
    report = json.loads(swarm("status", "--json").stdout)
    assert {m["name"]: m["state"] for m in report["members"]}["cc"] == "dead"
    assert "stopped" in swarm("shutdown", "w1").stdout
