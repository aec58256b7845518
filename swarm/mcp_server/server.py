"""`TeamServer`: a team served as an MCP server, on the `mcp` SDK's low-level `Server`.

``tools/list`` lists the team tools swarm's Claude teammates have (`teammate.tools.team`), the
MCP member's own (`swarm.mcp_server.tools`), the lead's (`swarm.mcp_server.lead_tools`) and, over
HTTP, ``join``; each with the JSON schema of its input model. ``tools/call`` then, in order:

1. refuses an unknown tool, and any text field longer than `MAX_TEXT_CHARS` (named, with the
   limit), before anything else;
2. finds the call's session: over stdio the one member of the process; over HTTP the one of the
   MCP session the call came in (made at its first call, left when the session ends);
3. runs the tool in a worker thread, so that file work and waiting never hold up the event
   loop: the input validated by the tool's pydantic model, the member checked to be still in
   the team, the lead's tools refused to others;
4. answers its text, or a tool error (``isError``) with the message of whatever refused it.
   Nothing is written before the input has passed every check.

The session of an HTTP call is kept in the SDK's per-connection state, and its leaving on the
connection's exit stack, which the SDK unwinds however the session ends: the client's DELETE,
the idle timeout, the server stopping. The SDK hands handlers the connection only through the
request's `ServerSession`: `_connection` reads it there, in this one place.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server import Server, ServerRequestContext

from protocols.errors import Error
from protocols.names import LEAD_NAME
from swarm.mcp_server.lead_tools import LEAD_TOOLS
from swarm.mcp_server.session import McpSession, ServerOptions
from swarm.mcp_server.tools import MEMBER_TOOLS, join
from teammate.tools.base import Tool, ToolError, text_of
from teammate.tools.team import send_message, task_create, task_get, task_list, task_update

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 100_000  # one text field of a call: a message, a description, a prompt
WAITING_CALLS = 64  # ReadInbox calls that may wait at once (each holds a worker thread)
TEAM_TOOLS = (send_message, task_create, task_list, task_get, task_update)
READ_ONLY = frozenset({"TaskList", "TaskGet", "TeamStatus", "ListRequests"})  # change no file
STATE_KEY = "swarm.session"
VERSION = "0.1.0"


def tool_table(http: bool) -> dict[str, Tool]:
    """The tools a session may call, by name (``join`` only over HTTP)."""
    tools = [*TEAM_TOOLS, *MEMBER_TOOLS, *LEAD_TOOLS]
    return {t.name: t for t in ([join, *tools] if http else tools)}


def instructions(team: str, member: str | None) -> str:
    """What the server tells its client about itself (MCP ``instructions``)."""
    who = (
        f"You are {member!r} in the agent team {team!r}."
        if member
        else f"This is the agent team {team!r}: call join first with your name."
    )
    return (
        f"{who} Teammates are separate agents that work the shared task board and talk "
        "through inboxes; your plain text output reaches none of them, SendMessage does. "
        "ReadInbox returns the messages sent to you (with wait_seconds it waits for the first "
        "one). TaskList shows the board; TaskClaim takes a task, TaskUpdate completes it "
        "(status completed), which unblocks the tasks waiting for it. TeamStatus shows who is "
        f"working on what. The lead ({LEAD_NAME}) also has ListRequests, AnswerRequest, "
        "SpawnTeammate and ShutdownTeammate."
    )


class TeamServer:
    """The MCP server of one team: its tools and its sessions."""

    def __init__(self, options: ServerOptions, member: McpSession | None = None) -> None:
        """Over stdio, `member` is the process's one session (already joined); over HTTP
        (``options.http``) each MCP session gets its own."""
        self.options = options
        self.member = member
        self.tools = tool_table(options.http)
        self.sessions: dict[str, McpSession] = {}  # HTTP sessions not yet ended, by id
        self._waits: anyio.CapacityLimiter | None = None
        self.server: Server[Any] = Server(
            "swarm",
            version=VERSION,
            title=f"swarm team {options.paths.team}",
            instructions=instructions(options.paths.team, member.member if member else None),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = []
        for tool in self.tools.values():
            schema = tool.schema()
            listed.append(
                types.Tool(
                    name=tool.name,
                    description=schema["description"],
                    input_schema=schema["input_schema"],
                    annotations=types.ToolAnnotations(read_only_hint=tool.name in READ_ONLY),
                )
            )
        return types.ListToolsResult(tools=listed)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            known = ", ".join(self.tools)
            return failed(f"no tool named {params.name!r}; the tools are: {known}")
        arguments = dict(params.arguments or {})
        try:
            check_sizes(arguments, tool.name)
            session = self._session_of(ctx)
            limiter = self._wait_limiter() if tool.name == "ReadInbox" else None
            text = await anyio.to_thread.run_sync(
                run_tool, session, tool, arguments, limiter=limiter
            )
        except (Error, OSError) as exc:
            return failed(str(exc))
        return types.CallToolResult(content=[types.TextContent(text=text)])

    def _wait_limiter(self) -> anyio.CapacityLimiter:
        if self._waits is None:
            self._waits = anyio.CapacityLimiter(WAITING_CALLS)
        return self._waits

    def _session_of(self, ctx: ServerRequestContext[Any]) -> McpSession:
        if self.member is not None:
            return self.member
        connection = _connection(ctx)
        session = connection.state.get(STATE_KEY)
        if isinstance(session, McpSession):
            return session
        if connection.session_id is None:
            raise ToolError(
                "this server keeps one member per MCP session, and this request has none: "
                "connect with the initialize handshake (streamable HTTP with a session id)"
            )
        # an id of its own: the transport's session id lets whoever holds it act in the
        # session, so it is never written to the team's files
        session = McpSession(self.options, new_session_id("http"))
        connection.state[STATE_KEY] = session
        self.sessions[session.session_id] = session
        connection.exit_stack.push_async_callback(self._end, session)
        return session

    async def _end(self, session: McpSession) -> None:
        """An HTTP session ended (DELETE, idle timeout, server stop): its member leaves."""
        self.sessions.pop(session.session_id, None)
        await anyio.to_thread.run_sync(leave_quietly, session)

    def end_all(self) -> None:
        """The server stops: every session still open leaves (its member is gone)."""
        for session in list(self.sessions.values()):
            leave_quietly(session)
        self.sessions.clear()


def run_tool(session: McpSession, tool: Tool, arguments: dict[str, Any]) -> str:
    """One call, in a worker thread: validated, as the session's member, lead tools checked;
    the member's activity in its status file says what it did (a refused call changes no
    file)."""
    validated = tool.validate(arguments)  # nothing happens for input that does not pass
    if tool is not join:
        session.require_member()
    if tool in LEAD_TOOLS:
        session.require_lead(tool.name)
    values = {name: getattr(validated, name) for name in type(validated).model_fields}
    waiting = values.get("wait_seconds") if tool.name == "ReadInbox" else 0
    if waiting:  # shown while it waits; other calls once they have succeeded
        session.note(tool.name, arguments, waiting)
    output = tool.function(session.context(), **values)
    session.note(tool.name, arguments)
    return output if isinstance(output, str) else text_of(output)


def leave_quietly(session: McpSession) -> None:
    """`session.leave`, reporting a failure in the log (the session is over either way)."""
    try:
        released = session.leave()
    except (Error, OSError) as exc:
        log.error("member %s could not leave the team cleanly: %s", session.member, exc)
        return
    if session.member is not None and not session.is_lead:
        ids = ", ".join("#" + t for t in released) or "none"
        log.info("%s left the team; tasks returned to pending: %s", session.member, ids)


def check_sizes(value: Any, where: str) -> None:
    """Refuse a text longer than `MAX_TEXT_CHARS` anywhere in a call's arguments."""
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        raise ToolError(
            f"{where} is {len(value):,} characters long; at most {MAX_TEXT_CHARS:,} are allowed "
            "in one text: write longer content to a file and send its path instead"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_sizes(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_sizes(item, f"{where}[{index}]")


def failed(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _connection(ctx: ServerRequestContext[Any]) -> Any:
    """The SDK's `Connection` of a request (its ``state`` and ``exit_stack`` are public; the
    way to it from a low-level handler is not)."""
    connection = getattr(ctx.session, "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack"):
        raise ToolError("this version of the mcp SDK does not let swarm keep sessions over HTTP")
    return connection


def new_session_id(kind: str) -> str:
    return f"{kind}-{secrets.token_hex(8)}"
