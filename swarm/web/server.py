"""Serving `swarm web`: the address, the refusal to serve off loopback without TLS (unless
``--insecure``), the socket bound before anything is served (so port 0 gives the real URL), the
token file written once the URL is known and removed when the server stops, and uvicorn run
until SIGINT, SIGTERM or SIGHUP, which stop it gracefully with exit code 0.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from protocols.fs import safefs
from swarm import listening
from swarm.errors import SwarmError
from swarm.listening import Address, bound, stopping_server
from swarm.web.access import Tokens, token_file, write_token_file
from swarm.web.teams import Teams

GRACEFUL_STOP_S = 2  # open event streams get this long when the server stops


def parse_address(text: str) -> Address:
    """``--listen HOST:PORT`` as an `Address` (`swarm.listening`)."""
    return listening.parse_address(text, "--listen")


@dataclass(frozen=True)
class Tls:
    cert: Path
    key: Path


def check_exposure(address: Address, tls: Tls | None, insecure: bool) -> None:
    """`SwarmError` for an address off loopback with neither TLS nor ``--insecure``."""
    if address.loopback or tls is not None or insecure:
        return
    raise SwarmError(
        f"--listen {address.host}:{address.port} is not a loopback address: the token would "
        "cross the network in clear. Give --tls-cert and --tls-key, or serve on 127.0.0.1 "
        "(an SSH tunnel reaches it), or pass --insecure on a network you trust"
    )


def serve(
    teams: Teams,
    address: Address,
    tls: Tls | None,
    insecure: bool,
    announce: Callable[[str], None],
) -> None:
    """Serve `teams` (one, or every team under the config root) on `address` until stopped;
    `announce` gets the two URLs' lines."""
    check_exposure(address, tls, insecure)
    import anyio

    listener = bound(address, "--listen")
    port = listener.getsockname()[1]
    tokens = Tokens.new()
    base = address.base_url(port, "https" if tls is not None else "http")
    url = f"{base}/?token={quote(tokens.full)}"
    viewer_url = f"{base}/?token={quote(tokens.viewer)}"
    path = token_file(teams.root, teams.name, port)
    try:
        write_token_file(path, tokens, url, viewer_url)
        lines = [
            f"swarm web: {url}",
            f"read-only: {viewer_url}",
            f"(both kept in {path}, mode 0600, until the server stops)",
        ]
        anyio.run(_serve, teams, tokens, port, tls, listener, lambda: [*map(announce, lines)])
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            safefs.unlink(path, missing_ok=True)


async def _serve(
    teams: Teams,
    tokens: Tokens,
    port: int,
    tls: Tls | None,
    listener: socket.socket,
    started: Callable[[], object],
) -> None:
    """uvicorn until stopped; `started` is called once it serves (and a stop signal stops it
    gracefully: announced earlier, a signal could kill the process, its token file left)."""
    import anyio
    import uvicorn

    from swarm.web.app import Web

    app = Web(teams, tokens, port, tls is not None).app()
    config = uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_STOP_S,
        lifespan="on",
        ssl_certfile=str(tls.cert) if tls else None,
        ssl_keyfile=str(tls.key) if tls else None,
    )
    server = stopping_server()(config)
    async with anyio.create_task_group() as group:
        group.start_soon(_announce_once_started, server, started)
        await server.serve(sockets=[listener])
        group.cancel_scope.cancel()


async def _announce_once_started(server: Any, started: Callable[[], object]) -> None:
    import anyio

    while not server.started:
        if server.should_exit:
            return
        await anyio.sleep(0.01)  # uvicorn has no start event: its own flag, looked at
    started()
