"""`Database`: one process's connection to swarm's PostgreSQL store, and the rule for doing work
on it: one transaction, done again on a fresh connection when the old one was lost.

The first connection migrates the schema (`schema.migrate`). Every connection is in autocommit
mode with ``search_path`` set to ``swarm`` and ``synchronous_commit`` on: a commit that returned
is on the server's disk. `run` does one unit of work in a transaction; when the connection breaks
(the server restarted, the network dropped) or the server rolled the transaction back
(serialization failure, deadlock), it reconnects, with growing pauses, until `reconnect_s` has
passed since the first failure, and does the work again from the start. So every unit of work
must be safe to do twice: the stores make them so (a message's id, a claim's token, a creation's
key), because a commit whose answer was lost may or may not have happened.

A machine cut off from the server (its network dropped, not the server gone) must not hang: left
to the kernel's defaults, a TCP connection waits about 15 minutes for an answer to what it sent
(``tcp_retries2``), and one that only waits (a listener) never notices at all. So every TCP
connection is opened with `TCP_SETTINGS` (unless the URL sets them): what it sent and the server
did not acknowledge within 10 s, or keepalive probes unanswered for about 11 s, end it, and `run`
reconnects. The session asks the server to do the same for its side (`SERVER_TCP_SETTINGS`), so
a transaction cut off mid-way is rolled back within seconds and its row locks released (else the
sweep, which skips locked members, would pass over a cut-off member until the server noticed).
Over a Unix socket these settings do nothing.

A `Database` is meant for one thread, but a store object made in one thread may be used from
another (a teammate's timer that marks it active writes through the main thread's team file):
units of work on one `Database` are done one at a time (a lock), never interleaved on its
connection, where psycopg would end one thread's transaction inside the other's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from protocols.errors import StoreUnavailable
from protocols.pg.schema import SCHEMA, migrate

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_RECONNECT_S = 30.0
CONNECT_TIMEOUT_S = 5
# libpq's TCP parameters, for each one the URL does not set (module doc): a dead link is noticed
# in seconds, not after the kernel's 15 minutes (or never, for a connection that only listens)
TCP_SETTINGS = {
    "keepalives": "1",
    "keepalives_idle": "5",  # seconds of silence before the first probe
    "keepalives_interval": "2",
    "keepalives_count": "3",
    "tcp_user_timeout": "10000",  # ms that sent data may go unacknowledged
}
# the same for the server's end of the session (its GUCs; any user may set them)
SERVER_TCP_SETTINGS = {
    "tcp_keepalives_idle": "5",
    "tcp_keepalives_interval": "2",
    "tcp_keepalives_count": "3",
    "tcp_user_timeout": "10000",
}
FIRST_PAUSE_S = 0.05
LONGEST_PAUSE_S = 1.0


class Database:
    """The store at `conninfo` (a libpq connection string or URI), seen from one process.

    Not shared between threads: a thread that waits for messages uses its own `Database` (or
    the `listen` connection). Close it (or use it as a context manager) when done."""

    def __init__(
        self,
        conninfo: str,
        reconnect_s: float = DEFAULT_RECONNECT_S,
        application_name: str = "swarm",
    ) -> None:
        self.conninfo = conninfo
        self.reconnect_s = reconnect_s
        self.application_name = application_name
        self._conn: psycopg.Connection[Any] | None = None
        self._migrated = False
        self.retries = 0  # units of work done again after a lost connection or a rollback
        self._lock = threading.RLock()  # one unit of work at a time on the connection
        self._tcp = _tcp_settings(conninfo)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of this process's own (a listener's), schema migrated; retried like
        `run` while the server cannot be reached."""
        return self._with_retries(self._open, "connect", connecting=True)

    def _open(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(
            self.conninfo,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name=self.application_name,
            **self._tcp,
        )
        try:
            if not self._migrated:
                migrate(conn)
                self._migrated = True
            session = {"search_path": SCHEMA, "synchronous_commit": "on", **SERVER_TCP_SETTINGS}
            # one round trip; constants, not input
            conn.execute("; ".join(f"SET {name} TO {value}" for name, value in session.items()))
        except BaseException:
            conn.close()
            raise
        return conn

    def run(
        self,
        work: Callable[[psycopg.Connection[Any]], T],
        what: str = "work",
        transaction: bool = True,
    ) -> T:
        """`work(conn)` in one transaction; done again on a new connection if the connection
        was lost or the server rolled the transaction back. `StoreUnavailable` once the server
        stayed out of reach for `reconnect_s` seconds. Work whose every statement stands alone
        (a heartbeat) may go without the transaction: no BEGIN and COMMIT around it."""

        def attempt() -> T:
            if self._conn is None or self._conn.closed:
                self._conn = self._open()
            conn = self._conn
            if not transaction:
                return work(conn)
            with conn.transaction():
                return work(conn)

        with self._lock:
            return self._with_retries(attempt, what)

    def _with_retries(self, attempt: Callable[[], T], what: str, connecting: bool = False) -> T:
        deadline: float | None = None
        pause = FIRST_PAUSE_S
        while True:
            try:
                return attempt()
            except psycopg.OperationalError as exc:
                if not (connecting or self._worth_again(exc)):
                    raise
                now = time.monotonic()
                deadline = deadline or now + self.reconnect_s
                if now >= deadline:
                    raise StoreUnavailable(
                        f"{what}: the PostgreSQL store did not answer for {self.reconnect_s:g} s "
                        f"({_first_line(exc)}); doing it again is safe"
                    ) from exc
                log.info("%s: %s; trying again in %.2f s", what, _first_line(exc), pause)
                self.retries += 1
                time.sleep(min(pause, max(0.0, deadline - now)))  # back-off before reconnecting
                pause = min(pause * 2, LONGEST_PAUSE_S)

    def _worth_again(self, exc: psycopg.OperationalError) -> bool:
        """A lost connection (dropped here, to be opened again) or a transaction the server
        rolled back (serialization failure, deadlock): yes; any other error: no."""
        if isinstance(exc, pg_errors.TransactionRollback):
            return True
        if self._conn is not None and (self._conn.broken or self._conn.closed):
            self._conn.close()
            self._conn = None
            return True
        if isinstance(exc, pg_errors.AdminShutdown | pg_errors.CannotConnectNow):
            self.close()
            return True
        return self._conn is None  # connecting failed: the server is not there (yet)


def _tcp_settings(conninfo: str) -> dict[str, Any]:
    """`TCP_SETTINGS` but those `conninfo` sets itself (all of them for a conninfo libpq refuses:
    connecting says what is wrong with it)."""
    try:
        given = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        given = {}
    return {key: value for key, value in TCP_SETTINGS.items() if key not in given}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
