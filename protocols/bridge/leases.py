"""The leases of the members a bridge stands for: held while their process lives on this host.

Claude Code holds no lease: it knows nothing of the store. Without one, a Claude Code member on
a bridged host would look dead from every other host, and if that host died, nobody would take
back the tasks it held. So the bridge heartbeats the lease of each local member
(`BridgedLeases.beat`, every third of the lease) while

- the member is in the roster (one that has not joined yet holds none; it gets one at the first
  beat after it joins), and
- its process, when its entry records one (``swarm spawn`` records the Claude Code process it
  started, by identity, `protocols.pids`), is alive here. A member started by hand records none:
  the bridge then stands for it while the bridge runs.

A member whose process has died, or whose bridge stopped, or whose host was cut off, stops being
renewed and its lease runs out: the sweep declares it dead and returns its tasks, as for any
teammate. A member declared dead is not brought back by the bridge: it is said once, and it must
join again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from protocols.errors import Error, LeaseLost, UnknownMember
from protocols.pg.database import Database
from protocols.pg.leases import Leases, lease_seconds
from protocols.pg.team import PgTeamFile
from protocols.pids import ProcessIdentity

log = logging.getLogger(__name__)


class BridgedLeases:
    """Heartbeats the leases of `local` members of `team` in the store at `url`."""

    def __init__(
        self,
        url: str,
        team: str,
        local: Sequence[str],
        lease_s: float | None = None,
        alive: Callable[[ProcessIdentity], bool] = ProcessIdentity.alive,
    ) -> None:
        self.url = url
        self.team = team
        self.local = list(local)
        self.lease_s = lease_seconds() if lease_s is None else lease_s
        self.alive = alive
        self.lost: set[str] = set()  # declared dead: said once, never renewed

    def beat(self, db: Database) -> list[str]:
        """One round: renew the lease of every local member that should hold one; returns who
        holds one now."""
        roster = {m.name: m for m in PgTeamFile(db, self.team).load().members}
        leases = Leases(db, self.team)
        held = []
        for name in self.local:
            member = roster.get(name)
            if member is None or name in self.lost:
                continue
            process = ProcessIdentity.from_value(member.to_json_dict())
            if process is not None and not self.alive(process):
                continue  # its process is gone: let the lease run out
            try:
                leases.heartbeat(name, self.lease_s)
            except LeaseLost as exc:
                self.lost.add(name)
                log.warning("bridge: %s", exc)
                continue
            except UnknownMember:
                continue  # left the team meanwhile
            held.append(name)
        return held

    def run(self, stop: threading.Event) -> None:
        """Beat every third of the lease until `stop` is set; the store away is logged and
        tried again at the next beat (the lease may run out meanwhile: that is what it is
        for)."""
        db = Database(self.url)  # this thread's own connection
        try:
            while True:
                try:
                    self.beat(db)
                except Error as exc:
                    log.warning("bridge: heartbeat: %s", exc)
                if stop.wait(self.lease_s / 3):
                    return
        finally:
            db.close()
