"""The record of one inbox, ``<agent>.archive.jsonl`` beside it: swarm's append-only record of every
message that went through the inbox (spec section 3). `InboxRecord` appends what the record does
not hold yet (swarm right after each write, and what others wrote, Claude Code included, whenever
it parses the file under the lock), so a reader that deletes what it read (Claude Code 2.1.160
and later) takes nothing from the history; and reads the history: the record, then what is live.
`RecordIndex` and `RecordEntries` keep what this process read of each record, reading only what
was appended since its last look.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from protocols.clock import ms_from_iso
from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.fs.jsonio import (
    append_durably,
    dumps_compact,
    sync_file,
)
from protocols.inbox import record_summary
from protocols.inbox import splice as inbox_splice
from protocols.inbox.ids import identity_of
from protocols.inbox.reading import InboxReader, entry_of, marked_read, move_aside, read_entry
from protocols.logs import logger

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry

log = logger(__name__)

S = TypeVar("S")

ARCHIVE_TAIL_BYTES = 64 * 1024


class _RecordFold(Generic[S]):
    """What this process made of each record file, brought up to date by reading only the
    complete lines appended since its last look (a file replaced or cut is read again whole;
    a line still being written is read next time)."""

    def __init__(self, empty: Callable[[], S], add: Callable[[S, bytes, Path], None]) -> None:
        self._empty = empty
        self._add = add
        self._lock = threading.Lock()
        self._known: dict[Path, tuple[int, int, S]] = {}  # path -> (inode, offset read, state)

    def get(self, path: Path) -> S | None:
        """The state of `path` now (None: there is no such file)."""
        with self._lock:
            known = self._known.get(path)
            try:
                fd = safefs.open_path(path, os.O_RDONLY)
            except FileNotFoundError:
                self._known.pop(path, None)
                return None
            try:
                st = os.fstat(fd)
                fresh = known is None or known[0] != st.st_ino or st.st_size < known[1]
                offset = 0 if fresh or known is None else known[1]
                data = os.pread(fd, st.st_size - offset, offset) if st.st_size > offset else b""
            finally:
                os.close(fd)
            state = self._empty() if fresh or known is None else known[2]
            end = data.rfind(b"\n") + 1
            for line in data[:end].split(b"\n")[:-1]:
                self._add(state, line, path)
            self._known[path] = (st.st_ino, offset + end, state)
            return state

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


# a record line's ``msg_id`` as `dumps_compact` writes it, when it is one `inbox_splice` can
# search for: the quoted name cannot occur unescaped inside a JSON string, so a line holding it
# once, whole between braces, has it as its one ``msg_id`` key (messages hold no objects)
_MSG_ID_FIELD = b'"msg_id"'
_MSG_ID_VALUE = re.compile(rb'"msg_id":"([A-Za-z0-9._:-]{1,200})"')  # inbox_splice.SAFE_ID


def _add_identity(ids: set[str], line: bytes, path: Path) -> None:
    """Add the identity of the record line `line`: every process parses every line every other
    process appends (`RecordIndex`), under the inbox's lock, so a line of swarm's or Claude
    Code's with a plain ``msg_id`` is not parsed as JSON. Any other is."""
    if line.count(_MSG_ID_FIELD) == 1 and line[:1] == b"{" and line[-1:] == b"}":
        found = _MSG_ID_VALUE.search(line)
        if found is not None:
            ids.add(found.group(1).decode("ascii"))
            return
    try:
        item = json.loads(line)
    except ValueError:
        return
    if isinstance(item, dict):
        ids.add(identity_of(item))


def _add_entry(entries: list[InboxEntry], line: bytes, path: Path) -> None:
    try:
        entries.append(entry_of(json.loads(line)))
    except (TypeError, ValueError):
        log.warning("skipping a damaged line in %s", path)


def _plain_entries(lines: Iterable[bytes], path: Path) -> list[InboxEntry | PlainEntry]:
    """The record lines `lines` read as `InboxFile.plain_history` reads them (damaged ones
    skipped, with a warning)."""
    entries: list[InboxEntry | PlainEntry] = []
    for line in lines:
        _add_plain_entry(entries, line, path)
    return entries


def _add_plain_entry(entries: list[InboxEntry | PlainEntry], line: bytes, path: Path) -> None:
    from protocols.inbox.shape import PlainEntry

    try:
        item = json.loads(line)
    except ValueError:
        log.warning("skipping a damaged line in %s", path)
        return
    found = PlainEntry.read(item)
    if found is not None:
        entries.append(found)
        return
    try:
        entries.append(entry_of(item))
    except (TypeError, ValueError):
        log.warning("skipping a damaged line in %s", path)


class RecordIndex:
    """The identities in each record file this process has looked at, read incrementally: each
    call reads only what was appended since the last."""

    _fold: _RecordFold[set[str]] = _RecordFold(set, _add_identity)

    @classmethod
    def identities(cls, path: Path) -> set[str]:
        found = cls._fold.get(path)
        return found if found is not None else set()


class RecordEntries:
    """The entries of each record file this process has read, kept and read incrementally as
    `RecordIndex` keeps identities: a ``swarm watch`` redraw or the lead parses only what was
    appended since its last look, not the whole record (40,000 entries: ~1.7 s a look)."""

    _fold: _RecordFold[list[InboxEntry]] = _RecordFold(list, _add_entry)
    # the same, an entry that is plainly one read without the model (`InboxFile.history`)
    _plain: _RecordFold[list[InboxEntry | PlainEntry]] = _RecordFold(list, _add_plain_entry)

    @classmethod
    def forget(cls) -> None:
        """Drop every record read: the next look parses each one whole (a cold start)."""
        cls._fold.forget()
        cls._plain.forget()

    @classmethod
    def entries(cls, path: Path, plain: bool = False) -> list[Any]:
        """The entries, oldest first (a copy of the list: the entries themselves are shared)."""
        return list((cls._plain if plain else cls._fold).get(path) or [])


class InboxRecord(InboxReader):
    """An inbox with its record, ``<agent>.archive.jsonl``: what it holds (`RecordIndex`), appending
    what it does not hold yet, and the history of every message (the record, then what is
    live), read incrementally (`RecordEntries`)."""

    def recorded(self) -> set[str]:
        """The identities of the messages in the record (read only: do not change the set)."""
        return RecordIndex.identities(self.archive)

    def unrecorded(
        self,
        items: list[Any],
        identities: list[str | None] | None = None,
        known: set[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The messages among `items` that the record does not hold yet, each once
        (`identities`: theirs, if the caller has them, `Loaded.identities`; `known`: the
        record's identities, if the caller read them while holding the lock, else they are
        read now)."""
        if known is None:
            known = self.recorded()
        fresh: list[dict[str, Any]] = []
        seen: set[str] = set()
        if identities is None:
            identities = [identity_of(i) if isinstance(i, dict) else None for i in items]
        for item, identity in zip(items, identities, strict=True):
            if identity is None:
                continue
            if identity not in known and identity not in seen:
                seen.add(identity)
                fresh.append(item)
        return fresh

    def record_locked(
        self,
        items: list[Any],
        sync: bool = True,
        identities: list[str | None] | None = None,
        known: set[str] | None = None,
    ) -> int:
        """Append to the record the messages among `items` it does not hold yet (call with the
        inbox's lock held: the record has one writer at a time, so `known`, its identities as
        read earlier in the same hold, are still all of them). Returns how many.

        With `sync` (the default) the record is synced before this returns, earlier appends
        made without it included: call it so before anything leaves the live inbox."""
        fresh = self.unrecorded(items, identities, known)
        if fresh:
            lines = "".join(dumps_compact(i) + "\n" for i in fresh)
            self._append_record(lines.encode("utf-8"), sync=sync)
        elif sync:
            try:
                sync_file(self.archive, self.durability)
            except safefs.NotRegularFile:  # nothing was ever written into it
                move_aside(self.archive, "record")
        return len(fresh)

    def _append_record(self, data: bytes, sync: bool) -> None:
        """Append `data` to the record (lock held). A record that is not a regular file (a
        FIFO planted there: every append failed, so no compaction could ever happen and the
        owner could mark nothing read) is moved aside as a corrupt inbox is, and a fresh one
        started."""
        try:
            append_durably(self.archive, data, self.durability, sync=sync)
        except safefs.NotRegularFile:
            move_aside(self.archive, "record")
            append_durably(self.archive, data, self.durability, sync=sync)

    def _record_tail(self) -> bytes:
        """The last `inbox_splice.TAIL_BYTES` of the record (empty: none, or unreadable)."""
        try:
            fd = safefs.open_path(self.archive, os.O_RDONLY)
        except FileNotFoundError:
            return b""
        except (OSError, ProtocolsError) as exc:  # a planted link, say: deliver all the same
            log.error("%s: the record could not be read (%s)", self.archive, exc)
            return b""
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - inbox_splice.TAIL_BYTES)
            return safefs.read_fd(fd, size, start)
        finally:
            os.close(fd)

    def archive_tail(self, tail_bytes: int = ARCHIVE_TAIL_BYTES) -> list[dict[str, Any]]:
        """The raw entries in the last `tail_bytes` of the record, oldest first."""
        try:
            fd = safefs.open_path(self.archive, os.O_RDONLY)
        except FileNotFoundError:
            return []
        try:
            size = os.fstat(fd).st_size
            tail = safefs.read_fd(fd, size, max(0, size - tail_bytes))
        finally:
            os.close(fd)
        items = []
        for line in tail.split(b"\n"):
            try:
                item = json.loads(line)
            except ValueError:
                continue  # the first line of the tail may be cut
            if isinstance(item, dict):
                items.append(item)
        return items

    def history(self) -> list[InboxEntry]:
        """Every message the inbox has had, oldest first, each once, read without a lock: the
        record, then what is live and not recorded yet. A live entry's read mark wins; a
        recorded message that is no longer live was read (compacted, or deleted by its reader)."""
        return self._history(plain=False)

    def plain_history(self) -> list[InboxEntry | PlainEntry]:
        """`history` for a reader that only shows it (``swarm status``): an entry that is
        plainly one is read without the model, as a `PlainEntry`."""
        return self._history(plain=True)

    def protocol_history(self) -> list[InboxEntry | PlainEntry]:
        """The entries of `plain_history` that may be requests to the lead or its answers (their
        record lines hold one of `record_summary.MARKS`), and every live one, in the same order:
        all a view needs to tell which requests wait, without parsing the whole record (the
        record's marked lines are kept in `record_summary`, when this inbox has one)."""
        if self.record_summary is None:
            return self.plain_history()
        lines = record_summary.marked_lines(self.archive, self.record_summary)
        return self._merged(_plain_entries(lines, self.archive), plain=True)

    def recent_history(self, count: int) -> list[InboxEntry | PlainEntry]:
        """The last `count` entries of `plain_history`, read from the record's last
        `record_summary.TAIL_BYTES` and the live file (the whole record when `count` is more
        than that tail holds). A message recorded before that tail is
        not in it: a live one older than the tail's first message is taken for one and left
        out (were it recorded later it would be among the last, as `plain_history` has it)."""
        if count <= 0:
            return []
        lines, whole = record_summary.tail_lines(self.archive)
        entries = _plain_entries(lines, self.archive)
        if not whole and len(entries) < count:  # more than the tail holds: read it all
            return self.plain_history()[-count:]
        first = None if whole or not entries else ms_from_iso(entries[0].timestamp)
        merged = self._merged(entries, plain=True, recorded_before=first)
        return merged[-count:]

    def _history(self, plain: bool) -> list[Any]:
        return self._merged(RecordEntries.entries(self.archive, plain), plain)

    def _merged(
        self, recorded: Iterable[Any], plain: bool, recorded_before: int | None = None
    ) -> list[Any]:
        """The record's entries `recorded`, each once (a live entry's read mark wins; one no
        longer live was read), then the live entries the record does not hold, but those sent
        before `recorded_before` (ms; the first message of a record's tail)."""
        live: dict[str, Any] = {}
        for item in self.peek().items:
            entry = read_entry(item, plain)
            if entry is not None:
                live.setdefault(entry.identity, entry)
        result: list[Any] = []
        shown: set[str] = set()
        for entry in recorded:
            identity = entry.identity
            if identity in shown:
                continue
            shown.add(identity)
            result.append(live.get(identity) or marked_read(entry))
        for identity, entry in live.items():
            if identity in shown:
                continue
            sent = ms_from_iso(entry.timestamp) if recorded_before is not None else None
            if sent is None or recorded_before is None or sent >= recorded_before:
                result.append(entry)
        return result

    def read_archive(self) -> list[InboxEntry]:
        """The record's entries as written (a message may be there more than once); parsed
        once per process, then only what was appended since (`RecordEntries`)."""
        return RecordEntries.entries(self.archive)
