"""Waking a waiting reader: ``LISTEN``/``NOTIFY`` on one channel per team.

A send notifies the team's channel (`channel`) with the recipient's name, inside its own
transaction, so the notification goes out when (and only if) the message is committed. A
`Listener` holds its own connection that does nothing but ``LISTEN``: it listens before the
reader first looks at its inbox, so a message committed in between is either seen by that look
or wakes the wait after it. PostgreSQL drops notifications when no connection listens (and a
listener's connection can be cut), so a listener that lost its connection says "look" once it
listens again, even when making the new connection failed at first and only a later wait made
it (the network was down longer than its retries); and a waiting reader also looks again every
``rescan_s`` seconds whatever it heard: the safety net, as the file store's rescan is for
inotify.
"""

from __future__ import annotations

import hashlib
import logging
import select
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from protocols.pg.database import Database
from protocols.pg.url import STATUS, TASKS

__all__ = ["STATUS", "TASKS", "Listener", "channel", "notify"]

log = logging.getLogger(__name__)


def channel(team: str) -> str:
    """The team's channel: an identifier of hex digits whatever the team is called."""
    return "swarm_" + hashlib.sha256(team.encode("utf-8")).hexdigest()[:32]


def notify(conn: psycopg.Connection[Any], team: str, recipient: str) -> None:
    """Notify `team`'s listeners that `recipient` has mail (sent when the transaction commits)."""
    conn.execute("SELECT pg_notify(%s, %s)", [channel(team), recipient])


class Listener:
    """A connection listening on one team's channel. Close it when done."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.channel = channel(team)
        self._conn: psycopg.Connection[Any] | None = None
        # its connection was lost and not made again yet: whatever was sent until it listens
        # again woke nobody, so the call that listens again answers "look" (None)
        self._lost = False
        self._listen()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _listen(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = self.db.connect()
            self._conn.execute(f"LISTEN {self.channel}")
        return self._conn

    def wait(self, names: set[str] | None, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a notification for one of `names` (any, for None).

        True when one came, or when the connection was lost and made again (messages sent
        meanwhile woke nobody: the caller looks); False at the timeout."""
        heard = self.heard(names, timeout)
        return heard is None or bool(heard)

    def heard(
        self, names: set[str] | None, timeout: float, wake_fds: Sequence[int] = ()
    ) -> set[str] | None:
        """The payloads among `names` (any, for None) heard within `timeout` seconds: once one
        came, the others already waiting too. Empty at the timeout, or as soon as one of
        `wake_fds` is readable (the caller's own wake-ups; it reads them); None when the
        connection was lost and made again, in this call or after an earlier one that could not
        make it again (`StoreUnavailable`): what was sent meanwhile woke nobody, look."""
        conn = self._listen()
        if self._lost:
            self._lost = False
            return None
        found: set[str] = set()
        deadline = time.monotonic() + max(timeout, 0.0)
        woken = False
        try:
            while True:
                for note in conn.notifies(timeout=0.0):  # what came already, without waiting
                    if names is None or note.payload in names:
                        found.add(note.payload)
                left = deadline - time.monotonic()
                if found or left <= 0 or woken:
                    return found
                # one wake-up, when the server writes or at the timeout: psycopg's own wait
                # (`notifies(timeout=)`) wakes every 0.1 s, 10 times a second per idle listener
                readable = select.poll()
                readable.register(conn.fileno(), select.POLLIN)
                for fd in wake_fds:
                    readable.register(fd, select.POLLIN)
                woken = any(fd != conn.fileno() for fd, _ in readable.poll(left * 1000))
        except psycopg.OperationalError as exc:
            log.info("listener on %s lost its connection (%s); listening again", self.channel, exc)
            self.close()
            self._lost = True  # until it listens again, here or in a later call
            self._listen()
            self._lost = False
            return None
