"""The bridge's messages: a PostgreSQL team's inboxes and this host's inbox files, in step.

Every message is known by its identity (``msg_id``; `protocols.inbox.ids.identity_of`), which both
stores keep unique per recipient, so carrying one again is a no-op on either side:

- the inbox of a **local** member (a Claude Code member living on this host) is the union of
  both: a message unread on PostgreSQL and unknown to the file (live entries and swarm's
  record) is delivered into the file; a message in the file (live or recorded) and not on
  PostgreSQL (another local member wrote it) is stored there; once read in the file (marked
  ``read``, or deleted by its reader after swarm recorded it) it is marked read on PostgreSQL;
- the inbox file of any **other** member is only an outbox: what a local member writes there
  is stored on PostgreSQL (the recipient reads it there, on its own host), then marked read in
  the file, so it leaves the live file into the record.

A read message of a local inbox file that PostgreSQL no longer holds because retention pruned it
(sent no later than the newest pruned from that inbox: `protocols.pg.retention.pruned_through`)
is not carried back.

Nothing is acknowledged before it is on the other side: a bridge killed at any instant and
started again carries what was left, and what was carried already is not stored twice.

A pass reads an inbox's whole history (both sides) only when it changed: each inbox is
remembered, in memory, as it was when a pass over it began and ended without error (its files'
inode, size and modification time; for a local member, also the identities unread on
PostgreSQL). While those are the same, the pass over it is one ``stat`` per file and one query
of the unread. A bridge started again remembers nothing, so its first pass reads everything;
a file truncated or replaced has another signature.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from protocols.errors import Error, UnknownMember
from protocols.fs import safefs
from protocols.fs.file_cache import Signature, signature_of
from protocols.inbox.entry import InboxEntry
from protocols.inbox.mailbox import Mailbox
from protocols.pg.mailbox import PgMailbox, append_entry
from protocols.pg.retention import entry_time, pruned_through
from protocols.pg.team import require_member

log = logging.getLogger(__name__)


class InboxSync:
    """Keeps `files` (this host's inbox files) and `pg` (the team's store) in step."""

    def __init__(self, files: Mailbox, pg: PgMailbox, local: Iterable[str]) -> None:
        self.files = files
        self.pg = pg
        self.local = set(local)
        self._refused: set[tuple[str, str]] = set()  # (recipient, identity) said once
        self._done: dict[str, Any] = {}  # name -> what its inbox was when last carried whole

    def sync(self, members: Iterable[str]) -> int:
        """One pass over `members` (the roster); returns how many messages or marks moved."""
        moved = 0
        for name in members:
            try:
                if name in self.local:
                    moved += self.sync_local(name)
                else:
                    moved += self.carry_outbox(name)
            except Error as exc:  # one member's trouble: the others are still carried
                log.warning("bridge: %s's inbox: %s", name, exc)
        return moved

    def sync_local(self, name: str) -> int:
        """Both ways for a member living on this host (module doc), when either side changed."""
        before = (self._signature(name), sorted(e.identity for e in self.pg.read_unread(name)))
        if self._done.get(name) == before:
            return 0
        refused = len(self._refused)
        moved = self._sync_local(name)
        if len(self._refused) == refused:  # a refused message is tried again at every pass
            self._done[name] = before  # and after a pass that moved some, once more
        return moved

    def _sync_local(self, name: str) -> int:
        self.files.observe(name)  # what Claude Code wrote there goes into swarm's record first
        in_file = {e.identity: e for e in self.files.peek_all(name)}
        on_pg = {e.identity: e for e in self.pg.peek_all(name)}
        moved = 0
        for identity, entry in on_pg.items():
            if identity not in in_file and not entry.is_read:
                self.files.inbox(name).deliver(
                    _unread(entry).to_json_dict(), self.files.compact_after
                )
                moved += 1
        fresh = self._not_pruned(name, [e for i, e in in_file.items() if i not in on_pg])
        if fresh:
            moved += self._store(name, fresh)
        newly_read = [
            e for i, e in on_pg.items() if not e.is_read and i in in_file and in_file[i].is_read
        ]
        newly_read += [e for e in fresh if e.is_read]
        if newly_read:
            moved += self.pg.mark_read(name, newly_read)
        return moved

    def _not_pruned(self, name: str, fresh: list[InboxEntry]) -> list[InboxEntry]:
        """`fresh` less the read entries PostgreSQL pruned (module doc)."""
        if not any(e.is_read for e in fresh):
            return fresh
        through = pruned_through(self.pg.db, self.pg.team, name)
        if through is None:
            return fresh
        return [e for e in fresh if not e.is_read or not _sent_by(e, through)]

    def carry_outbox(self, name: str) -> int:
        """What was written on this host into `name`'s inbox file goes to `name` on PostgreSQL,
        then is marked read in the file (module doc)."""
        before = self._signature(name)
        if before[0] is None or self._done.get(name) == before:
            return 0
        unread = self.files.read_unread(name)
        stored = self._store(name, unread) if unread else 0
        carried = [e for e in unread if (name, e.identity) not in self._refused]
        self.files.mark_read(name, carried)
        if len(carried) == len(unread):
            self._done[name] = before
        return stored

    def _signature(self, name: str) -> tuple[Any, Any]:
        """What `name`'s inbox file and swarm's record of it are now (None for a file that
        is not there)."""
        inbox = self.files.inbox(name)
        return (inbox.signature(), _stat(inbox.archive))

    def _store(self, name: str, entries: list[InboxEntry]) -> int:
        """Store `entries` for `name` on PostgreSQL (unread; an identity there already is
        left alone); returns how many were new. A recipient PostgreSQL does not know is said
        once per message and left in the file."""

        def work(conn: Any) -> int:
            require_member(conn, self.pg.team, name)
            return sum(append_entry(conn, self.pg.team, name, _unread(e)) for e in entries)

        try:
            return int(self.pg.db.run(work, f"carry messages to {name!r}"))
        except UnknownMember as exc:
            for entry in entries:
                key = (name, entry.identity)
                if key not in self._refused:
                    self._refused.add(key)
                    log.warning("bridge: message %s not carried: %s", entry.identity, exc)
            return 0


def _sent_by(entry: InboxEntry, moment: datetime) -> bool:
    """The entry's timestamp is `moment` or earlier (one that does not parse: not)."""
    sent = entry_time(entry.timestamp)
    return sent is not None and sent <= moment


def _stat(path: Path) -> Signature | None:
    try:
        return signature_of(safefs.stat_of(path))
    except FileNotFoundError:
        return None


def _unread(entry: InboxEntry) -> InboxEntry:
    """The entry as the other side stores a new message: the same keys, unread."""
    return entry if entry.read is False else entry.updated(read=False)
