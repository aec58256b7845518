"""`PgMailbox`: a team's messages in PostgreSQL, with `protocols.inbox.mailbox.Mailbox`'s methods.

- a send is one ``INSERT`` of the entry (the very `InboxEntry` the file store writes) with its
  ``msg_id`` unique per team and recipient, and ``ON CONFLICT DO NOTHING``: a send repeated with
  the same ``message_id`` (a retry after a lost answer) stores the message once. The same
  transaction checks the recipient is a member and notifies the team's channel. It returns once
  the commit is on the server's disk (``synchronous_commit``);
- a broadcast is one transaction: every other member gets its copy, or none does;
- reading gives the unread entries (the live queue, an index of unread rows only); marking read
  is by identity and sets ``read_at``: the row stays, as the history (`peek_all`), so one
  ``msg_id`` is delivered once however often it is sent or marked;
- `wait` looks, then sleeps on the team's ``LISTEN`` connection (`protocols.pg.notify`) until a
  notification for the reader or the next rescan.

Unlike the file store there is no separate archive file and no compaction: `read_all` is the
live queue (unread entries), `read_archive` the read ones, `compact` does nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import psycopg
from pydantic import ValidationError

from protocols.errors import BroadcastRefused
from protocols.inbox.entry import InboxEntry
from protocols.inbox.ids import msg_id_for
from protocols.inbox.mailbox import (
    BROADCAST,
    EntrySigner,
    first_match,
    is_structured_text,
    new_entry,
    post_each,
)
from protocols.messages.models import StructuredMessage
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.notify import Listener, notify
from protocols.pg.team import PgTeamFile, require_member, roster
from protocols.pg.watch import PgWatcher
from protocols.watch.wakeup import DEFAULT_RESCAN_S

if TYPE_CHECKING:
    from protocols.inbox.mailbox import Batch
    from protocols.inbox.shape import PlainEntry

log = logging.getLogger(__name__)

Conn = psycopg.Connection[Any]


def append_entry(conn: Conn, team: str, to: str, entry: InboxEntry) -> bool:
    """Insert `entry` into `to`'s inbox in the caller's transaction and notify; False when an
    entry with its identity is there already (read or not)."""
    raw = entry.to_json_dict()
    inserted = conn.execute(
        "INSERT INTO messages (team, recipient, msg_id, sender, entry) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (team, recipient, msg_id) DO NOTHING",
        [
            team,
            text(to, "recipient"),
            text(entry.identity, "message id"),
            text(entry.from_, "sender"),
            document(raw),
        ],
    ).rowcount
    if inserted:
        notify(conn, team, to)
    return bool(inserted)


class PgMailbox:
    """The inboxes of one team, in the store at `db`."""

    def __init__(
        self,
        db: Database,
        team: str,
        rescan_s: float = DEFAULT_RESCAN_S,
        signer: EntrySigner | None = None,
        on_read: Callable[[set[str]], None] | None = None,
    ) -> None:
        self.db = db
        self.team = text(team, "team name")
        self.rescan_s = rescan_s
        self.signer = signer
        self.on_read = on_read

    def listener(self) -> Listener:
        """A connection listening for this team's sends (for many `wait`s in a row)."""
        return Listener(self.db, self.team)

    # sending

    def send(
        self,
        to: str,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]:
        """Store a message for `to` (every other member, for ``"*"``); returns the entries.

        `UnknownMember` for a recipient not in the team, `BroadcastRefused` for a structured
        message to ``"*"``, `UnstorableValue` for a name holding NUL, `StoreUnavailable` when
        the server stayed out of reach: then sending again with the same `message_id` is safe.
        """
        if to == BROADCAST:
            return self.broadcast(
                body, sender=sender, summary=summary, color=color, message_id=message_id
            )
        entry = self._signed(new_entry(body, sender, summary, color, message_id))
        text(to, "recipient")

        def work(conn: Conn) -> list[InboxEntry]:
            require_member(conn, self.team, to)
            append_entry(conn, self.team, to, entry)
            return [entry]

        return self.db.run(work, f"send to {to!r}")

    def post(
        self,
        to: str,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """`send`, returning the entries stored as JSON documents (`Mailbox.post`'s answer)."""
        entries = self.send(
            to, body, sender=sender, summary=summary, color=color, message_id=message_id
        )
        return [e.to_json_dict() for e in entries]

    def post_many(
        self,
        to: str,
        messages: Batch,
        *,
        sender: str,
        color: str | None = None,
    ) -> list[dict[str, Any]]:
        """Several messages, each ``(body, summary, message_id)``, to one member in one
        transaction, in this order (`Mailbox.post_many`): all of them are stored, or none."""
        if to == BROADCAST:
            return post_each(self.post, messages, sender, color)
        entries = [
            self._signed(new_entry(body, sender, summary, color, message_id))
            for body, summary, message_id in messages
        ]
        text(to, "recipient")

        def work(conn: Conn) -> None:
            require_member(conn, self.team, to)
            for entry in entries:
                append_entry(conn, self.team, to, entry)

        self.db.run(work, f"send to {to!r}")
        return [e.to_json_dict() for e in entries]

    def broadcast(
        self,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]:
        """A plain message to every member but the sender, all in one transaction."""
        body_text = body if isinstance(body, str) else body.encode()
        if not isinstance(body, str) or is_structured_text(body_text):
            raise BroadcastRefused(
                "structured protocol messages cannot be broadcast to '*'; "
                "send them to one member by name"
            )
        entry = new_entry(body_text, sender, summary, color, message_id)

        def work(conn: Conn) -> list[InboxEntry]:
            written = []
            for name in roster(conn, self.team):
                if name == sender:
                    continue
                one_id = f"{entry.id}-{name}"
                one = self._signed(entry.updated(id=one_id, msg_id=msg_id_for(one_id)))
                append_entry(conn, self.team, name, one)
                written.append(one)
            return written

        return self.db.run(work, "broadcast")

    def broadcast_recipients(self, sender: str) -> tuple[list[str], list[str]]:
        names = self.db.run(lambda c: roster(c, self.team), "members")
        return [n for n in names if n != sender], []

    def send_unless(
        self,
        to: str,
        body: str | StructuredMessage,
        conflict: Callable[[dict[str, Any]], bool],
        *,
        sender: str,
        summary: str | None = None,
    ) -> tuple[InboxEntry | None, dict[str, Any] | None]:
        """Compare-and-set: store the message for `to` unless one of `to`'s entries (unread,
        or among the last `SEND_UNLESS_HISTORY` read) makes `conflict` true. One transaction
        under a lock on `to`'s inbox: exactly one of several concurrent senders wins."""
        entry = self._signed(new_entry(body, sender, summary))
        text(to, "recipient")

        def work(conn: Conn) -> tuple[InboxEntry | None, dict[str, Any] | None]:
            require_member(conn, self.team, to)
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"inbox\x1f{self.team}\x1f{to}"],
            )
            rows = conn.execute(
                "(SELECT seq, entry FROM messages WHERE team = %s AND recipient = %s "
                "AND read_at IS NULL) UNION ALL (SELECT seq, entry FROM messages "
                "WHERE team = %s AND recipient = %s AND read_at IS NOT NULL "
                "ORDER BY seq DESC LIMIT %s) ORDER BY seq",
                [self.team, to, self.team, to, SEND_UNLESS_HISTORY],
            ).fetchall()
            for _, item in rows:
                if conflict(item):
                    return None, item
            append_entry(conn, self.team, to, entry)
            return entry, None

        return self.db.run(work, f"send to {to!r}")

    def _signed(self, entry: InboxEntry) -> InboxEntry:
        if self.signer is None:
            return entry
        raw = entry.to_json_dict()
        signed = self.signer.signed(raw)
        return entry if signed is raw else InboxEntry.from_json_dict(signed)

    # reading

    def _select(self, agent: str, which: str) -> list[InboxEntry]:
        condition = {"unread": "AND read_at IS NULL", "read": "AND read_at IS NOT NULL", "all": ""}
        query = (
            "SELECT entry, read_at IS NOT NULL FROM messages WHERE team = %s AND recipient = %s "
            + condition[which]
            + " ORDER BY seq"
        )
        rows = self.db.run(
            lambda c: c.execute(query, [self.team, text(agent, "member")]).fetchall()
        )
        return [entry for raw, read in rows if (entry := _entry(raw, read)) is not None]

    def read_all(self, agent: str) -> list[InboxEntry]:
        """The live queue: the unread entries, oldest first (read ones are history at once)."""
        return self._select(agent, "unread")

    def read_unread(self, agent: str) -> list[InboxEntry]:
        """Unread entries, oldest first, without marking them."""
        return self._select(agent, "unread")

    def read_archive(self, agent: str) -> list[InboxEntry]:
        """The read entries, oldest first."""
        return self._select(agent, "read")

    def peek_all(self, agent: str) -> list[InboxEntry]:
        """Every message `agent` was ever sent, each once, oldest first."""
        return self._select(agent, "all")

    def peek_plain(self, agent: str) -> list[InboxEntry]:
        """`peek_all` (`Mailbox.peek_plain`: the store hands models)."""
        return self.peek_all(agent)

    def peek_protocol(self, agent: str) -> list[InboxEntry]:
        """`peek_plain` (`Mailbox.peek_protocol`: the store reads no file to skip)."""
        return self.peek_plain(agent)

    def peek_recent(self, agent: str, count: int) -> list[InboxEntry]:
        """The last `count` entries of `peek_plain` (`Mailbox.peek_recent`)."""
        return self.peek_plain(agent)[-count:] if count > 0 else []

    def observe(self, agent: str) -> int:
        """Nothing to record: no reader deletes a stored message (`Mailbox.observe`)."""
        return 0

    def observe_team(self) -> int:
        return 0

    def compact(self, agent: str, keep_read: int = 0) -> None:
        """Nothing to do: read entries leave the live queue as they are marked."""

    def peek_unread(self, agent: str) -> list[InboxEntry]:
        """`read_unread`: a query takes no lock."""
        return self.read_unread(agent)

    def unread_changed(self, agent: str, seen: object) -> tuple[list[InboxEntry], object]:
        """`read_unread`, always in full: a member's live queue is small."""
        return self.read_unread(agent), None

    def team_file(self) -> PgTeamFile:
        return PgTeamFile(self.db, self.team)

    def mark_read(self, agent: str, entries: Iterable[InboxEntry | PlainEntry]) -> int:
        """Mark exactly these entries read (by identity); returns how many were marked."""
        wanted = {e.identity for e in entries}
        if not wanted:
            return 0
        marked = self.db.run(
            lambda c: (
                c.execute(
                    "UPDATE messages SET read_at = now() WHERE team = %s AND recipient = %s "
                    "AND msg_id = ANY(%s) AND read_at IS NULL",
                    [self.team, text(agent, "member"), sorted(wanted)],
                ).rowcount
            ),
            "mark read",
        )
        if self.on_read is not None:
            self.on_read(wanted)
        return marked

    # waiting

    def wait(
        self,
        agent: str,
        timeout: float,
        watcher: Listener | PgWatcher | None = None,
        until: Callable[[], bool] | None = None,
    ) -> list[InboxEntry]:
        """Unread entries as soon as there are any, or [] after `timeout` seconds.

        Woken by the team's notifications, and looks again every `rescan_s` seconds whatever
        it heard. Pass a `watcher` (or its listener) to keep one connection across many
        waits. `until` ends the wait early, with [], once it returns True (looked at on every
        wake-up).
        """
        listener = watcher.listener if isinstance(watcher, PgWatcher) else watcher
        if listener is None:
            with self.listener() as own:
                return self.wait(agent, timeout, own, until)
        deadline = time.monotonic() + timeout
        while True:
            if until is not None and until():
                return []
            unread = self.read_unread(agent)
            if unread:
                return unread
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            listener.wait({agent}, min(remaining, self.rescan_s))

    def await_message(
        self,
        agent: str,
        match: Callable[[Any], bool],
        timeout: float,
        watcher: Listener | PgWatcher | None = None,
        mark: bool = True,
        sender: str | None = None,
    ) -> tuple[InboxEntry, Any] | None:
        """The first unread structured message that `match` accepts (from `sender`, if given);
        with `mark`, only that entry is marked read. None after `timeout` seconds."""
        listener = watcher.listener if isinstance(watcher, PgWatcher) else watcher
        if listener is None:
            with self.listener() as own:
                return self.await_message(agent, match, timeout, own, mark, sender)
        deadline = time.monotonic() + timeout
        while True:
            found = first_match(self.read_unread(agent), match, sender, agent)
            if found is not None:
                if mark:
                    self.mark_read(agent, [found[0]])
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            listener.wait({agent}, min(remaining, self.rescan_s))

    def receive(
        self, agent: str, timeout: float, watcher: Listener | PgWatcher | None = None
    ) -> list[InboxEntry]:
        """Wait for unread entries, mark them read and return them (at least once: a crash
        between the two leaves them unread)."""
        entries = self.wait(agent, timeout, watcher)
        self.mark_read(agent, entries)
        return entries


SEND_UNLESS_HISTORY = 200  # read entries `send_unless` looks at, newest first


def _entry(raw: Any, read: bool) -> InboxEntry | None:
    """The stored entry with its read mark; None (logged) for a row that is not a message
    (written by another program), as the file store skips such items."""
    try:
        entry = InboxEntry.from_json_dict(raw)
    except (ValidationError, TypeError, ValueError):
        log.warning("a stored message that is not an inbox entry was skipped: %r", raw)
        return None
    return entry if entry.read is read else entry.updated(read=read)
