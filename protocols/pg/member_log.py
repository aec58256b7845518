"""A member's log in PostgreSQL: what `swarm logs` shows of a member that may run on another host.

A teammate writes its transcript and its output on its own machine, where a `swarm logs` on
another host cannot read them. On a PostgreSQL team it also ships what `swarm logs` shows to
the table ``member_log`` (migration 0003): its transcript's records of the kinds shown
(`SHIPPED`: tool calls and results, replies with their usage, errors, its sessions; never the
conversation itself), its output lines (``{"kind": "output"}``) and its warnings
(``{"kind": "log"}``). Each row names the host and pid that wrote it, which is how
`swarm attach` knows a member runs elsewhere (`last_host`).

The table is bounded: each write keeps only the newest `KEEP` lines of that member, and every
string in a record is cut to `STRING_CHARS` (a tool's whole output is not worth shipping: the
log shows its first line). A write notifies the team's channel with ``@log:<name>``.

`Shipper` never holds the teammate up: `put` queues a record, and a thread with a connection of
its own writes what is queued in one transaction. While the server is out of reach at most
`QUEUE_MAX` records wait; older ones are dropped (the local files keep everything).
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
from typing import Any

import psycopg

from protocols.errors import Error
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.notify import notify

log = logging.getLogger(__name__)

KEEP = 2000  # lines kept per member
STRING_CHARS = 2000  # a string in a shipped record is cut to this many characters
ITEMS = 50  # and a list to this many items
QUEUE_MAX = 10_000
SHIPPED = frozenset(
    {
        "tool_call",
        "tool_result",
        "tool_crash",
        "response",
        "error",
        "trimmed",
        "compacted",
        "shell",
        "compact_failed",
        "compact_blocked",
        "resume_warning",
        "session",
        "session_end",
        "mcp_server",
        "output",
        "log",
    }
)
PROCESS_KINDS = frozenset({"output", "log"})  # what the process printed (`swarm logs --process`)
_STOP = object()


def log_channel_name(member: str) -> str:
    """What a write of `member`'s log notifies the team's channel with."""
    return f"@log:{member}"


def trimmed(value: Any) -> Any:
    """`value` with every string cut to `STRING_CHARS` (and made UTF-8) and every list to
    `ITEMS` items."""
    if isinstance(value, str):
        value = value if len(value) <= STRING_CHARS else value[: STRING_CHARS - 1] + "…"
        # a lone surrogate (hostile text) is not UTF-8: shown as "?", never a failed write
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {str(k): trimmed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [trimmed(v) for v in value[:ITEMS]]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return trimmed(str(value))


def append(db: Database, team: str, member: str, records: list[dict[str, Any]]) -> None:
    """Add `records` to `member`'s log (written by this host and process), keep its newest
    `KEEP` lines, and notify."""
    host, pid = socket.gethostname(), os.getpid()

    def work(conn: psycopg.Connection[Any]) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO member_log (team, member, host, pid, line) "
                "VALUES (%s, %s, %s, %s, %s)",
                [(team, member, host, pid, document(trimmed(r))) for r in records],
            )
        conn.execute(
            "DELETE FROM member_log WHERE team = %s AND member = %s AND seq <= ("
            "SELECT seq FROM member_log WHERE team = %s AND member = %s "
            "ORDER BY seq DESC OFFSET %s LIMIT 1)",
            [team, member, team, member, KEEP],
        )
        notify(conn, team, log_channel_name(member))

    db.run(work, f"ship {member}'s log")


def read(db: Database, team: str, member: str, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """`member`'s log lines after `after` (a seq), oldest first, as (seq, record)."""
    rows = db.run(
        lambda c: c.execute(
            "SELECT seq, line FROM member_log WHERE team = %s AND member = %s AND seq > %s "
            "ORDER BY seq",
            [team, member, after],
        ).fetchall(),
        f"read {member}'s log",
    )
    return [(int(seq), line) for seq, line in rows if isinstance(line, dict)]


def last_host(db: Database, team: str, member: str) -> tuple[str, int] | None:
    """The host and pid of `member`'s last log line; None if it never shipped one."""
    row = db.run(
        lambda c: c.execute(
            "SELECT host, pid FROM member_log WHERE team = %s AND member = %s "
            "ORDER BY seq DESC LIMIT 1",
            [team, member],
        ).fetchone(),
        f"where {member} runs",
    )
    return (str(row[0]), int(row[1])) if row else None


class Shipper:
    """Context manager: ships one member's records from a thread of its own (module doc)."""

    def __init__(self, url: str, team: str, member: str) -> None:
        self.url = url
        self.team = text(team, "team name")
        self.member = text(member, "member name")
        self._queue: queue.Queue[Any] = queue.Queue(QUEUE_MAX)
        self._thread = threading.Thread(target=self._run, name=f"log-{member}", daemon=True)
        self.dropped = 0
        self._closed = False

    def __enter__(self) -> Shipper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def put(self, record: dict[str, Any]) -> None:
        """Queue `record` (``{"ts", "kind", ...}``) if its kind is one `swarm logs` shows."""
        if record.get("kind") not in SHIPPED:
            return
        while True:
            try:
                self._queue.put_nowait(record)
                return
            except queue.Full:  # the server has been away long: drop the oldest
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (waiting up to `timeout` seconds), then stop; once (a teammate
        whose store stopped answering closes it early, with a short wait)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)

    def _run(self) -> None:
        db = Database(self.url, application_name=f"swarm log {self.member}")
        try:
            while True:
                batch = [self._queue.get()]
                while len(batch) < 500:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(r is _STOP for r in batch)
                records = [r for r in batch if r is not _STOP]
                if records:
                    try:
                        append(db, self.team, self.member, records)
                    except (Error, psycopg.Error) as exc:  # away, or the team was deleted
                        self.dropped += len(records)
                        log.info(
                            "%s's log: %d lines not shipped: %s", self.member, len(records), exc
                        )
                if stop:
                    return
        finally:
            db.close()


class ShippingHandler(logging.Handler):
    """A `logging` handler that ships the teammate's warnings (``{"kind": "log"}``)."""

    def __init__(self, shipper: Shipper, now: Any) -> None:
        super().__init__(logging.WARNING)
        self.shipper = shipper
        self.now = now

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("protocols.pg", "psycopg")):  # never the store's own troubles
            return
        try:
            said = f"{record.levelname}:{record.name}:{record.getMessage()}"
        except (TypeError, ValueError):  # a record whose arguments do not fit its format
            self.handleError(record)
            return
        self.shipper.put({"ts": self.now(), "kind": "log", "text": said})
