"""The connections to an agent's MCP servers: the SDK's asyncio sessions on one background
event-loop thread, behind a synchronous, thread-safe API for the agent loop (which runs in the
teammate's main thread and sub-agents' threads).

`McpManager.start` begins connecting every server at once and returns: nothing waits unless it
asks to (`wait`, with a deadline: the required servers). Each server is one task that opens the
transport (stdio, streamable HTTP or SSE), initializes, lists the tools, then holds the session
until it is stopped, its process dies, or three consecutive connection-level errors of calls ask
for a reconnect. Every change of state goes to the listeners (`McpManager.listen`): the brain
records it in the transcript and the status file and tells the lead about a failure.

A stdio server runs in its own session (process group, the SDK's choice) with the teammate's
environment, so it carries ``SWARM_PROCESS_TOKEN``: if the teammate is killed outright, `swarm`
finds and stops it by that token. Stopping one is SIGINT to its group, then the SDK's closing
of stdin, SIGTERM and SIGKILL. A teammate whose commands run in a sandbox starts its stdio
servers in it too (`teammate.sandbox`: they write only in its directory, and reach the network
only as its commands do).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.errors import Error
from protocols.pids import pid_alive
from teammate.mcp.config import ServerConfig

if TYPE_CHECKING:
    from teammate.sandbox.bwrap import Sandbox

log = logging.getLogger(__name__)

CONNECTION_ERRORS_BEFORE_RECONNECT = 3
REMOTE_RETRIES = 3  # a remote server's session that ended: tries again after 2, 4, 8 s
INTERRUPT_GRACE_S = 1.0  # after SIGINT, before the SDK closes stdin (then SIGTERM, SIGKILL)
_MARK = "SWARM_MCP_SERVER"  # a stdio server's own mark in its environment: how its pid is found
_CONNECTION_CLOSED = -32000
_SESSION_GONE = re.compile(r"session (not found|terminated)", re.IGNORECASE)  # HTTP 404


class McpError(Error):
    """An MCP server or tool that cannot be used right now; the message says which and why."""


def startup_timeout() -> float:
    """Seconds a server may take to connect (``MCP_TIMEOUT`` in ms, as Claude Code; 30 s)."""
    return _ms_env("MCP_TIMEOUT", 30_000)


def tool_timeout() -> float:
    """Seconds one tool call may take (``MCP_TOOL_TIMEOUT`` in ms; 10 minutes)."""
    return _ms_env("MCP_TOOL_TIMEOUT", 600_000)


def _ms_env(name: str, default: int) -> float:
    try:
        return max(1, int(os.environ.get(name, default))) / 1000
    except ValueError:
        return default / 1000


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server offers, as the SDK listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True)
class ServerView:
    """What the rest of the teammate sees of one server."""

    key: str
    name: str
    state: str  # pending, connected, failed, closed
    error: str | None
    tools: tuple[ToolInfo, ...]
    transport: str
    owner: str | None

    def to_status(self) -> dict[str, Any]:
        return {
            "name": self.key,
            "state": self.state,
            "error": self.error,
            "tools": len(self.tools),
            "transport": self.transport,
        }


@dataclass
class _Connection:
    config: ServerConfig
    state: str = "pending"
    error: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    session: Any = None
    pid: int | None = None
    errors: int = 0  # consecutive connection-level errors of calls
    connects: int = 0  # sessions that connected (a remote one is retried when it drops)
    reason: str = ""  # why the hold ends: stop, reconnect
    wake: asyncio.Event | None = None
    settled: threading.Event = field(default_factory=threading.Event)  # connected or failed
    ended: threading.Event = field(default_factory=threading.Event)  # its task is over
    task: concurrent.futures.Future[None] | None = None

    def view(self) -> ServerView:
        c = self.config
        return ServerView(c.key, c.name, self.state, self.error, self.tools, c.transport, c.owner)


Listener = Callable[[ServerView], None]


class McpManager:
    """Every MCP connection of one agent process (a teammate, its sub-agents, the lead)."""

    def __init__(self, cwd: Path, sandbox: Sandbox | None = None) -> None:
        self.cwd = cwd
        self.sandbox = sandbox  # its stdio servers run in it (`teammate.sandbox`), if any
        self._lock = threading.RLock()
        self._conns: dict[str, _Connection] = {}
        self._listeners: list[Listener] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # the synchronous API

    def listen(self, listener: Listener) -> None:
        """Tell `listener` of every change of state from now on, and at once of each server's
        state now: one that listens after the servers started (they start before the model
        client is built, to overlap its import) misses nothing."""
        with self._lock:
            self._listeners.append(listener)
            known = [conn.view() for conn in self._conns.values()]
        for view in known:
            listener(view)

    def start(self, servers: Iterable[ServerConfig]) -> None:
        """Begin connecting each server not already known (returns at once)."""
        for config in servers:
            with self._lock:
                if config.key in self._conns and self._conns[config.key].state != "closed":
                    continue
                conn = self._conns[config.key] = _Connection(config)
            if config.error:
                self._settle(conn, "failed", config.error)
                continue
            loop = self._running_loop()
            conn.task = asyncio.run_coroutine_threadsafe(self._serve(conn), loop)

    def wait(self, keys: Iterable[str], timeout: float) -> dict[str, str | None]:
        """Wait until each server is connected or failed, up to `timeout` seconds in all; the
        problem of each (None: connected)."""
        deadline = time.monotonic() + timeout
        problems: dict[str, str | None] = {}
        for key in keys:
            conn = self._conns.get(key)
            if conn is None:
                problems[key] = f"MCP server {key!r} is not configured"
                continue
            conn.settled.wait(max(0.0, deadline - time.monotonic()))
            if conn.state == "connected":
                problems[key] = None
            elif conn.state == "pending":
                problems[key] = f"MCP server {key!r} did not connect within {timeout:g} s"
            else:
                problems[key] = f"MCP server {key!r} failed: {conn.error or conn.state}"
        return problems

    def views(self, keys: Iterable[str] | None = None) -> list[ServerView]:
        with self._lock:
            conns = list(self._conns.values())
        wanted = None if keys is None else set(keys)
        return [c.view() for c in conns if wanted is None or c.config.key in wanted]

    def call_tool(self, key: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call one tool; the SDK's `CallToolResult`. `McpError` for a server that is not
        connected, an error the server answered with, or a call that timed out."""
        return self._use(
            key,
            lambda s: s.call_tool(tool, arguments, read_timeout_seconds=tool_timeout()),
            f"MCP tool {tool} of {key!r}",
        )

    def list_resources(self, key: str) -> Any:
        """The server's resources (the SDK's `ListResourcesResult`); `McpError` as `call_tool`."""
        return self._use(key, lambda s: s.list_resources(), f"the resources of {key!r}")

    def read_resource(self, key: str, uri: str) -> Any:
        """One resource's contents (the SDK's `ReadResourceResult`); `McpError` as `call_tool`."""
        return self._use(key, lambda s: s.read_resource(uri), f"resource {uri} of {key!r}")

    def _use(self, key: str, request: Callable[[Any], Any], what: str) -> Any:
        """`request(session)` on the server's session, from any thread (see `call_tool`)."""
        conn = self._conns.get(key)
        if conn is None or conn.state != "connected" or self._loop is None:
            state = "unknown" if conn is None else conn.state
            why = f": {conn.error}" if conn is not None and conn.error else ""
            raise McpError(f"MCP server {key!r} is not connected ({state}{why})")
        future = asyncio.run_coroutine_threadsafe(self._call(conn, request), self._loop)
        try:
            return future.result(tool_timeout() + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpError(f"{what} did not answer in time") from None

    def stop(self, keys: Iterable[str] | None = None, timeout: float = 10.0) -> None:
        """Close these servers (all: None), waiting up to `timeout` seconds for them to end."""
        wanted = None if keys is None else set(keys)
        with self._lock:
            conns = [c for k, c in self._conns.items() if wanted is None or k in wanted]
        for conn in conns:
            conn.reason = "stop"
            if conn.state == "pending" and conn.task is not None:
                conn.task.cancel()  # still connecting: the SDK's clean-up stops its process
            elif self._loop is not None and conn.wake is not None:
                self._loop.call_soon_threadsafe(conn.wake.set)
        deadline = time.monotonic() + timeout
        for conn in conns:
            if conn.task is not None:
                conn.ended.wait(max(0.0, deadline - time.monotonic()))
            if conn.config.owner is not None:  # an agent's own server: forgotten with it
                with self._lock:
                    if self._conns.get(conn.config.key) is conn:
                        del self._conns[conn.config.key]
            if conn.state != "failed":
                self._settle(conn, "closed", None)

    def close(self) -> None:
        """Stop every server and the event loop (the agent process is ending)."""
        self.stop()
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
        self._loop = self._thread = None

    # the event loop

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="mcp-connections", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _settle(self, conn: _Connection, state: str, error: str | None) -> None:
        conn.state, conn.error = state, error
        if state != "connected":
            conn.tools, conn.session = (), None
        if state != "pending":
            conn.settled.set()
        view = conn.view()
        for listener in list(self._listeners):
            try:
                listener(view)
            except Exception:  # a listener must not break the connection
                log.exception("MCP listener failed for %s", view.key)

    async def _serve(self, conn: _Connection) -> None:
        try:
            await self._connect(conn)
        finally:
            conn.ended.set()

    async def _connect(self, conn: _Connection) -> None:
        conn.wake = asyncio.Event()
        retries = 0
        while True:
            conn.reason = ""
            before = conn.connects
            reason = await self._session(conn)
            if reason == "reconnect":  # already pending (`_connection_error`)
                continue
            if conn.connects > before:  # this session had connected: a fresh count of tries
                retries = 0
            remote = conn.config.transport != "stdio"
            if reason != "failed" or not remote or not conn.connects or retries >= REMOTE_RETRIES:
                return
            # a remote server whose session ended after it had connected: it may be back soon
            retries += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(conn.wake.wait(), 2.0**retries)
            if conn.reason == "stop":
                return
            conn.wake.clear()

    async def _session(self, conn: _Connection) -> str:
        """One session from opening the transport to closing it; why it ended."""
        import anyio
        from mcp import ClientSession

        reason = "failed"
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport(conn))
                session = await stack.enter_async_context(ClientSession(*streams[:2]))
                with anyio.fail_after(startup_timeout()):
                    await session.initialize()
                    tools = await _list_tools(session)
                conn.session, conn.tools, conn.errors = session, tools, 0
                conn.connects += 1
                self._settle(conn, "connected", None)
                reason = await self._hold(conn)
                if reason == "stop":
                    await _interrupt(conn.pid)
        except Exception as exc:
            if reason in ("stop", "reconnect"):  # closing a broken session may raise: as meant
                return reason
            problem = _describe(exc)
            if isinstance(_innermost(exc), TimeoutError) and conn.state == "pending":
                problem = f"did not connect within {startup_timeout():g} s"
            self._settle(conn, "failed", f"{conn.config.origin}: {problem}")
            return "failed"
        if reason == "died" and conn.state != "failed":
            self._settle(conn, "failed", "the server process exited")
        return reason

    def _transport(self, conn: _Connection) -> contextlib.AbstractAsyncContextManager[Any]:
        config = conn.config
        if config.transport == "stdio":
            return self._stdio(conn)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=config.headers or None)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=config.headers or None)
        return _owning(client, streamable_http_client(config.url, http_client=client))

    @contextlib.asynccontextmanager
    async def _stdio(self, conn: _Connection) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        mark = secrets.token_hex(8)
        config = conn.config
        argv = [config.command, *config.args]
        if self.sandbox is not None:
            argv = self.sandbox.wrap(argv)
        parameters = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env={**os.environ, **config.env, _MARK: mark},
            cwd=str(self.cwd),
        )
        async with stdio_client(parameters, errlog=sys.stderr) as streams:
            conn.pid = _leader_with(f"{_MARK}={mark}".encode())
            yield streams

    async def _hold(self, conn: _Connection) -> str:
        """Wait until the session should end: stop, reconnect, or died (its process exited)."""
        assert conn.wake is not None
        while not conn.wake.is_set():
            if conn.pid is not None and not pid_alive(conn.pid):
                return "died"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(conn.wake.wait(), 0.2)
        conn.wake.clear()
        return conn.reason or "stop"  # "died" when a call found the process gone

    async def _call(self, conn: _Connection, request: Callable[[Any], Any]) -> Any:
        from mcp import MCPError

        session = conn.session
        if session is None:
            raise McpError(f"MCP server {conn.config.key!r} is not connected")
        try:
            result = await request(session)
        except MCPError as exc:
            if _SESSION_GONE.search(exc.message):  # the server lost the session: a new one now
                conn.errors = CONNECTION_ERRORS_BEFORE_RECONNECT - 1
            if exc.code == _CONNECTION_CLOSED or _SESSION_GONE.search(exc.message):
                self._connection_error(conn)
            raise McpError(f"MCP server {conn.config.key!r}: {exc.message}") from None
        except Exception as exc:  # the transport: a closed stream, a refused connection
            self._connection_error(conn)
            raise McpError(f"MCP server {conn.config.key!r}: {_describe(exc)}") from None
        conn.errors = 0
        return result

    def _connection_error(self, conn: _Connection) -> None:
        if conn.pid is not None and not pid_alive(conn.pid) and conn.wake is not None:
            # a stdio server that died mid-call: failed now, so the next request lacks its tools
            self._settle(conn, "failed", "the server process exited")
            conn.reason = "died"
            conn.wake.set()
            return
        conn.errors += 1
        if conn.errors >= CONNECTION_ERRORS_BEFORE_RECONNECT and conn.wake is not None:
            conn.reason = "reconnect"
            conn.settled.clear()  # waiters wait for the new session
            self._settle(conn, "pending", "reconnecting after connection errors")
            conn.wake.set()


async def _list_tools(session: Any) -> tuple[ToolInfo, ...]:
    from mcp.types import PaginatedRequestParams

    found: list[ToolInfo] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        for tool in result.tools:
            hints = tool.annotations
            found.append(
                ToolInfo(
                    tool.name,
                    tool.description or tool.title or "",
                    dict(tool.input_schema or {"type": "object"}),
                    bool(hints is not None and hints.read_only_hint),
                )
            )
        cursor = result.next_cursor
        if not cursor:
            return tuple(found)


@contextlib.asynccontextmanager
async def _owning(client: Any, transport: Any) -> Any:
    """`transport` entered, and `client` (its HTTP client) closed after it."""
    async with client, transport as streams:
        yield streams


def _leader_with(needle: bytes) -> int | None:
    """The process-group leader whose environment holds `needle`: a stdio server just started
    (its own session, so its pid is its group's id)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            if needle in environ and os.getpgid(int(entry)) == int(entry):
                return int(entry)
        except OSError:
            continue
    return None


async def _interrupt(pid: int | None) -> None:
    """SIGINT to a stdio server's group, and a moment for it to end on its own."""
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGINT)
    deadline = time.monotonic() + INTERRUPT_GRACE_S
    while pid_alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _innermost(exc: BaseException) -> BaseException:
    """The exception an anyio task group's exception group holds."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (an anyio group holds the real one)."""
    exc = _innermost(exc)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text
