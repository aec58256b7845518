"""Delivering messages between the members of a team through their inbox files.

`Mailbox` sends, broadcasts, reads, marks read and waits, on the inbox files of one team.

Guarantees:
- a message goes only to a member of the team: an unknown recipient is an error and no orphan
  inbox is created; ``"*"`` reaches every member but the sender, and refuses structured messages;
- a send either lands in the inbox (under the lock, written atomically) or raises: it is never
  dropped; a send repeated with the same ``message_id`` is stored once;
- entries are marked read **by identity**: a message that arrives between a read and its mark
  stays unread;
- read entries are compacted into the archive, unread ones are never moved.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from protocols.clock import now_iso
from protocols.errors import BroadcastRefused, ProtocolsError, UnknownMember
from protocols.inbox import InboxEntry, InboxFile, identity_of, is_read
from protocols.jsonio import Durability
from protocols.locks import redo_if_lock_lost
from protocols.messages import StructuredMessage, decode
from protocols.names import checked_component
from protocols.paths import TeamPaths
from protocols.team import TeamFile
from protocols.watch import DEFAULT_RESCAN_S, InboxWatcher

log = logging.getLogger(__name__)

BROADCAST = "*"
DEFAULT_COMPACT_AFTER = 32


def new_message_id() -> str:
    return f"msg-{time.time_ns() // 1_000_000}-{secrets.token_hex(6)}"


class Mailbox:
    """The inboxes of one team, on disk."""

    def __init__(
        self,
        paths: TeamPaths,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
        compact_after: int = DEFAULT_COMPACT_AFTER,
        rescan_s: float = DEFAULT_RESCAN_S,
    ) -> None:
        self.paths = paths
        self.team = TeamFile(paths, durability)
        self.durability = durability
        self.lock_timeout = lock_timeout
        self.compact_after = compact_after
        self.rescan_s = rescan_s

    def inbox(self, agent: str) -> InboxFile:
        return InboxFile(
            self.paths.inbox(agent),
            self.paths.inbox_archive(agent),
            self.durability,
            self.lock_timeout,
        )

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
        """Append a message to `to`'s inbox (or every other member's, for ``"*"``).

        Returns the entries written. Raises `UnknownMember` for a recipient not in the team,
        `BroadcastRefused` for a structured message to ``"*"``, `LockTimeout` if the inbox
        stayed locked: then nothing was written to that inbox. Sending again with the same
        `message_id` after a failure stores the message once.
        """
        if to == BROADCAST:
            return self.broadcast(
                body, sender=sender, summary=summary, color=color, message_id=message_id
            )
        self._require_members([to])
        entry = self._entry(body, sender, summary, color, message_id)
        return [self._append(to, entry, dedupe=message_id is not None)]

    def broadcast(
        self,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]:
        """Send a plain message to every member but the sender, one inbox at a time.

        If an inbox cannot be written, the error is raised after the earlier ones were; a
        retry with the same `message_id` skips the members who already have it. A member whose
        name cannot be an inbox file (``../x``, written into ``config.json`` by another
        program) is skipped with a warning: everyone else still gets the message.
        """
        text = body if isinstance(body, str) else body.encode()
        if not isinstance(body, str) or _is_structured(text):
            raise BroadcastRefused(
                "structured protocol messages cannot be broadcast to '*'; "
                "send them to one member by name"
            )
        recipients, skipped = self.broadcast_recipients(sender)
        for name in skipped:
            log.warning("broadcast: skipped member %r: not a usable inbox name", name)
        entry = self._entry(text, sender, summary, color, message_id)
        written = []
        for name in recipients:
            one = entry.updated(id=f"{entry.id}-{name}")
            written.append(self._append(name, one, dedupe=message_id is not None))
        return written

    def broadcast_recipients(self, sender: str) -> tuple[list[str], list[str]]:
        """Who a broadcast from `sender` reaches, and the members skipped for a name that
        cannot be an inbox file."""
        recipients, skipped = [], []
        for name in self.team.member_names():
            try:
                checked_component(name, "member name")
            except ProtocolsError:
                skipped.append(name)
                continue
            if name != sender:
                recipients.append(name)
        return recipients, skipped

    def _entry(
        self,
        body: str | StructuredMessage,
        sender: str,
        summary: str | None,
        color: str | None,
        message_id: str | None,
    ) -> InboxEntry:
        text = body if isinstance(body, str) else body.encode()
        return InboxEntry.model_validate(
            {
                "from": sender,
                "text": text,
                "summary": summary,
                "timestamp": now_iso(),
                "color": color,
                "read": False,
                "id": message_id or new_message_id(),
            }
        )

    @redo_if_lock_lost
    def _append(self, to: str, entry: InboxEntry, dedupe: bool) -> InboxEntry:
        inbox = self.inbox(to)
        with inbox.lock():
            loaded = inbox.load_locked()
            if dedupe and (
                any(isinstance(i, dict) and i.get("id") == entry.id for i in loaded.items)
                or entry.identity in inbox.archived_identities()
            ):
                return entry
            inbox.append_locked(loaded, entry.to_json_dict(), self.compact_after)
        return entry

    @redo_if_lock_lost
    def send_unless(
        self,
        to: str,
        body: str | StructuredMessage,
        conflict: Callable[[dict[str, Any]], bool],
        *,
        sender: str,
        summary: str | None = None,
    ) -> tuple[InboxEntry | None, dict[str, Any] | None]:
        """Compare-and-set: append the message to `to`'s inbox unless an entry for which
        `conflict` is true is there already (in the live inbox or the recent archive), all
        under the inbox's lock. Returns (the entry written, None) or (None, the conflicting
        item): exactly one of several concurrent senders wins."""
        self._require_members([to])
        entry = self._entry(body, sender, summary, None, None)
        inbox = self.inbox(to)
        with inbox.lock():
            loaded = inbox.load_locked()
            for item in [*inbox.archive_tail(), *loaded.items]:
                if isinstance(item, dict) and conflict(item):
                    return None, item
            inbox.append_locked(loaded, entry.to_json_dict(), self.compact_after)
        return entry, None

    def _require_members(self, names: Sequence[str]) -> None:
        members = self.team.member_names()
        for name in names:
            checked_component(name, "recipient")
            if name not in members:
                raise UnknownMember(
                    f"no member named {name!r} in team {self.paths.team!r}; "
                    f"members are: {', '.join(members)} (or '*' for everyone)"
                )

    # reading

    def read_all(self, agent: str) -> list[InboxEntry]:
        """Every entry in the live inbox, read or not, oldest first."""
        return self.inbox(agent).load().entries()

    def read_unread(self, agent: str) -> list[InboxEntry]:
        """Unread entries, oldest first, without marking them."""
        return self.inbox(agent).load().unread()

    def read_archive(self, agent: str) -> list[InboxEntry]:
        return self.inbox(agent).read_archive()

    def peek_all(self, agent: str) -> list[InboxEntry]:
        """The archive, then the live inbox, read without locks and without ever writing."""
        inbox = self.inbox(agent)
        return inbox.read_archive() + inbox.peek().entries()

    def mark_read(self, agent: str, entries: Iterable[InboxEntry]) -> int:
        """Mark exactly these entries read (by identity); returns how many were marked."""
        wanted = {e.identity for e in entries}
        return self._mark_read(agent, wanted) if wanted else 0

    @redo_if_lock_lost
    def _mark_read(self, agent: str, wanted: set[str]) -> int:
        inbox = self.inbox(agent)
        with inbox.lock():
            loaded = inbox.load_locked()
            marked = 0
            for item in loaded.items:
                if isinstance(item, dict) and not is_read(item) and identity_of(item) in wanted:
                    item["read"] = True
                    marked += 1
            if marked:
                inbox.store_locked(loaded, self.compact_after, reads_on_disk=False)
        return marked

    @redo_if_lock_lost
    def compact(self, agent: str, keep_read: int = 0) -> None:
        """Move read entries to the archive now (normally done as the inbox is written)."""
        inbox = self.inbox(agent)
        with inbox.lock():
            inbox.store_locked(inbox.load_locked(), keep_read)

    def wait(
        self,
        agent: str,
        timeout: float,
        watcher: InboxWatcher | None = None,
        until: Callable[[], bool] | None = None,
    ) -> list[InboxEntry]:
        """Unread entries as soon as there are any, or [] after `timeout` seconds.

        Wakes within milliseconds of a write (inotify) and rescans every `rescan_s` seconds in
        case an event was lost. Pass a started `watcher` to keep one across many waits. `until`
        ends the wait early, with [], once it returns True (looked at on every wake-up, so
        within `rescan_s`; setting ``watcher.changed`` makes it look at once); what it raises
        ends the wait too.
        """
        if watcher is None:
            with InboxWatcher(self.paths.inbox(agent), rescan_s=self.rescan_s) as own:
                return self.wait(agent, timeout, own, until)
        deadline = time.monotonic() + timeout
        inbox = self.inbox(agent)
        seen: tuple[int, int, int] | None = None
        while True:
            if until is not None and until():
                return []
            watcher.clear()
            signature = inbox.signature()
            if signature is None or signature != seen:
                loaded = inbox.load()
                unread = loaded.unread()
                if unread:
                    return unread
                seen = loaded.signature
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            watcher.wait(remaining)

    def await_message(
        self,
        agent: str,
        match: Callable[[Any], bool],
        timeout: float,
        watcher: InboxWatcher | None = None,
        mark: bool = True,
        sender: str | None = None,
    ) -> tuple[InboxEntry, Any] | None:
        """The first unread structured message in `agent`'s inbox that `match` accepts (and,
        with `sender`, that came from that member).

        Waits up to `timeout` seconds. With `mark`, only that entry is marked read; every other
        message stays unread for the caller's normal handling. Malformed structured messages are
        logged and skipped. Returns (entry, message), or None on timeout.
        """
        if watcher is None:
            with InboxWatcher(self.paths.inbox(agent), rescan_s=self.rescan_s) as own:
                return self.await_message(agent, match, timeout, own, mark, sender)
        deadline = time.monotonic() + timeout
        while True:
            watcher.clear()
            for entry in self.read_unread(agent):
                if sender is not None and entry.from_ != sender:
                    continue
                try:
                    message = entry.structured()
                except ProtocolsError as exc:
                    log.error("skipping a malformed message in %s's inbox: %s", agent, exc)
                    continue
                if message is not None and match(message):
                    if mark:
                        self.mark_read(agent, [entry])
                    return entry, message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            watcher.wait(remaining)

    def receive(
        self, agent: str, timeout: float, watcher: InboxWatcher | None = None
    ) -> list[InboxEntry]:
        """Wait for unread entries, mark them read and return them.

        A crash between the wait and the mark leaves them unread: they are delivered again
        (at least once), never lost.
        """
        entries = self.wait(agent, timeout, watcher)
        self.mark_read(agent, entries)
        return entries


def _is_structured(text: str) -> bool:
    try:
        return decode(text) is not None
    except ValueError:
        return True
