"""Hosts of a PostgreSQL team, and the requests filed for them.

A host is a ``swarm host serve`` agent on one machine: it registers under a name, holds a lease
as members do (`heartbeat`: ``now()`` plus the lease on the server's clock) and leaves when told
to stop (`leave`). Nothing reaches a host but through the store: a command files a request for
it (`file`: spawn a teammate there, stop one), which notifies the team's channel with
``@host:<name>``; the host takes its pending requests in order (`pending`), answers each
(`answer`: done with what it did, or failed with the error) and records when a teammate it
started exits (`record_exit`); every answer notifies ``@hosts``, where the filer waits
(`Request` is what it reads back). So a host needs no inbound port, only a connection out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from protocols.errors import ProtocolsError
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.notify import notify

Conn = psycopg.Connection[Any]

ANSWERS = "@hosts"  # the payload of an answer, an exit, a host joining or leaving


def host_channel(name: str) -> str:
    """The payload that wakes host `name` (a request for it)."""
    return f"@host:{name}"


class UnknownHost(ProtocolsError):
    """A request for a host that never registered in the team; the message names the hosts."""


@dataclass(frozen=True)
class Host:
    name: str
    info: dict[str, Any]
    alive: bool  # registered, has not left, and its lease has not run out (server time)
    lease_left_s: float | None  # seconds its lease still runs (negative: ran out)
    joined_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "alive": self.alive,
            "lease_left_s": None if self.lease_left_s is None else round(self.lease_left_s, 1),
            "joined_at": self.joined_at.isoformat(),
            **{k: v for k, v in self.info.items() if k not in ("name", "alive")},
        }


@dataclass(frozen=True)
class Request:
    id: int
    host: str
    kind: str  # spawn | stop
    member: str
    body: dict[str, Any]
    state: str  # pending | done | failed
    outcome: dict[str, Any] | None
    exited: dict[str, Any] | None


_REQUEST = "id, host, kind, member, body, state, outcome, exited"


def _request(row: Any) -> Request:
    return Request(row[0], row[1], row[2], row[3], dict(row[4]), row[5], row[6], row[7])


class Hosts:
    """The hosts of one team, and their requests, in the store at `db`."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = text(team, "team name")

    # the host's side

    def register(self, name: str, info: dict[str, Any], lease_s: float) -> None:
        """Join (or join again) as host `name`, with a lease of `lease_s` seconds."""
        name = text(name, "host name")

        def work(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO hosts (team, name, info, lease_expires_at) "
                "VALUES (%s, %s, %s, now() + make_interval(secs => %s)) "
                "ON CONFLICT (team, name) DO UPDATE SET info = excluded.info, alive = true, "
                "lease_expires_at = excluded.lease_expires_at, joined_at = now()",
                [self.team, name, document(info), lease_s],
            )
            notify(conn, self.team, ANSWERS)

        self.db.run(work, "register host")

    def heartbeat(self, name: str, lease_s: float) -> None:
        self.db.run(
            lambda c: c.execute(
                "UPDATE hosts SET lease_expires_at = now() + make_interval(secs => %s), "
                "alive = true WHERE team = %s AND name = %s",
                [lease_s, self.team, name],
            ),
            "host heartbeat",
        )

    def leave(self, name: str) -> None:
        """Host `name` stopped serving: it shows dead at once, without waiting for its lease."""

        def work(conn: Conn) -> None:
            conn.execute(
                "UPDATE hosts SET alive = false WHERE team = %s AND name = %s", [self.team, name]
            )
            notify(conn, self.team, ANSWERS)

        self.db.run(work, "host leaves")

    def pending(self, name: str) -> list[Request]:
        """Host `name`'s requests not answered yet, oldest first."""
        rows = self.db.run(
            lambda c: c.execute(
                f"SELECT {_REQUEST} FROM host_requests WHERE team = %s AND host = %s "
                "AND state = 'pending' ORDER BY id",
                [self.team, name],
            ).fetchall()
        )
        return [_request(r) for r in rows]

    def answer(self, request_id: int, ok: bool, outcome: dict[str, Any]) -> None:
        """Answer a pending request: done (`ok`) with `outcome`, or failed (``{"error": ...}``).
        An answered request keeps its first answer."""

        def work(conn: Conn) -> None:
            conn.execute(
                "UPDATE host_requests SET state = %s, outcome = %s, answered_at = now() "
                "WHERE team = %s AND id = %s AND state = 'pending'",
                ["done" if ok else "failed", document(outcome), self.team, request_id],
            )
            notify(conn, self.team, ANSWERS)

        self.db.run(work, "answer host request")

    def record_exit(self, request_id: int, code: int | None) -> None:
        """The teammate that spawn request `request_id` started has exited (`code`: its exit
        status, None when not known: a tmux pane)."""

        def work(conn: Conn) -> None:
            conn.execute(
                "UPDATE host_requests SET exited = json_build_object('code', %s::int, "
                "'at', now()) WHERE team = %s AND id = %s",
                [code, self.team, request_id],
            )
            notify(conn, self.team, ANSWERS)

        self.db.run(work, "record exit")

    # everyone's side

    def list(self) -> list[Host]:
        rows = self.db.run(
            lambda c: c.execute(
                "SELECT name, info, alive AND coalesce(lease_expires_at > now(), false), "
                "extract(epoch FROM lease_expires_at - now())::float8, joined_at "
                "FROM hosts WHERE team = %s ORDER BY joined_at, name",
                [self.team],
            ).fetchall()
        )
        return [Host(r[0], dict(r[1]), bool(r[2]), r[3], r[4]) for r in rows]

    def alive(self) -> dict[str, bool]:
        """Every registered host, and whether it is alive now."""
        return {h.name: h.alive for h in self.list()}

    def file(self, host: str, kind: str, member: str, body: dict[str, Any]) -> int:
        """File a request for `host` and wake it; returns the request's id. `UnknownHost` for a
        host that never registered in the team."""

        def work(conn: Conn) -> int:
            known = conn.execute(
                "SELECT 1 FROM hosts WHERE team = %s AND name = %s", [self.team, host]
            ).fetchone()
            if known is None:
                raise UnknownHost(f"no host named {host!r} in team {self.team!r}")
            row = conn.execute(
                "INSERT INTO host_requests (team, host, kind, member, body) "
                "VALUES (%s, %s, %s, %s, %s) RETURNING id",
                [self.team, host, kind, text(member, "member name"), document(body)],
            ).fetchone()
            assert row is not None
            notify(conn, self.team, host_channel(host))
            return int(row[0])

        return self.db.run(work, "file host request")

    def get(self, request_id: int) -> Request | None:
        row = self.db.run(
            lambda c: c.execute(
                f"SELECT {_REQUEST} FROM host_requests WHERE team = %s AND id = %s",
                [self.team, request_id],
            ).fetchone()
        )
        return _request(row) if row is not None else None

    def last_spawn(self, member: str) -> Request | None:
        """The latest answered spawn request that started `member` (where it runs)."""
        row = self.db.run(
            lambda c: c.execute(
                f"SELECT {_REQUEST} FROM host_requests WHERE team = %s AND member = %s "
                "AND kind = 'spawn' AND state = 'done' ORDER BY id DESC LIMIT 1",
                [self.team, member],
            ).fetchone()
        )
        return _request(row) if row is not None else None
