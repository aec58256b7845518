"""Where a swarm server listens (`swarm web --listen`, `swarm mcp --http`): a ``HOST:PORT``
parsed and checked, whether it is a loopback address, and the base URL it is reached at; and
the socket both listen on (`bound`); the uvicorn server both run (`stopping_server`), loaded
only when one is started."""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from swarm.errors import SwarmError

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name: whatever it resolves to, not known to be loopback
            return False

    def base_url(self, port: int, scheme: str = "http") -> str:
        """``scheme://host:port`` for the `port` actually bound (port 0 picks one)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}"


def bound(address: Address, option: str) -> socket.socket:
    """A listening socket on `address` (bound before the server starts, so a port in use is a
    clear error naming `option`, and port 0 is known at once)."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address.host, address.port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise SwarmError(f"{option} {address.host}:{address.port}: {exc.strerror or exc}") from None
    return listener


def parse_address(text: str, option: str) -> Address:
    """``host:port`` (``[::1]:8080`` for IPv6) as an `Address`; `SwarmError` naming the
    `option` it was given to and the form."""
    host, colon, port = text.rpartition(":")
    host = host.strip("[]") if host.startswith("[") else host
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise SwarmError(
            f"{option} {text!r}: give HOST:PORT, e.g. 127.0.0.1:8765 "
            "(127.0.0.1:0 picks a free port)"
        )
    return Address(host, int(port))


def stopping_server() -> type[Any]:
    """uvicorn's ``Server``, stopping gracefully on SIGINT, SIGTERM or SIGHUP without then dying
    of the signal, as uvicorn does by raising it again: what the server does as it stops (a
    token file removed, sessions left) is done, and the exit code is 0."""
    import uvicorn

    class Stopping(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Stopping
