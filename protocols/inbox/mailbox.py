"""Delivering messages between the members of a team through their inbox files.

`Mailbox` sends, broadcasts, reads, marks read and waits, on the inbox files of one team.

Guarantees:
- a message goes only to a member of the team: an unknown recipient is an error and no orphan
  inbox is created; ``"*"`` reaches every member but the sender, and refuses structured messages;
- a send either lands in the inbox (under the lock, written atomically) or raises: it is never
  dropped; a send repeated with the same ``message_id`` is stored once;
- entries are marked read **by identity**: a message that arrives between a read and its mark
  stays unread;
- every message sent is in the recipient's record (`InboxFile.history`), whoever reads it and
  however (Claude Code 2.1.160 and later delete what they read), and read entries leave the
  live inbox only once recorded; unread ones are never moved;
- each entry carries Claude Code's ``msgV``, ``msg_id`` and ``type``; one ``msg_id`` is
  delivered once;
- with a `signer` (the lead's key, `protocols.team.keyfile.KeyFileSigner`), an entry from a lead
  name carries ``lead_sig`` (`protocols.team.signing`), so a teammate started with the lead's verify
  key obeys it; `on_read` hears the identities of the entries this mailbox marks read (a
  teammate's `protocols.team.signing.Verifier` spends their message ids).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from protocols.clock import now_iso
from protocols.errors import BroadcastRefused, ProtocolsError, UnknownMember
from protocols.fs.file_cache import Signature
from protocols.fs.jsonio import Durability
from protocols.fs.locks import redo_if_lock_lost
from protocols.inbox.file import MSG_V, InboxFile
from protocols.inbox.ids import msg_id_for
from protocols.inbox.reading import entry_of
from protocols.logs import logger
from protocols.names import checked_component, unknown_member_text
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from protocols.trace_context import TRACE_KEY, outgoing_carrier

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry
    from protocols.messages.models import StructuredMessage
    from protocols.watch.wakeup import InboxWatcher

    # several messages to one member, each (body, summary, message id): `Mailbox.post_many`
    Batch: TypeAlias = Sequence[tuple[str | StructuredMessage, str | None, str | None]]

log = logger(__name__)

BROADCAST = "*"
DEFAULT_COMPACT_AFTER = 32
BROADCAST_THREADS = 16  # at most, inboxes a broadcast writes at the same time (`broadcast_threads`)
MAX_KEPT_INBOXES = 1024


class EntrySigner(Protocol):
    def signed(self, entry: dict[str, Any]) -> dict[str, Any]:
        """`entry` with its ``lead_sig`` when it is from a lead name, else as it is."""
        ...


def new_message_id() -> str:
    # os.urandom(n).hex() is secrets.token_hex(n), without loading hmac and OpenSSL
    return f"msg-{time.time_ns() // 1_000_000}-{os.urandom(6).hex()}"


def new_item(
    body: str | StructuredMessage,
    sender: str,
    summary: str | None = None,
    color: str | None = None,
    message_id: str | None = None,
) -> dict[str, Any]:
    """A new unread entry as every store writes it: Claude Code's keys in `InboxEntry`'s order
    (none left null), swarm's ``id`` (the given `message_id`, else a new one) and the
    ``msg_id`` derived from it. No model is built: a plain send loads no pydantic."""
    text = body if isinstance(body, str) else body.encode()
    swarm_id = message_id or new_message_id()
    item: dict[str, Any] = {"from": sender, "text": text}
    if summary is not None:
        item["summary"] = summary
    item["timestamp"] = now_iso()
    if color is not None:
        item["color"] = color
    item.update(read=False, id=swarm_id, msgV=MSG_V, msg_id=msg_id_for(swarm_id), type="message")
    if carrier := outgoing_carrier():  # an extra key Claude Code ignores (docs/telemetry.md)
        item[TRACE_KEY] = carrier
    return item


def new_entry(
    body: str | StructuredMessage,
    sender: str,
    summary: str | None = None,
    color: str | None = None,
    message_id: str | None = None,
) -> InboxEntry:
    """`new_item`, as a model."""
    return entry_of(new_item(body, sender, summary, color, message_id))


def is_structured_text(text: str) -> bool:
    """Whether `text` is (or tries to be) a structured protocol message: a known type, valid or
    not."""
    if not text.lstrip().startswith("{"):
        return False  # not a JSON object: no need to load the message models
    from protocols.messages.models import decode

    try:
        return decode(text) is not None
    except ValueError:
        return True


def first_match(
    entries: Iterable[InboxEntry],
    match: Callable[[Any], bool],
    sender: str | None,
    agent: str,
) -> tuple[InboxEntry, Any] | None:
    """The first of `entries` (from `sender`, if given) holding a structured message that `match`
    accepts, with that message; a malformed one is logged and skipped (every store's
    `await_message`)."""
    for entry in entries:
        if sender is not None and entry.from_ != sender:
            continue
        try:
            message = entry.structured()
        except ProtocolsError as exc:
            log.error("skipping a malformed message in %s's inbox: %s", agent, exc)
            continue
        if message is not None and match(message):
            return entry, message
    return None


def broadcast_threads(wall_s: float, cpu_s: float) -> int:
    """How many inboxes a broadcast writes side by side, from the wall and CPU time of its first
    write: as many as keep one core busy while the others wait for their fsyncs (wall / CPU),
    at least 2, at most `BROADCAST_THREADS`. On a disk whose fsyncs are slow they overlap and
    the file system commits them together (200 members: ~0.1 s, not seconds). On one whose
    fsyncs are quick, more threads only contend for the interpreter's lock and the directory:
    200 inboxes on this project's 2-core machine (2026-11-28) took 358 ms of CPU with 16
    threads and 173 ms with 2, in the same wall time, and CPU is what the 200 teammates woken
    by it need at that moment."""
    if cpu_s <= 0:
        return BROADCAST_THREADS
    return max(2, min(BROADCAST_THREADS, math.ceil(wall_s / cpu_s)))


def post_each(
    post: Callable[..., list[dict[str, Any]]],
    messages: Batch,
    sender: str,
    color: str | None,
) -> list[dict[str, Any]]:
    """`post_many` to ``"*"`` on every store: each message broadcast by `post` in turn (a
    broadcast writes many inboxes: there is no one write to share)."""
    return [
        item
        for body, summary, message_id in messages
        for item in post(
            BROADCAST, body, sender=sender, summary=summary, color=color, message_id=message_id
        )
    ]


class Mailbox:
    """The inboxes of one team, on disk."""

    def __init__(
        self,
        paths: TeamPaths,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
        compact_after: int = DEFAULT_COMPACT_AFTER,
        rescan_s: float | None = None,
        signer: EntrySigner | None = None,
        on_read: Callable[[set[str]], None] | None = None,
    ) -> None:
        self.paths = paths
        self.signer = signer
        self.on_read = on_read
        self.team = TeamFile(paths, durability)
        self.durability = durability
        self.lock_timeout = lock_timeout
        self.compact_after = compact_after
        self._inboxes: dict[str, InboxFile] = {}
        self._rescan_s = rescan_s  # None: `protocols.watch.wakeup.DEFAULT_RESCAN_S`
        self._observed: dict[str, Signature] = {}  # each inbox as `observe_team` last saw it

    @property
    def rescan_s(self) -> float:
        """How often a wait looks again without being woken (the watcher loads when a wait
        needs it: a look at the inboxes never does)."""
        from protocols.watch.wakeup import DEFAULT_RESCAN_S

        return DEFAULT_RESCAN_S if self._rescan_s is None else self._rescan_s

    def team_file(self) -> TeamFile:
        """The mailbox's reader of config.json, for its member checks; share it (it parses the
        file once after a change, not once per reader: 200 members, ~1 ms each)."""
        return self.team

    def peek_unread(self, agent: str) -> list[InboxEntry]:
        """The unread entries, read without the inbox's lock and never written."""
        return [entry for entry in self.inbox(agent).peek().entries() if not entry.read]

    def unread_changed(self, agent: str, seen: object) -> tuple[list[InboxEntry], object]:
        """The unread entries and the inbox's signature as read; [] at once while the inbox's
        signature is still `seen` (a stat, no read)."""
        inbox = self.inbox(agent)
        signature = inbox.signature()
        if signature is not None and signature == seen:
            return [], seen
        loaded = inbox.load()
        return list(loaded.unread()), loaded.signature

    def inbox(self, agent: str) -> InboxFile:
        """The inbox file of `agent` (one object per name, kept: its paths are worked out once)."""
        inbox = self._inboxes.get(agent)
        if inbox is None:
            inbox = InboxFile(
                self.paths.inbox(agent),
                self.paths.inbox_archive(agent),
                self.durability,
                self.lock_timeout,
                record_summary=self.paths.record_summary(agent),
            )
            if len(self._inboxes) < MAX_KEPT_INBOXES:
                self._inboxes[agent] = inbox
        return inbox

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
        items = self.post(
            to, body, sender=sender, summary=summary, color=color, message_id=message_id
        )
        return [entry_of(item) for item in items]

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
        """`send`, returning the entries written as they are in the inbox files: no model is
        built, so a plain message is sent without loading pydantic (``swarm send``)."""
        if to == BROADCAST:
            return self._broadcast(body, sender, summary, color, message_id)
        self._require_members([to])
        item = new_item(body, sender, summary, color, message_id)
        return [self._append(to, item)]

    def post_many(
        self,
        to: str,
        messages: Batch,
        *,
        sender: str,
        color: str | None = None,
    ) -> list[dict[str, Any]]:
        """Several messages, each ``(body, summary, message_id)``, to one member: separate
        entries, in this order, in one write of its inbox (a teammate's answer and its idle
        notification). As `post` otherwise: each id is stored once, and a failure writes none
        of them (a retry with the same ids completes the rest)."""
        if to == BROADCAST:
            return post_each(self.post, messages, sender, color)
        self._require_members([to])
        items = [
            self._signed(new_item(body, sender, summary, color, message_id))
            for body, summary, message_id in messages
        ]
        self.inbox(to).deliver_many(items, self.compact_after)
        return items

    def broadcast(
        self,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]:
        """Send a plain message to every member but the sender (several inboxes at a time).

        If an inbox cannot be written, the error is raised once every other one was tried; a
        retry with the same `message_id` skips the members who already have it. A member whose
        name cannot be an inbox file (``../x``, written into ``config.json`` by another
        program) is skipped with a warning: everyone else still gets the message.
        """
        items = self._broadcast(body, sender, summary, color, message_id)
        return [entry_of(item) for item in items]

    def _broadcast(
        self,
        body: str | StructuredMessage,
        sender: str,
        summary: str | None,
        color: str | None,
        message_id: str | None,
    ) -> list[dict[str, Any]]:
        text = body if isinstance(body, str) else body.encode()
        if not isinstance(body, str) or is_structured_text(text):
            raise BroadcastRefused(
                "structured protocol messages cannot be broadcast to '*'; "
                "send them to one member by name"
            )
        recipients, skipped = self.broadcast_recipients(sender)
        for name in skipped:
            log.warning("broadcast: skipped member %r: not a usable inbox name", name)
        item = new_item(text, sender, summary, color, message_id)
        ones = []
        for name in recipients:
            one_id = f"{item['id']}-{name}"
            ones.append((name, {**item, "id": one_id, "msg_id": msg_id_for(one_id)}))
        if len(ones) <= 1:
            return [self._append(name, one) for name, one in ones]
        # the first inbox alone, timed: it says how many to write side by side after it
        started, cpu = time.monotonic(), time.thread_time()
        first: dict[str, Any] | Exception
        try:
            first = self._append(*ones[0])
        except Exception as exc:  # raised once every other one was tried
            first = exc
        threads = broadcast_threads(time.monotonic() - started, time.thread_time() - cpu)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(threads, len(ones) - 1)) as pool:
            futures = [pool.submit(self._append, name, one) for name, one in ones[1:]]
        if isinstance(first, Exception):
            raise first
        return [first, *(future.result() for future in futures)]  # the first failure, if any

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

    def _signed(self, item: dict[str, Any]) -> dict[str, Any]:
        return item if self.signer is None else self.signer.signed(item)

    def _append(self, to: str, item: dict[str, Any]) -> dict[str, Any]:
        """Deliver `item` to `to`'s inbox, group-committed with concurrent senders
        (`protocols.inbox.spool`); one identity is stored once, so a retry is harmless."""
        item = self._signed(item)
        self.inbox(to).deliver(item, self.compact_after)
        return item

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
        item = self._signed(new_item(body, sender, summary, None, None))
        inbox = self.inbox(to)
        with inbox.lock():
            loaded = inbox.load_locked()
            for existing in [*inbox.archive_tail(), *loaded.items]:
                if isinstance(existing, dict) and conflict(existing):
                    return None, existing
            inbox.append_locked(loaded, [item], self.compact_after)
        return entry_of(item), None

    def _require_members(self, names: Sequence[str]) -> None:
        members = self.team.member_names()
        for name in names:
            checked_component(name, "recipient")
            if name not in members:
                text = unknown_member_text(name, self.paths.team, members)
                raise UnknownMember(f"{text} (or '*' for everyone)")

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
        """Every message `agent` was ever sent, each once, oldest first (`InboxFile.history`),
        read without locks and without ever writing."""
        return self.inbox(agent).history()

    def peek_plain(self, agent: str) -> list[InboxEntry | PlainEntry]:
        """`peek_all` for a reader that only shows the entries: one that is plainly an entry is
        read without the model (`InboxFile.plain_history`)."""
        return self.inbox(agent).plain_history()

    def peek_protocol(self, agent: str) -> list[InboxEntry | PlainEntry]:
        """The entries of `peek_plain` that may be requests to the lead or its answers, and
        every live one (`InboxFile.protocol_history`): the whole record is not parsed."""
        return self.inbox(agent).protocol_history()

    def peek_recent(self, agent: str, count: int) -> list[InboxEntry | PlainEntry]:
        """The last `count` entries of `peek_plain`, read from the record's tail
        (`InboxFile.recent_history`)."""
        return self.inbox(agent).recent_history(count)

    def observe(self, agent: str) -> int:
        """Record what others wrote into `agent`'s inbox and swarm has not recorded yet (taking
        the lock only when there is some); returns how many. Run by swarm's watchers, so a
        message between two Claude Code members is in the history although its reader deletes
        it."""
        inbox = self.inbox(agent)
        if not inbox.unrecorded(inbox.peek().items):
            return 0
        return self._observe(inbox)

    def observe_team(self) -> int:
        """`observe` every member's inbox that changed since this mailbox last looked (its
        (inode, size, mtime), one ``stat``: at 200 members a wake-up reads only the inboxes
        written since, not 200); a name that cannot be an inbox file is skipped."""
        recorded = 0
        for name in self.team.member_names():
            try:
                signature = self.inbox(name).signature()
                if signature is not None and self._observed.get(name) == signature:
                    continue
                recorded += self.observe(name)
                if signature is not None:
                    self._observed[name] = signature
            except ProtocolsError as exc:  # a bad name, a link: the others are still recorded
                log.warning("could not record %r's inbox: %s", name, exc)
        return recorded

    @redo_if_lock_lost
    def _observe(self, inbox: InboxFile) -> int:
        with inbox.lock():
            return inbox.record_locked(inbox.load_locked().items)

    def mark_read(self, agent: str, entries: Iterable[InboxEntry | PlainEntry]) -> int:
        """Mark exactly these entries read (by identity); returns how many were marked."""
        wanted = {e.identity for e in entries}
        if not wanted:
            return 0
        marked = self._mark_read(agent, wanted)
        if self.on_read is not None:
            self.on_read(wanted)
        return marked

    def _mark_read(self, agent: str, wanted: set[str]) -> int:
        """Group-committed with the inbox's writers (`InboxFile.mark_read`)."""
        return self.inbox(agent).mark_read(wanted, self.compact_after)

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
            from protocols.watch.wakeup import InboxWatcher

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
            from protocols.watch.wakeup import InboxWatcher

            with InboxWatcher(self.paths.inbox(agent), rescan_s=self.rescan_s) as own:
                return self.await_message(agent, match, timeout, own, mark, sender)
        deadline = time.monotonic() + timeout
        while True:
            watcher.clear()
            found = first_match(self.read_unread(agent), match, sender, agent)
            if found is not None:
                if mark:
                    self.mark_read(agent, [found[0]])
                return found
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
