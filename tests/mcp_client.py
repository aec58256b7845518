"""An MCP client for tests and benchmarks, on the `mcp` SDK: a `ClientSession` driven from
synchronous code through an anyio blocking portal (an event loop on a thread of its own).

    with McpClient.stdio(["python", "-m", "swarm", "mcp", "--team", "t", "--name", "cc"]) as cc:
        cc.text("TaskList")                      # the result's text; AssertionError on isError
        cc.call("SendMessage", {...}).is_error
        pending = cc.start("ReadInbox", {"wait_seconds": 20})   # a Future: the call runs on
        ...
        pending.result(timeout=20)

`McpClient.http(url, token=...)` opens a streamable-HTTP session (closing it sends DELETE);
`close` ends the session (for stdio: closes the server's stdin, then waits for it to exit).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

CALL_TIMEOUT_S = 60.0


class McpClient:
    """One MCP session, used from synchronous code."""

    def __init__(self, transport: Any) -> None:
        self._stack = contextlib.ExitStack()
        self.portal: BlockingPortal = self._stack.enter_context(start_blocking_portal())
        try:
            streams = self._stack.enter_context(self.portal.wrap_async_context_manager(transport))
            session = ClientSession(streams[0], streams[1])
            self.session = self._stack.enter_context(
                self.portal.wrap_async_context_manager(session)
            )
            self.initialized = self.portal.call(self.session.initialize)
        except BaseException:
            self._stack.close()
            raise

    @classmethod
    def stdio(
        cls,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        errlog: TextIO | None = None,
    ) -> McpClient:
        """A session with the server `argv` starts (the test's environment, or `env`)."""
        parameters = StdioServerParameters(
            command=argv[0], args=list(argv[1:]), env=env or dict(os.environ), cwd=cwd
        )
        return cls(stdio_client(parameters, errlog=errlog or sys.stderr))

    @classmethod
    def http(cls, url: str, token: str | None = None) -> McpClient:
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {"Authorization": f"Bearer {token}"} if token else None
        client = create_mcp_http_client(headers=headers)
        return cls(_owning(client, streamable_http_client(url, http_client=client)))

    def tools(self) -> list[str]:
        return [t.name for t in self.portal.call(self.session.list_tools).tools]

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.start(name, arguments).result(CALL_TIMEOUT_S)

    def start(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> concurrent.futures.Future[CallToolResult]:
        """Begin a call and return at once (the call goes on in the portal's loop)."""
        return self.portal.start_task_soon(self.session.call_tool, name, arguments or {})

    def text(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """The text of a call that must succeed."""
        result = self.call(name, arguments)
        assert not result.is_error, f"{name} failed: {text_of(result)}"
        return text_of(result)

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """The text of a call that must fail with a tool error."""
        result = self.call(name, arguments)
        assert result.is_error, f"{name} did not fail: {text_of(result)}"
        return text_of(result)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> McpClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@contextlib.asynccontextmanager
async def _owning(client: Any, transport: Any) -> Any:
    async with client, transport as streams:
        yield streams
