"""Members' status in PostgreSQL: `write_status` and `read_status` as in `protocols.member.status`,
one row per member holding its `AgentStatus` document."""

from __future__ import annotations

from typing import Any

import psycopg

from protocols.clock import now_iso
from protocols.member.status import AgentStatus
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.notify import STATUS, notify

Conn = psycopg.Connection[Any]


def write_status(db: Database, team: str, status: AgentStatus) -> None:
    """Replace `status.name`'s status (its ``updatedAt`` set to now)."""
    status.updatedAt = now_iso()

    def work(conn: Conn) -> None:
        conn.execute(
            "INSERT INTO member_status (team, name, status) VALUES (%s, %s, %s) "
            "ON CONFLICT (team, name) DO UPDATE SET status = excluded.status, updated_at = now()",
            [
                text(team, "team name"),
                text(status.name, "member name"),
                document(status.to_json_dict()),
            ],
        )
        notify(conn, team, STATUS)  # `swarm wait --idle` wakes

    db.run(work, "write status")


def read_status(db: Database, team: str, name: str) -> AgentStatus | None:
    """`name`'s status; None if it never wrote one."""
    found = db.run(
        lambda c: c.execute(
            "SELECT status FROM member_status WHERE team = %s AND name = %s", [team, name]
        ).fetchone()
    )
    return AgentStatus.from_json_dict(found[0]) if found else None
