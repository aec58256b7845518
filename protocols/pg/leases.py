"""Leases: how the store learns a member on another machine is gone.

A member holds a lease by heartbeating (`Leases.heartbeat`): its row's ``lease_expires_at``
becomes the server's ``now()`` plus the lease's length, so no two machines' clocks are
compared. `Leases.sweep` (run by the lead, or by anyone: it is safe to run anywhere, any
number of times at once) finds members whose lease ran out, and for each, in one transaction:
marks it dead (``alive`` false, ``isActive`` false), returns its unfinished tasks to pending at
a new epoch (so whatever it still sends with its old epochs is refused), and tells the lead
with a ``teammate_terminated`` message, as `swarm.team.members.reap` does for local members.
A member declared dead that heartbeats again is told so (`LeaseLost`): it must not go on with
work it held; it may rejoin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from protocols.errors import LeaseLost, UnknownMember
from protocols.mailbox import new_entry
from protocols.messages import TeammateTerminated
from protocols.names import LEAD_NAME
from protocols.pg import claims
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.mailbox import append_entry
from protocols.pg.notify import TASKS, notify

Conn = psycopg.Connection[Any]

DEFAULT_LEASE_S = 30.0


@dataclass(frozen=True)
class Expired:
    """A member whose lease ran out, and the tasks that went back to pending."""

    name: str
    released: list[str]


class Leases:
    """The members' leases of one team, in the store at `db`."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = text(team, "team name")

    def heartbeat(self, name: str, lease_s: float = DEFAULT_LEASE_S) -> datetime:
        """Extend `name`'s lease to `lease_s` seconds from now (server time); returns when it
        expires. `LeaseLost` if the member was declared dead, `UnknownMember` if it is not one."""
        return self.beat(name, lease_s)[0]

    def beat(self, name: str, lease_s: float = DEFAULT_LEASE_S) -> tuple[datetime, bool]:
        """`heartbeat`, and in the same statement whether some member's lease ran out (a
        `sweep` is due): so an idle member asks the server one thing per beat, not two."""
        if lease_s <= 0:
            raise ValueError(f"a lease lasts more than 0 seconds, not {lease_s}")

        def work(conn: Conn) -> tuple[datetime, bool]:
            found = conn.execute(
                "UPDATE members SET lease_expires_at = now() + make_interval(secs => %s) "
                "WHERE team = %s AND name = %s AND alive RETURNING lease_expires_at, EXISTS "
                "(SELECT 1 FROM members o WHERE o.team = members.team AND o.alive "
                "AND o.lease_expires_at < now())",
                [lease_s, self.team, text(name, "member name")],
            ).fetchone()
            if found is not None:
                return found[0], bool(found[1])
            if conn.execute(
                "SELECT 1 FROM members WHERE team = %s AND name = %s", [self.team, name]
            ).fetchone():
                raise LeaseLost(
                    f"{name!r}'s lease in team {self.team!r} ran out and it was declared dead; "
                    "its tasks went back to pending. Stop the work it held and rejoin"
                )
            raise UnknownMember(f"no member named {name!r} in team {self.team!r}")

        return self.db.run(work, "heartbeat")

    def expires_at(self, name: str) -> datetime | None:
        found = self.db.run(
            lambda c: c.execute(
                "SELECT lease_expires_at FROM members WHERE team = %s AND name = %s",
                [self.team, name],
            ).fetchone()
        )
        return found[0] if found else None

    def sweep(self) -> list[Expired]:
        """Declare dead every member whose lease ran out (see the module's docstring)."""
        return self.db.run(self._sweep, "sweep leases")

    def _sweep(self, conn: Conn) -> list[Expired]:
        found = conn.execute(
            "SELECT name, data FROM members WHERE team = %s AND alive "
            "AND lease_expires_at < now() ORDER BY position FOR UPDATE SKIP LOCKED",
            [self.team],
        ).fetchall()
        expired = []
        for name, data in found:
            conn.execute(
                "UPDATE members SET alive = false, data = %s WHERE team = %s AND name = %s",
                [document({**data, "isActive": False}), self.team, name],
            )
            released = [str(r.id) for r in claims.release(conn, self.team, name)]
            if released:
                notify(conn, self.team, TASKS)  # idle members may take them now
            note = TeammateTerminated(
                message=f"{name} has stopped (its lease ran out); tasks returned to pending: "
                f"{', '.join('#' + i for i in released) or 'none'}"
            )
            append_entry(conn, self.team, LEAD_NAME, new_entry(note, LEAD_NAME))
            expired.append(Expired(name, released))
        return expired
