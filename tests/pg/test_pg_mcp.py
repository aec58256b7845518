"""`swarm mcp` on a PostgreSQL team: a real MCP client (the `mcp` SDK, tests/mcp_client.py) on
"another host" (a config root of its own, the store given by $SWARM_STORE) works the team's
board, sends and reads its inbox next to a real shell teammate, and leaves when its session
ends. What the team holds is read from the store."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import DEADLINE_S, swarm, wait_for
from mcp_client import McpClient, text_of
from pg_cli import url_of

from protocols.store.selection import locate, open_store

pytestmark = pytest.mark.slow

MCP = [sys.executable, "-m", "swarm", "mcp", "--team", "t", "--name", "cc"]


def test_an_mcp_member_on_another_host_sends_works_the_board_and_reads_its_inbox(
    conninfo: str, config_root: Path, tmp_path: Path
) -> None:
    url = url_of(conninfo)
    made = swarm("team", "create", "t", "--store", url, "--cwd", str(tmp_path), team=None)
    assert made.returncode == 0, made.stderr
    store = open_store(locate("t", config_root, url))
    board, mailbox = store.task_board(), store.mailbox()
    other = tmp_path / "other-host"
    other.mkdir()
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(other), "SWARM_STORE": url}
    env.pop("SWARM_TEAM", None)
    try:
        with McpClient.stdio(MCP, env=env) as cc:
            joined = store.team_file().load().member("cc")
            assert joined is not None and joined.backendType == "mcp"
            assert not (other / "teams" / "t" / "config.json").exists()  # nothing in files
            # the board: cc takes #1; the shell worker's #2 waits for it, then runs
            created = cc.text("TaskCreate", {"subject": "prepare", "description": "ready"})
            assert created == "Task #1 created successfully: prepare"
            assert "Claimed task #1" in cc.text("TaskClaim", {"taskId": "1"})
            spawned = swarm(  # after cc's claim: else the worker would take #1
                "spawn", "w1", "--prompt", "Work the board.", "--backend", "subprocess",
                "--cwd", str(tmp_path),
            )  # fmt: skip
            assert spawned.returncode == 0, spawned.stderr
            added = swarm(
                "task", "add", "build", "--command", "echo built > built.txt", "--blocked-by", "1"
            )
            assert added.stdout.strip() == "2", added.stderr
            assert "#2 [pending] build [blocked by #1]" in cc.text("TaskList")
            # a ReadInbox waiting in the server returns when another process sends
            waiting = cc.start("ReadInbox", {"wait_seconds": DEADLINE_S})
            sent = swarm("send", "cc", "the schema is ready $(x) 'é'", "--summary", "schema")
            assert sent.returncode == 0, sent.stderr
            got = text_of(waiting.result(DEADLINE_S))
            assert "the schema is ready $(x) 'é'" in got and 'teammate_id="team-lead"' in got
            assert cc.text("ReadInbox") == "No new messages."  # marked read in the store
            # cc's message to the shell worker, acknowledged back to cc
            said = cc.text("SendMessage", {"to": "w1", "message": "hello w1", "summary": "hi"})
            assert json.loads(said)["success"] is True
            assert mailbox.peek_all("w1")[-1].from_ == "cc"
            ack = cc.text("ReadInbox", {"wait_seconds": DEADLINE_S})
            assert 'teammate_id="w1"' in ack
            done = cc.text("TaskUpdate", {"taskId": "1", "status": "completed"})
            assert done.startswith("Updated task #1 status")
            wait_for(lambda: board.require("2").status == "completed", "w1 to do task #2")
            assert board.require("2").owner == "w1" and (tmp_path / "built.txt").exists()
            team = json.loads(cc.text("TeamStatus"))
            assert {m["name"] for m in team["members"]} >= {"cc", "w1"}
        # the session is over: cc is marked gone in the store
        wait_for(
            lambda: store.team_file().load().member("cc").isActive is False,  # type: ignore[union-attr]
            "cc gone from the team in the store",
        )
    finally:
        swarm("shutdown", "w1", "--force", "--wait", "10")
