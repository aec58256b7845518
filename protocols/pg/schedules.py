"""A store's schedules (`swarm schedule` for a team on PostgreSQL): one row each, its body the
schedule as swarm writes it (`swarm.schedule.book`; this module does not read it).

`locked` is how a scheduler fires one: it takes the row with ``SELECT ... FOR UPDATE`` in a
transaction on a connection of its own, does the firing while it holds it, writes the result
and commits. Another scheduler, on this machine or any other, waits at most ``lock_wait_s``
for the row and gives up (`LockTimeout`: that one is firing it); one that dies mid-firing loses
its connection, the server rolls its transaction back and lets the row go, and the next pass
fires again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from protocols.errors import LockTimeout, StoreUnavailable
from protocols.pg.columns import document, text
from protocols.pg.database import Database

Body = dict[str, Any]


class PgSchedules:
    """The schedules of every team of one store."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def all(self) -> list[Body]:
        """Every schedule's body, oldest first."""
        rows = self.db.run(
            lambda c: c.execute("SELECT body FROM schedules ORDER BY created, id").fetchall(),
            "read the schedules",
        )
        return [row[0] for row in rows if isinstance(row[0], dict)]

    def insert(self, schedule_id: str, team: str, body: Body) -> None:
        self.db.run(
            lambda c: c.execute(
                "INSERT INTO schedules (id, team, body) VALUES (%s, %s, %s)",
                [text(schedule_id, "schedule id"), text(team, "team name"), document(body)],
            ),
            "add a schedule",
        )

    def delete(self, schedule_id: str) -> bool:
        """Remove it (waiting for a firing in progress to end); whether it was there."""
        done = self.db.run(
            lambda c: c.execute("DELETE FROM schedules WHERE id = %s", [schedule_id]).rowcount,
            "remove a schedule",
        )
        return bool(done)

    def locked(
        self, schedule_id: str, change: Callable[[Body], Body | None], lock_wait_s: float
    ) -> Body | None:
        """`change` applied to the schedule's body while its row is held (module doc), and what
        it returned written (None: nothing to write); None if there is no such schedule."""
        conn = self.db.connect()
        try:
            with conn.transaction():
                wait_ms = max(1, int(lock_wait_s * 1000))
                conn.execute(f"SET LOCAL lock_timeout = {wait_ms}")  # a number, not input
                row = conn.execute(
                    "SELECT body FROM schedules WHERE id = %s FOR UPDATE", [schedule_id]
                ).fetchone()
                if row is None or not isinstance(row[0], dict):
                    return None
                changed = change(row[0])
                if changed is not None:
                    conn.execute(
                        "UPDATE schedules SET body = %s WHERE id = %s",
                        [document(changed), schedule_id],
                    )
                return changed
        except pg_errors.LockNotAvailable:
            raise LockTimeout(
                f"schedule {schedule_id} is being fired by another scheduler"
            ) from None
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"fire schedule {schedule_id}: {exc}") from exc
        finally:
            conn.close()
