"""Leases: how the store learns a member on another machine is gone.

A member holds a lease by heartbeating (`Leases.heartbeat`): its row's ``lease_expires_at`` becomes
the server's ``now()`` plus the lease's length, so no two machines' clocks are compared.
`Leases.sweep` (run by the lead, or by anyone: it is safe to run anywhere, any number of times at
once) finds members whose lease ran out, and for each, in one transaction: marks it dead (``alive``
false, ``isActive`` false), returns its unfinished tasks to pending at a new epoch (so whatever it
still sends with its old epochs is refused), and tells the lead with a ``teammate_terminated``
message, as `swarm.team.members.reap` does for local members. A member declared dead that heartbeats
again is told so (`LeaseLost`): it must not go on with work it held (whatever it sends about it is
refused), and it rejoins (`Leases.rejoin`: alive again, with a new lease, the lead told), as a
teammate's heartbeat does. `Leases.end` declares one member dead at once, the same way (its host saw
its process exit). `view` is every member's lease as the server sees it now, for telling a member
alive from dead on any machine (`swarm status`, `swarm reap`).

A lease lasts ``$SWARM_LEASE_S`` seconds (`lease_seconds`; default 30): tests shorten it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from protocols.errors import LeaseLost, UnknownMember
from protocols.inbox.mailbox import new_entry
from protocols.messages.models import TeammateTerminated
from protocols.names import LEAD_NAME
from protocols.pg import claims
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.mailbox import append_entry
from protocols.pg.notify import TASKS, notify

Conn = psycopg.Connection[Any]

DEFAULT_LEASE_S = 30.0
LEASE_ENV = "SWARM_LEASE_S"


def lease_seconds(env: Mapping[str, str] | None = None) -> float:
    """The lease length: ``$SWARM_LEASE_S`` when it is a number above 0, else 30 seconds."""
    value = (os.environ if env is None else env).get(LEASE_ENV, "")
    try:
        seconds = float(value)
    except ValueError:
        return DEFAULT_LEASE_S
    return seconds if 0 < seconds < float("inf") else DEFAULT_LEASE_S


@dataclass(frozen=True)
class Lease:
    """A member's lease as the server sees it now."""

    alive: bool  # not declared dead
    left_s: float | None  # seconds it still runs (negative: ran out); None: never held one

    @property
    def held(self) -> bool:
        """Alive, and its lease has not run out (a member that never heartbeated holds none)."""
        return self.alive and self.left_s is not None and self.left_s > 0


class Beat(NamedTuple):
    """What one heartbeat learnt besides extending the lease."""

    expires_at: datetime  # the lease runs until then (server time)
    sweep_due: bool  # some member's lease ran out: a `sweep` returns its tasks
    unread: bool  # the member has unread messages: if it waits, a notification was missed


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

    def beat(self, name: str, lease_s: float = DEFAULT_LEASE_S) -> Beat:
        """`heartbeat`, and in the same statement what an idle member would otherwise have to
        ask the server for (`Beat`): so an idle member asks the server one thing per beat."""
        if lease_s <= 0:
            raise ValueError(f"a lease lasts more than 0 seconds, not {lease_s}")

        def work(conn: Conn) -> Beat:
            found = conn.execute(
                "UPDATE members SET lease_expires_at = now() + make_interval(secs => %s) "
                "WHERE team = %s AND name = %s AND alive RETURNING lease_expires_at, EXISTS "
                "(SELECT 1 FROM members o WHERE o.team = members.team AND o.alive "
                "AND o.lease_expires_at < now()), EXISTS (SELECT 1 FROM messages m "
                "WHERE m.team = members.team AND m.recipient = members.name "
                "AND m.read_at IS NULL)",
                [lease_s, self.team, text(name, "member name")],
            ).fetchone()
            if found is not None:
                return Beat(found[0], bool(found[1]), bool(found[2]))
            if conn.execute(
                "SELECT 1 FROM members WHERE team = %s AND name = %s", [self.team, name]
            ).fetchone():
                raise LeaseLost(
                    f"{name!r}'s lease in team {self.team!r} ran out and it was declared dead; "
                    "its tasks went back to pending. Stop the work it held and rejoin"
                )
            raise UnknownMember(f"no member named {name!r} in team {self.team!r}")

        # one UPDATE that stands alone (the SELECT after it only words the error)
        return self.db.run(work, "heartbeat", transaction=False)

    def rejoin(self, name: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
        """Bring back `name`, declared dead while its process still ran (its lease ran out in a
        pause longer than the lease), with a new lease, and tell the lead so. Its tasks stay where
        the sweep put them (back on the board, at a new epoch: whatever it still sends about them
        is refused). False if it was not declared dead (or is no member)."""

        def work(conn: Conn) -> bool:
            found = conn.execute(
                "UPDATE members SET alive = true, "
                "lease_expires_at = now() + make_interval(secs => %s) "
                "WHERE team = %s AND name = %s AND NOT alive RETURNING name",
                [lease_s, self.team, text(name, "member name")],
            ).fetchone()
            if found is None:
                return False
            note = (
                f"{name} is alive: it was declared dead when its lease ran out (paused, or cut "
                "off from the store, longer than its lease) and has rejoined with a new one; "
                "the tasks it held stay back on the board"
            )
            append_entry(conn, self.team, LEAD_NAME, new_entry(note, name, summary="rejoined"))
            return True

        return self.db.run(work, "rejoin")

    def expires_at(self, name: str) -> datetime | None:
        found = self.db.run(
            lambda c: c.execute(
                "SELECT lease_expires_at FROM members WHERE team = %s AND name = %s",
                [self.team, name],
            ).fetchone()
        )
        return found[0] if found else None

    def view(self) -> dict[str, Lease]:
        """Every member's lease, by name (module doc)."""
        rows = self.db.run(
            lambda c: c.execute(
                "SELECT name, alive, extract(epoch FROM lease_expires_at - now())::float8 "
                "FROM members WHERE team = %s",
                [self.team],
            ).fetchall(),
            "read leases",
        )
        return {name: Lease(bool(alive), left) for name, alive, left in rows}

    def end(self, name: str, why: str) -> Expired | None:
        """Declare `name` dead now, as the sweep would (its tasks back to pending, the lead
        told `why`); None if it was not alive (or is no member)."""

        def work(conn: Conn) -> Expired | None:
            found = conn.execute(
                "SELECT name, data FROM members WHERE team = %s AND name = %s AND alive FOR UPDATE",
                [self.team, name],
            ).fetchone()
            return _bury(conn, self.team, found[0], found[1], why) if found else None

        return self.db.run(work, "end lease")

    def drop(self, name: str) -> None:
        """End `name`'s lease now without declaring it dead (it stopped cleanly): it is judged
        dead at once, and the next sweep tells the lead unless it was removed first."""
        self.db.run(
            lambda c: c.execute(
                "UPDATE members SET lease_expires_at = now() WHERE team = %s AND name = %s "
                "AND alive",
                [self.team, name],
            ),
            "drop lease",
        )

    def sweep(self) -> list[Expired]:
        """Declare dead every member whose lease ran out (see the module's docstring)."""
        return self.db.run(self._sweep, "sweep leases")

    def _sweep(self, conn: Conn) -> list[Expired]:
        found = conn.execute(
            "SELECT name, data FROM members WHERE team = %s AND alive "
            "AND lease_expires_at < now() ORDER BY position FOR UPDATE SKIP LOCKED",
            [self.team],
        ).fetchall()
        return [_bury(conn, self.team, name, data, "its lease ran out") for name, data in found]


def _bury(conn: Conn, team: str, name: str, data: Any, why: str) -> Expired:
    """Mark `name` dead, return its unfinished tasks to pending at a new epoch, tell the lead."""
    conn.execute(
        "UPDATE members SET alive = false, data = %s WHERE team = %s AND name = %s",
        [document({**data, "isActive": False}), team, name],
    )
    released = [str(r.id) for r in claims.release(conn, team, name)]
    if released:
        notify(conn, team, TASKS)  # idle members may take them now
    note = TeammateTerminated(
        message=f"{name} has stopped ({why}); tasks returned to pending: "
        f"{', '.join('#' + i for i in released) or 'none'}"
    )
    append_entry(conn, team, LEAD_NAME, new_entry(note, LEAD_NAME))
    return Expired(name, released)
