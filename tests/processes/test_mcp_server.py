"""`swarm mcp` with a real MCP client (the `mcp` SDK, tests/mcp_client.py), over stdio and over
streamable HTTP on 127.0.0.1, next to real `swarm` shell teammates in subprocesses.

The member an MCP session is: joined with backendType "mcp" and the server's process, idle in
`swarm status` and TeamStatus while the session is open, gone (dead, its held tasks back on the
board) once it closes; its messages (SendMessage, a ReadInbox that blocks until another process
writes); its tasks (TaskCreate, TaskClaim, TaskUpdate completing a task a shell teammate's task
waits for). Bad input is a tool error that changes no file. The lead's tools. HTTP: one member
per session, join, DELETE and the server stopping, the bearer token.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, swarm, wait_for
from mcp_client import McpClient, text_of

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import PermissionRequest, PermissionResponse
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

MCP = [sys.executable, "-m", "swarm", "mcp", "--team", "t"]


@pytest.fixture
def paths(config_root: Path, tmp_path: Path) -> TeamPaths:
    created = swarm("team", "create", "t", "--cwd", str(tmp_path), team=None)
    assert created.returncode == 0, created.stderr
    return TeamPaths(config_root, "t")


def spawn_shell(name: str, cwd: Path) -> None:
    result = swarm(
        "spawn", name, "--prompt", "Work the board.", "--backend", "subprocess", "--cwd", str(cwd)
    )
    assert result.returncode == 0, result.stderr


def member(paths: TeamPaths, name: str) -> Any:
    return TeamFile(paths).load().member(name)


def pid_of(paths: TeamPaths, name: str) -> int | None:
    found = member(paths, name)
    return found.model_extra.get("pid") if found is not None else None


def status(name: str) -> dict[str, Any] | None:
    report = json.loads(swarm("status", "--json").stdout)
    return next((m for m in report["members"] if m["name"] == name), None)


def state_of(name: str) -> str | None:
    found = status(name)
    return found["state"] if found else None


def files(root: Path) -> dict[str, str]:
    """Every file under the config root and a digest of its bytes (what a change would alter)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".swarm-locks" not in p.parts
    }


def test_a_stdio_member_works_with_a_shell_teammate_and_leaves_when_its_session_ends(
    paths: TeamPaths, tmp_path: Path, tmux_socket: str
) -> None:
    board = TaskBoard(paths)
    with McpClient.stdio([*MCP, "--name", "cc"]) as cc:
        joined = member(paths, "cc")
        assert joined.backendType == "mcp" and joined.model_extra["pid"] != 0
        assert "'cc'" in (cc.initialized.instructions or "")
        assert {"SendMessage", "TaskCreate", "TaskList", "TaskGet", "TaskUpdate", "ReadInbox",
                "TaskClaim", "TeamStatus", "ListRequests", "AnswerRequest", "SpawnTeammate",
                "ShutdownTeammate"} == set(cc.tools())  # fmt: skip
        assert state_of("cc") == "idle" and status("cc")["backend"] == "mcp"
        # the board: cc takes #1, holds #2, and the shell worker's #3 waits for #1
        assert cc.text("TaskCreate", {"subject": "prepare", "description": "make ready"}) == (
            "Task #1 created successfully: prepare"
        )
        assert "Claimed task #1" in cc.text("TaskClaim", {"taskId": "1"})
        cc.text("TaskCreate", {"subject": "hold", "description": "kept", "activeForm": "Holding"})
        cc.text("TaskUpdate", {"taskId": "2", "owner": "cc", "status": "in_progress"})
        added = swarm(
            "task", "add", "build", "--command", "echo built > built.txt", "--blocked-by", "1"
        )
        assert added.stdout.strip() == "3", added.stderr
        spawn_shell("w1", tmp_path)
        assert "is blocked by #1" in cc.error("TaskClaim", {"taskId": "3"})
        assert "#3 [pending] build [blocked by #1]" in cc.text("TaskList")
        assert "Status: in_progress" in cc.text("TaskGet", {"taskId": "1"})
        wait_for(lambda: status("cc")["activity"] == "TaskGet #1", "cc's last call as activity")

        # a ReadInbox blocked in the server returns when another process writes the inbox
        waiting = cc.start("ReadInbox", {"wait_seconds": DEADLINE_S})
        wait_for(  # its status file says so while the call waits in the server
            lambda: status("cc")["activity"] == f"ReadInbox (waiting up to {DEADLINE_S:g} s)",
            "cc's ReadInbox to wait",
        )
        assert swarm("send", "cc", "the schema is ready", "--summary", "schema").returncode == 0
        got = text_of(waiting.result(DEADLINE_S))
        assert '<teammate-message teammate_id="team-lead" summary="schema">' in got
        assert "the schema is ready" in got
        assert cc.text("ReadInbox") == "No new messages."  # marked read, by identity
        # a message to the shell worker: it acknowledges to cc
        sent = json.loads(
            cc.text("SendMessage", {"to": "w1", "message": "hello w1", "summary": "hi"})
        )
        assert sent == {"success": True, "message": "Message sent to w1's inbox"}
        ack = cc.text("ReadInbox", {"wait_seconds": DEADLINE_S})
        assert 'teammate_id="w1"' in ack and "Received: 'hi'" in ack
        assert Mailbox(paths).read_all("w1")[-1].from_ == "cc"

        # completing #1 unblocks #3, which the shell worker takes and does
        done = cc.text("TaskUpdate", {"taskId": "1", "status": "completed"})
        assert done.startswith("Updated task #1 status")
        wait_for(lambda: board.require("3").status == "completed", "w1 to do task #3")
        assert board.require("3").owner == "w1" and (tmp_path / "built.txt").exists()
        assert (board.require("1").owner, board.require("1").status) == ("cc", "completed")
        team = json.loads(cc.text("TeamStatus"))
        by_name = {m["name"]: m for m in team["members"]}
        assert (by_name["cc"]["state"], by_name["cc"]["backend"]) == ("idle", "mcp")
        assert by_name["cc"]["task"] == "#2 hold"
        assert "#3 [completed] build (w1) [blocked by #1]" in team["tasks"]
        assert "stopped" in swarm("shutdown", "w1").stdout  # else it would take #2 once freed
    # the session is over: cc is gone, the task it held is back on the board
    wait_for(lambda: state_of("cc") == "dead", "cc dead in swarm status")
    held = board.require("2")
    assert (held.status, held.owner) == ("pending", None)
    assert board.require("1").owner == "cc"  # completed work stays its
    gone = member(paths, "cc")
    assert gone.isActive is False and "pid" not in gone.model_extra
    assert read_status(paths, "cc").state == "stopped"
    reaped = swarm("reap")
    assert "reaped cc" in reaped.stdout and member(paths, "cc") is None


def test_a_later_session_takes_the_name_again_and_finds_its_messages(paths: TeamPaths) -> None:
    with McpClient.stdio([*MCP, "--name", "cc"]):
        first = member(paths, "cc").model_extra["mcpSession"]
        second = subprocess.run([*MCP, "--name", "cc"], capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert "already joined by another open MCP session" in second.stderr
    wait_for(lambda: state_of("cc") == "dead", "cc gone")
    assert swarm("send", "cc", "while you were away").returncode == 0
    with McpClient.stdio([*MCP, "--name", "cc"]) as again:
        assert member(paths, "cc").model_extra["mcpSession"] != first
        assert state_of("cc") == "idle"
        assert "while you were away" in again.text("ReadInbox")


def test_bad_input_is_a_tool_error_that_changes_nothing(paths: TeamPaths) -> None:
    TeamFile(paths).add_member("alice")
    swarm("task", "add", "one")
    before = files(paths.root)
    with McpClient.stdio([*MCP, "--name", "cc"]) as cc:
        joined = files(paths.root)
        cases: list[tuple[str, dict[str, Any], list[str]]] = [
            ("SendMessage", {"to": "nobody", "message": "hi", "summary": "hi"},
             ["no teammate named 'nobody'", "alice"]),
            ("SendMessage", {"to": "../x", "message": "hi", "summary": "hi"},
             ["'../x'", "not a single path component"]),
            ("SendMessage", {"to": "alice", "message": "x" * 10_000_000, "summary": "big"},
             ["10,000,000 characters", "at most 100,000"]),
            ("SendMessage", {"to": "alice", "message": "no summary"}, ["summary is required"]),
            ("SendMessage", {"to": "alice", "message": "hi", "summary": "hi", "cc": "x"},
             ["Extra inputs are not permitted"]),
            ("TaskCreate", {"subject": "s", "description": "d" * 200_000}, ["at most 100,000"]),
            ("TaskUpdate", {"taskId": "1", "status": "done"}, ["status", "'pending'"]),
            ("TaskUpdate", {"taskId": "../1", "status": "completed"},
             ["'../1'", "not a single path component"]),
            ("TaskUpdate", {"taskId": "9", "status": "completed"}, ["Task #9 not found"]),
            ("TaskClaim", {"taskId": "../1"}, ["taskId", "pattern"]),
            ("TaskClaim", {"taskId": "9"}, ["Task #9 not found"]),
            ("ReadInbox", {"wait_seconds": 1000}, ["wait_seconds", "less than or equal to 300"]),
            ("ReadInbox", {"wait_seconds": -1}, ["wait_seconds"]),
            ("ListRequests", {}, ["ListRequests is the lead's", "team-lead"]),
            ("AnswerRequest", {"id": "perm-1-abcdefg", "approve": True}, ["AnswerRequest is the lead's"]),
            ("SpawnTeammate", {"name": "w9", "prompt": "go", "model": "shell"}, ["the lead's"]),
            ("ShutdownTeammate", {"name": "alice"}, ["ShutdownTeammate is the lead's"]),
            ("NoSuchTool", {}, ["no tool named 'NoSuchTool'", "TaskList"]),
        ]  # fmt: skip
        for name, arguments, expected in cases:
            said = cc.error(name, arguments)
            for part in expected:
                assert part in said, (name, said)
        assert files(paths.root) == joined, "a refused call changed a file"
    assert set(before) <= set(files(paths.root))


def test_the_lead_answers_requests_spawns_and_shuts_down(paths: TeamPaths, tmp_path: Path) -> None:
    team = TeamFile(paths)
    team.add_member("alice")
    request = PermissionRequest(
        request_id="perm-1763000000000-abc1234",
        agent_id="alice",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description="run the tests",
        input={"command": "make test"},
        permission_suggestions=[],
    )
    Mailbox(paths).send("team-lead", request, sender="alice")
    lead = [*MCP, "--name", "team-lead", "--backend", "subprocess", "--cwd", str(tmp_path)]
    with McpClient.stdio(lead) as boss, McpClient.stdio([*MCP, "--name", "cc"]) as cc:
        assert "ListRequests is the lead's" in cc.error("ListRequests")
        before = files(paths.root)
        refused = cc.error("AnswerRequest", {"id": request.request_id, "approve": True})
        assert "the lead's" in refused and files(paths.root) == before
        listed = json.loads(boss.text("ListRequests"))
        assert [(r["id"], r["teammate"], r["input"]) for r in listed] == [
            (request.request_id, "alice", {"command": "make test"})
        ]
        answered = boss.text("AnswerRequest", {"id": request.request_id, "approve": True})
        assert answered == f"Approved permission_request {request.request_id} from alice."
        responses = [e.structured() for e in Mailbox(paths).read_all("alice")]
        assert any(isinstance(r, PermissionResponse) and r.subtype == "success" for r in responses)
        assert "already answered" in boss.error(
            "AnswerRequest", {"id": request.request_id, "approve": False}
        )
        assert boss.text("ListRequests") == "No pending requests."

        assert "invalid member name '../x'" in boss.error(
            "SpawnTeammate", {"name": "../x", "prompt": "go", "model": "shell"}
        )
        assert "`host` is for a team on PostgreSQL" in boss.error(
            "SpawnTeammate", {"name": "w2", "prompt": "go", "model": "shell", "host": "b"}
        )  # a team in files has no hosts
        spawned = boss.text("SpawnTeammate", {"name": "w2", "prompt": "Work.", "model": "shell"})
        assert "Spawned successfully" in spawned and "name: w2" in spawned
        wait_for(lambda: state_of("w2") == "idle", "w2 idle")
        refusal = boss.error("ShutdownTeammate", {"name": "cc"})
        assert "MCP session" in refusal and "force" in refusal
        stopped = boss.text("ShutdownTeammate", {"name": "w2", "reason": "done"})
        assert stopped.startswith("w2: approved; stopped and removed")
        assert member(paths, "w2") is None
        assert team.load().member("team-lead").backendType is None  # the lead's entry as it was


@pytest.fixture
def http_server(paths: TeamPaths, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`swarm mcp --http 127.0.0.1:0`: the process and its URL."""
    proc = subprocess.Popen(
        [
            *MCP,
            "--http",
            "127.0.0.1:0",
            "--json",
            "--backend",
            "subprocess",
            "--cwd",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, proc.stderr.read() if proc.stderr else "no output"
        announced = json.loads(line)
        assert announced["url"].startswith("http://127.0.0.1:") and announced["pid"] == proc.pid
        yield proc, announced["url"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(DEADLINE_S)


def test_over_http_each_session_is_a_member_until_it_ends(
    paths: TeamPaths, http_server: tuple[subprocess.Popen[str], str]
) -> None:
    proc, url = http_server
    board = TaskBoard(paths)
    swarm("task", "add", "ann's task")
    ann, bob = McpClient.http(url), McpClient.http(url)
    try:
        assert "join" in ann.tools()
        before = files(paths.root)
        assert "call join first" in ann.error("TaskList")
        assert "invalid member name '../x'" in ann.error("join", {"name": "../x"})
        assert "lead: true goes with the lead's name" in ann.error(
            "join", {"name": "ann", "lead": True}
        )
        assert "lead's name" in ann.error("join", {"name": "team-lead"})
        assert files(paths.root) == before
        assert "as ann" in ann.text("join", {"name": "ann"})
        assert "already 'ann'" in ann.error("join", {"name": "ann2"})
        huge = {"to": "team-lead", "message": "x" * 10_000_000, "summary": "big"}
        assert "at most 100,000" in ann.error("SendMessage", huge)  # a tool error over HTTP too
        assert Mailbox(paths).read_all("team-lead") == []
        assert "already joined by another open MCP session" in bob.error("join", {"name": "ann"})
        bob.text("join", {"name": "bob"})
        for name in ("ann", "bob"):
            found = member(paths, name)
            assert found.backendType == "mcp" and found.model_extra["pid"] == proc.pid
            assert state_of(name) == "idle"
        waiting = bob.start("ReadInbox", {"wait_seconds": DEADLINE_S})
        ann.text("SendMessage", {"to": "bob", "message": "over to you", "summary": "handover"})
        assert 'teammate_id="ann"' in text_of(waiting.result(DEADLINE_S))
        ann.text("TaskClaim", {"taskId": "1"})
        assert board.require("1").owner == "ann"
    finally:
        ann.close()  # DELETE: ann's session ends, the server goes on
    wait_for(lambda: state_of("ann") == "dead", "ann dead once her session ended")
    assert (board.require("1").status, board.require("1").owner) == ("pending", None)
    assert state_of("bob") == "idle"
    try:
        team = json.loads(bob.text("TeamStatus"))
        assert {m["name"]: m["state"] for m in team["members"]}["ann"] == "dead"
        with McpClient.http(url) as boss:
            boss.text("join", {"name": "team-lead", "lead": True})
            assert boss.text("ListRequests") == "No pending requests."
            assert "ListRequests is the lead's" in bob.error("ListRequests")
        proc.send_signal(signal.SIGTERM)  # the server stops: bob's session ends with it
        assert proc.wait(DEADLINE_S) == 0
    finally:
        with contextlib.suppress(Exception):  # its server is gone: closing may fail
            bob.close()
    assert state_of("bob") == "dead"


def test_off_loopback_http_needs_a_token_and_a_token_is_checked(paths: TeamPaths) -> None:
    refused = subprocess.run(
        [*MCP, "--http", "0.0.0.0:0"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1
    assert "not a loopback address" in refused.stderr and "--token" in refused.stderr
    proc = subprocess.Popen(
        [*MCP, "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "SWARM_MCP_TOKEN": "s3cret"},
    )
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        assert url.endswith("/mcp"), url
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            request = urllib.request.Request(url, body.encode(), method="POST", headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused_request:
                urllib.request.urlopen(request, timeout=DEADLINE_S)
            assert refused_request.value.code == 401, headers
            assert refused_request.value.headers["WWW-Authenticate"].startswith("Bearer")
        with McpClient.http(url, token="s3cret") as ann:
            assert "as ann" in ann.text("join", {"name": "ann"})
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(DEADLINE_S)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_with_stdin_still_open_makes_the_member_leave_at_once(
    paths: TeamPaths, stop: signal.Signals
) -> None:
    """What Claude Code 2.1.330 does when it exits: SIGINT, SIGTERM 100 ms later, SIGKILL at
    500 ms, never closing the server's stdin."""
    swarm("task", "add", "held")
    server = subprocess.Popen(
        [*MCP, "--name", "cc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: pid_of(paths, "cc") == server.pid, "cc to join")
        TaskBoard(paths).claim("1", "cc")
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert server.stdin and server.stdout
        server.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n"
        )
        server.stdin.flush()
        assert '"id":1' in server.stdout.readline()
        server.send_signal(stop)
        assert server.wait(DEADLINE_S) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    gone = member(paths, "cc")
    assert "pid" not in gone.model_extra and state_of("cc") == "dead"
    assert (TaskBoard(paths).require("1").status, TaskBoard(paths).require("1").owner) == (
        "pending",
        None,
    )
