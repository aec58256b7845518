"""Who may use a `swarm web` server: its two random tokens, the file that keeps them, and the
checks every request passes.

A server makes a full token (see and answer) and a read-only one (see only) when it starts, and
writes them with its URL to ``swarm/web/<team>-<port>.json`` under the config root, mode 0600
(removed when it stops). A request carries its token as ``?token=``, as ``Authorization: Bearer``
or, once the page was opened with one, in the HttpOnly, SameSite=Strict cookie the page set. A
change (any POST) needs the full token in the ``Authorization`` header, which a page of another
site cannot send without this server's consent (it gives none: no CORS), and an ``Origin``, when
the browser sends one, that is this server's own. Tokens are compared with
`hmac.compare_digest`. A client address that gave `MAX_FAILURES` wrong tokens within
`FAILURE_WINDOW_S` is answered 429 until the window has passed. At most `MAX_CLIENTS` addresses
are remembered (wrong tokens from a whole IPv6 range must not grow the server without end): past
that, the addresses whose failures have all aged out go first, then those with the fewest (an
address shut out stays shut out).
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from protocols.fs import safefs

MAX_FAILURES = 20
FAILURE_WINDOW_S = 60.0
MAX_CLIENTS = 10_000
FILE_MODE = 0o600
DIR_MODE = 0o700


class Role(StrEnum):
    FULL = "full"  # sees the team and answers its requests
    VIEWER = "read-only"  # sees the team


@dataclass(frozen=True)
class Tokens:
    full: str
    viewer: str

    @classmethod
    def new(cls) -> Tokens:
        return cls(secrets.token_urlsafe(32), secrets.token_urlsafe(32))

    def role(self, given: str | None) -> Role | None:
        """The role `given` grants, or None; constant time against both tokens."""
        if not given:
            return None
        raw = given.encode()
        full = hmac.compare_digest(raw, self.full.encode())
        viewer = hmac.compare_digest(raw, self.viewer.encode())
        return Role.FULL if full else Role.VIEWER if viewer else None


def token_file(root: Path, team: str, port: int) -> Path:
    return root / "swarm" / "web" / f"{team}-{port}.json"


def write_token_file(path: Path, tokens: Tokens, url: str, viewer_url: str) -> None:
    """The server's tokens and URLs at `path`, readable by this user only (its directory 0700)."""
    safefs.makedirs(path.parent)
    os.chmod(path.parent, DIR_MODE)
    body = {
        "url": url,
        "readOnlyUrl": viewer_url,
        "token": tokens.full,
        "readOnlyToken": tokens.viewer,
    }
    safefs.unlink(path, missing_ok=True)  # made anew, so no one else's file is written through
    fd = safefs.open_path(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)  # whatever the umask
        json.dump({**body, "pid": os.getpid()}, handle, indent=2)


@dataclass
class FailureLimit:
    """Wrong tokens per client address: more than `most` within `window_s` seconds shuts the
    address out until the oldest of them is `window_s` old."""

    most: int = MAX_FAILURES
    window_s: float = FAILURE_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def _recent(self, client: str) -> deque[float]:
        times = self._failures.setdefault(client, deque())
        while times and self.clock() - times[0] > self.window_s:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def shut_out(self, client: str) -> bool:
        return len(self._recent(client)) >= self.most

    max_clients: int = MAX_CLIENTS

    def failed(self, client: str) -> None:
        self._recent(client)
        if client not in self._failures and len(self._failures) >= self.max_clients:
            self._make_room()
        self._failures.setdefault(client, deque()).append(self.clock())

    def _make_room(self) -> None:
        """Forget the addresses whose failures have aged out; if that frees nothing, the one
        with the fewest failures (an address shut out is kept), the stalest of those."""
        for client in list(self._failures):
            self._recent(client)
        if len(self._failures) >= self.max_clients:
            times = self._failures
            least = min(times, key=lambda c: (len(times[c]), times[c][-1]))
            del times[least]

    def remembered(self) -> int:
        """How many addresses are remembered now."""
        return len(self._failures)


def cookie_name(port: int) -> str:
    """The page's cookie: one per port (cookies are per host, not per port)."""
    return f"swarm_web_{port}"


def given_token(
    query: Mapping[str, str], headers: Mapping[str, str], cookies: Mapping[str, str], port: int
) -> str | None:
    """The token a request carries: ``?token=``, else ``Authorization: Bearer``, else the cookie."""
    scheme, _, bearer = headers.get("authorization", "").partition(" ")
    if query.get("token"):
        return query["token"]
    if scheme.lower() == "bearer" and bearer.strip():
        return bearer.strip()
    return cookies.get(cookie_name(port))


def change_refused(headers: Mapping[str, str], tokens: Tokens, own_origins: set[str]) -> str | None:
    """Why a change (a POST) is refused, or None: it must carry the full token in the
    ``Authorization`` header, JSON, and no ``Origin`` but this server's own."""
    scheme, _, bearer = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or tokens.role(bearer.strip()) is not Role.FULL:
        return "a change needs the full token in an 'Authorization: Bearer' header"
    origin = headers.get("origin")
    if origin is not None and origin not in own_origins:
        return f"a change from another origin ({origin}) is refused"
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return "a change from another site is refused"
    if not headers.get("content-type", "").startswith("application/json"):
        return "a change must be sent as application/json"
    return None
