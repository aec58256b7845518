"""Running `TeamServer` on a transport: stdio for one member, streamable HTTP for many.

stdio: the member joins before the first request (a name that cannot be had is an error at
start); the process serves until its client closes stdin, and the member leaves on the way out,
or until SIGTERM, SIGINT or SIGHUP: then the member leaves at once and the process exits.

HTTP: ``host:port`` (``127.0.0.1:0`` picks a free port), on the SDK's streamable-HTTP app at
``/mcp`` run by uvicorn. The socket is bound before anything is served, so `announce` gets the
real URL. Off loopback a bearer token is required (refused at start without one): with a token,
a request that does not carry ``Authorization: Bearer <token>`` gets 401. On loopback the SDK
also checks the Host and Origin headers (DNS rebinding). When the server stops, every session
still open leaves.
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

import anyio

from swarm import listening
from swarm.errors import SwarmError
from swarm.listening import STOP_SIGNALS, Address, bound, stopping_server
from swarm.mcp_server.server import TeamServer, leave_quietly, new_session_id
from swarm.mcp_server.session import McpSession, ServerOptions

PATH = "/mcp"
GRACEFUL_STOP_S = 5  # open streams (a client's GET stream) get this long when the server stops
# a request body larger than this is answered 413 by the SDK before it is read; below it, a text
# over `server.MAX_TEXT_CHARS` gets the tool error that names the field and the limit
MAX_BODY_BYTES = 16 * 1024 * 1024


def serve_stdio(options: ServerOptions, name: str) -> None:
    """Serve the team over stdin/stdout as member `name` (the lead for ``team-lead``)."""
    from protocols.names import LEAD_NAME

    session = McpSession(options, new_session_id("stdio"))
    session.join(name, lead=name == LEAD_NAME)
    team = TeamServer(options, session)
    try:
        anyio.run(_stdio, team, session)
    finally:
        leave_quietly(session)


async def _stdio(team: TeamServer, session: McpSession) -> None:
    from mcp.server.stdio import stdio_server

    async with anyio.create_task_group() as group:
        group.start_soon(_leave_on_signal, session)
        async with stdio_server() as (read, write):
            server = team.server
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()  # stdin closed: the session is over


async def _leave_on_signal(session: McpSession) -> None:
    """A stop signal: the member leaves at once, then the process ends.

    A client may signal with stdin still open (Claude Code: SIGINT, SIGTERM 100 ms later,
    SIGKILL at 500 ms); the SDK's thread blocked reading stdin would hold up an orderly way out
    until the SIGKILL, so the leaving is done first and the process exits without waiting for
    it. Signals that arrive meanwhile wait in the receiver."""
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for _ in signals:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(leave_quietly, session)
            logging.shutdown()
            os._exit(0)


def parse_address(text: str) -> Address:
    """``--http HOST:PORT`` as an `Address` (`swarm.listening`)."""
    return listening.parse_address(text, "--http")


def serve_http(
    options: ServerOptions, address: Address, token: str | None, announce: Callable[[str], None]
) -> None:
    """Serve the team over streamable HTTP on `address` until stopped (SIGINT, SIGTERM)."""
    if not address.loopback and not token:
        raise SwarmError(
            f"--http {address.host}:{address.port} is not a loopback address: anyone who can "
            "reach it could act for the team. Give a bearer token with --token or "
            "SWARM_MCP_TOKEN (clients send 'Authorization: Bearer TOKEN'), or serve on "
            "127.0.0.1"
        )
    listener = bound(address, "--http")
    team = TeamServer(options)
    try:
        anyio.run(_http, team, address, listener, token, announce)
    finally:
        listener.close()
        team.end_all()


async def _http(
    team: TeamServer,
    address: Address,
    listener: socket.socket,
    token: str | None,
    announce: Callable[[str], None],
) -> None:
    import uvicorn

    app: Any = team.server.streamable_http_app(
        streamable_http_path=PATH, host=address.host, max_request_body_size=MAX_BODY_BYTES
    )
    if token:
        app = BearerToken(app, token)
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=GRACEFUL_STOP_S, lifespan="on"
    )
    logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
    announce(address.base_url(listener.getsockname()[1]) + PATH)
    await stopping_server()(config).serve(sockets=[listener])


class BearerToken:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>`` (else 401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = (
                b'{"error": "unauthorized", "error_description": "this swarm MCP server needs '
                b'Authorization: Bearer <its token>"}'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="swarm"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Any) -> bool:
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                scheme, _, given = value.partition(b" ")
                bearer = scheme.lower() == b"bearer"
                return bearer and hmac.compare_digest(given.strip(), self.token)
        return False
