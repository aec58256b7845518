"""`swarm mcp` without a transport: an MCP session's membership on real team files (joining,
taking over a name, leaving), how the rest of swarm treats such a member (state, never
signalled, shutdown), the tools' table and checks, the address and bearer-token rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from protocols.errors import InvalidName
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from protocols.values import MemberState
from swarm.mcp_server import membership
from swarm.mcp_server.server import MAX_TEXT_CHARS, check_sizes, run_tool, tool_table
from swarm.mcp_server.session import McpSession, NotJoined, ServerOptions
from swarm.mcp_server.transports import BearerToken, parse_address
from swarm.team.lifecycle import request_shutdown
from swarm.team.members import member_state, reap, stop_member
from teammate.tools.base import ToolError


@pytest.fixture
def options(team: TeamFile, tmp_path: Path) -> ServerOptions:
    return ServerOptions(paths=team.paths, cwd=tmp_path)


def test_joining_adds_an_mcp_member_with_this_process_and_leaving_releases_its_tasks(
    team: TeamFile, paths: TeamPaths, tmp_path: Path
) -> None:
    joined = membership.join(paths, "cc", "s1", tmp_path)
    assert (joined.backendType, joined.model_extra["pid"]) == ("mcp", os.getpid())
    assert member_state(joined) == MemberState.IDLE
    board = TaskBoard(paths)
    board.create("held")
    board.create("done")
    board.claim("1", "cc")
    board.update("2", owner="cc", status="completed")
    assert membership.leave(paths, "cc", "another session") == []  # not its to end
    assert membership.leave(paths, "cc", "s1") == ["1"]
    left = team.load().member("cc")
    assert left is not None and member_state(left) == MemberState.DEAD
    assert left.isActive is False and not {"pid", "pidStart", "mcpSession"} & set(left.model_extra)
    assert (board.require("1").status, board.require("1").owner) == ("pending", None)
    assert board.require("2").owner == "cc"  # finished work stays its
    assert membership.leave(paths, "cc", "s1") == []  # twice is harmless
    again = membership.join(paths, "cc", "s2", tmp_path)  # a later session takes the name
    assert again.model_extra["mcpSession"] == "s2" and again.color == joined.color


def test_a_name_that_is_taken_or_not_a_name_cannot_be_joined(
    team: TeamFile, paths: TeamPaths, tmp_path: Path
) -> None:
    membership.join(paths, "cc", "s1", tmp_path)
    with pytest.raises(membership.NameTaken, match="another open MCP session"):
        membership.join(paths, "cc", "s2", tmp_path)
    with pytest.raises(membership.NameTaken, match="already a teammate"):
        membership.join(paths, "alice", "s2", tmp_path)  # a teammate of the fixture's team
    with pytest.raises(membership.NameTaken, match="lead's name"):
        membership.join(paths, "team-lead", "s2", tmp_path)
    for bad in ("../x", "Bob", "a/b", "", "x" * 65):
        with pytest.raises(InvalidName):
            membership.join(paths, bad, "s2", tmp_path)
    assert team.load().member_names() == ["team-lead", "alice", "bob", "carol", "cc"]


def test_an_mcp_member_is_never_signalled_and_is_removed_only_when_forced(
    team: TeamFile, paths: TeamPaths, tmp_path: Path
) -> None:
    joined = membership.join(paths, "cc", "s1", tmp_path)  # this test process is its server
    TaskBoard(paths).create("held")
    TaskBoard(paths).claim("1", "cc")
    stop_member(paths, joined)  # would be SIGTERM to this process for a teammate
    asked = request_shutdown(paths, "cc", wait_s=0.1)
    assert (asked.outcome, asked.stopped) == ("mcp-session", False)
    assert "leaves when its client ends the session" in asked.reason
    assert reap(paths) == []  # alive: its server is
    forced = request_shutdown(paths, "cc", force=True)
    assert (forced.outcome, forced.stopped, forced.released) == ("removed", True, ["1"])
    assert team.load().member("cc") is None


def test_a_left_mcp_member_is_reaped_like_a_dead_teammate(
    team: TeamFile, paths: TeamPaths, tmp_path: Path
) -> None:
    membership.join(paths, "cc", "s1", tmp_path)
    membership.leave(paths, "cc", "s1")
    reaped = reap(paths)
    assert [(r.name, r.pid) for r in reaped] == [("cc", None)]
    notes = [e.text for e in Mailbox(paths).read_all("team-lead")]
    assert any("its MCP session ended" in n for n in notes)


def test_a_session_acts_only_once_joined_and_the_lead_flag_goes_with_the_leads_name(
    options: ServerOptions,
) -> None:
    session = McpSession(options, "s1")
    with pytest.raises(NotJoined, match="call join first"):
        _ = session.name
    with pytest.raises(ToolError, match="lead: true goes with the lead's name"):
        session.join("cc", lead=True)
    with pytest.raises(ToolError, match="lead: true goes with the lead's name"):
        session.join("team-lead")
    assert "as cc" in session.join("cc")
    with pytest.raises(ToolError, match="already 'cc'"):
        session.join("dd")
    with pytest.raises(ToolError, match="SpawnTeammate is the lead's"):
        session.require_lead("SpawnTeammate")
    session.leave()
    with pytest.raises(NotJoined, match="ended"):
        session.require_member()
    lead = McpSession(options, "s2")
    lead.join("team-lead", lead=True)
    lead.require_lead("SpawnTeammate")
    assert lead.leave() == []  # the lead's entry is never touched


def test_every_tool_validates_before_it_acts(options: ServerOptions) -> None:
    http = tool_table(http=True)
    assert next(iter(http)) == "join" and "join" not in tool_table(http=False)
    for tool in http.values():
        schema = tool.schema()["input_schema"]
        assert schema["type"] == "object" and schema.get("additionalProperties") is False
    session = McpSession(options, "s1")
    with pytest.raises(ToolError, match="call join first"):
        run_tool(session, http["TaskList"], {})
    with pytest.raises(ToolError, match="invalid input for join: name"):
        run_tool(session, http["join"], {"name": "../x"})
    run_tool(session, http["join"], {"name": "cc"})
    with pytest.raises(ToolError, match="wait_seconds"):
        run_tool(session, http["ReadInbox"], {"wait_seconds": 301})
    assert run_tool(session, http["ReadInbox"], {}) == "No new messages."


def test_no_text_in_a_call_may_be_longer_than_the_limit() -> None:
    check_sizes({"message": "x" * MAX_TEXT_CHARS, "list": ["y"]}, "SendMessage")
    with pytest.raises(ToolError, match=r"SendMessage.message is 100,001 characters long"):
        check_sizes({"message": "x" * (MAX_TEXT_CHARS + 1)}, "SendMessage")
    with pytest.raises(ToolError, match=r"TaskUpdate.metadata.notes\[1\]"):
        check_sizes({"metadata": {"notes": ["ok", "x" * (MAX_TEXT_CHARS + 1)]}}, "TaskUpdate")


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback"),
    [
        ("127.0.0.1:0", "127.0.0.1", 0, True),
        ("localhost:8765", "localhost", 8765, True),
        ("[::1]:9000", "::1", 9000, True),
        ("127.0.0.2:1", "127.0.0.2", 1, True),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False),
        ("10.1.2.3:80", "10.1.2.3", 80, False),
        ("team.example:80", "team.example", 80, False),
    ],
)
def test_addresses(text: str, host: str, port: int, loopback: bool) -> None:
    address = parse_address(text)
    assert (address.host, address.port, address.loopback) == (host, port, loopback)


@pytest.mark.parametrize("text", ["8765", "127.0.0.1", ":80", "127.0.0.1:http", "h:70000"])
def test_bad_addresses_say_the_form(text: str) -> None:
    with pytest.raises(Exception, match="HOST:PORT"):
        parse_address(text)


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        (None, False),
        (b"Bearer s3cret", True),
        (b"bearer s3cret", True),
        (b"Bearer wrong", False),
        (b"Basic s3cret", False),
        (b"Bearer", False),
    ],
)
def test_the_bearer_token_middleware(header: bytes | None, allowed: bool) -> None:
    reached: list[Any] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"authorization", header)] if header is not None else []
    scope = {"type": "http", "headers": headers}
    anyio.run(BearerToken(app, "s3cret"), scope, None, send)
    assert bool(reached) == allowed
    if not allowed:
        assert sent[0]["status"] == 401
        assert (b"www-authenticate", b'Bearer realm="swarm"') in sent[0]["headers"]
    anyio.run(BearerToken(app, "s3cret"), {"type": "lifespan"}, None, send)
    assert reached[-1] == {"type": "lifespan"}  # not a request: passed on
