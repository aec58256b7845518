"""One inbox file ``inboxes/<agent>.json`` (spec section 3): entries, loading, compaction.

`InboxFile` owns the file's bytes and works on the raw JSON items, so a write costs one C-speed
parse and, for the common append, no re-serialisation of what is already there (one message as
handed to callers, `InboxEntry`, is in `protocols.inbox.entry`, and only readers load it):

- loading: a file that does not parse is re-read for a moment (Claude Code writes in place); one
  that stays broken is moved aside to ``<name>.json.corrupt-<ms>``, the error is logged, and a
  fresh inbox starts;
- writing: under the lock, atomically; an append splices the new entry before the closing ``]``,
  and does not even parse the file when it is what the last swarm commit left
  (`protocols.inbox.splice`: the commit leaves a digest of it in the lock's flock file);
- the record: ``<agent>.archive.jsonl`` beside the inbox is swarm's append-only record of every
  message that went through the inbox. swarm appends each message it writes right after the
  inbox write, and records what others wrote (Claude Code) whenever it parses the file under
  the lock (every write but an append to a file swarm left, and always before compacting) or
  `observe`s, so a reader that deletes what it read (Claude Code 2.1.160 and later) takes
  nothing from the history. The live file is only the delivery queue;
- compaction: once more than `compact_after` entries are read, the live file is rewritten
  without them (their read marks are on disk first, and they are in the record first). A crash
  in between leaves them read in both places; `RecordIndex` knows what the record holds, so
  nothing is recorded twice by one process. Unread entries never move.
- identity: an entry is known by its ``msg_id`` (Claude Code's UUID since 2.1.196, and swarm's
  own, derived from swarm's ``id``), else swarm's ``id``, else a digest of sender, time and
  text; one identity is delivered once.

Messaging rules (who may send what to whom) live in `protocols.inbox.mailbox`.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from protocols.clock import ms_from_iso, now_ms
from protocols.errors import LockLost, ProtocolsError
from protocols.fs import safefs
from protocols.fs.file_cache import Signature, signature_of
from protocols.fs.jsonio import (
    Durability,
    append_durably,
    atomic_write_text,
    dumps_compact,
    dumps_pretty,
    ensure_file,
    parse_patiently,
    sync_file,
)
from protocols.fs.locks import REDO_ATTEMPTS, FileGuard, note_written
from protocols.inbox import record_summary
from protocols.inbox import splice as inbox_splice
from protocols.inbox.ids import identity_of
from protocols.logs import logger

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry
    from protocols.inbox.spool import Spool, Waiting

log = logger(__name__)
S = TypeVar("S")

ARCHIVE_TAIL_BYTES = 64 * 1024
COMMIT_ROUNDS = 2  # a hold commits what was spooled, then once more what came meanwhile
MSG_V = 1  # the entry format version Claude Code writes since 2.1.196


def is_read(item: Any) -> bool:
    return isinstance(item, dict) and item.get("read") is True


def entry_of(item: Any) -> InboxEntry:
    """`item` as an `InboxEntry` (`TypeError` or `ValueError`: it is not a message). The model,
    and pydantic with it, loads on first use: writing an entry needs neither."""
    from protocols.inbox.entry import InboxEntry

    return InboxEntry.from_json_dict(item)


def read_entry(item: Any, plain: bool = False) -> InboxEntry | PlainEntry | None:
    """`item` as a message, None (and a warning) if it is not one. With `plain`, an item that
    is plainly an entry is read without the model (`protocols.inbox.shape.PlainEntry`)."""
    if plain:
        from protocols.inbox.shape import PlainEntry

        found = PlainEntry.read(item)
        if found is not None:
            return found
    return _model_entry(item)


def _model_entry(item: Any) -> InboxEntry | None:
    try:
        return entry_of(item)
    except (TypeError, ValueError):
        log.warning("an inbox item that is not a message was left as it is: %r", item)
        return None


class Loaded:
    """An inbox as read: its text, and its raw items (dicts, or anything else kept verbatim).
    Loaded for a commit (`InboxFile.load_locked` with ``lazy``), the items are parsed only when
    something asks for them: an append needs only the text (`protocols.inbox.splice`)."""

    def __init__(
        self,
        items: list[Any] | None,
        text: str,
        signature: Signature | None,
        digest: bytes = b"",
    ) -> None:
        self._items = items
        self.text = text
        self.signature = signature
        self.digest = digest  # of the bytes read, when loaded lazily (`inbox_splice.digest`)
        self._ids: list[str | None] = []

    @property
    def parsed(self) -> bool:
        return self._items is not None

    @property
    def items(self) -> list[Any]:
        """The items (parsed now if they were not: ValueError if the text is no JSON array)."""
        if self._items is None:
            items = json.loads(self.text)
            if not isinstance(items, list):
                raise ValueError("an inbox that is not a JSON array")
            self._items = items
        return self._items

    @items.setter
    def items(self, value: list[Any]) -> None:
        self._items = value

    def identities(self) -> list[str | None]:
        """Each item's identity (None for an item that is not an object), worked out once:
        items appended since the last call are added (a commit's rounds only append)."""
        ids, items = self._ids, self.items
        if len(ids) > len(items):  # the list was replaced by a shorter one (compacted)
            ids.clear()
        ids.extend(identity_of(i) if isinstance(i, dict) else None for i in items[len(ids) :])
        return ids

    def entries(self) -> list[InboxEntry]:
        """The items that are valid messages (others are logged and kept in the file)."""
        return [e for e in map(_model_entry, self.items) if e is not None]

    def unread(self) -> list[InboxEntry]:
        """Unread messages, each identity once: a second entry with a ``msg_id`` already in the
        file (a writer that retried) is not delivered again."""
        result = []
        seen: set[str] = set()
        for item in self.items:
            if not isinstance(item, dict):
                continue
            identity = identity_of(item)
            if identity in seen:
                continue
            seen.add(identity)
            if is_read(item):
                continue
            try:
                result.append(entry_of(item))
            except (TypeError, ValueError):
                log.warning("an inbox item that is not a message was left as it is: %r", item)
        return result


class InboxFile:
    """The live inbox file of one agent and its archive."""

    def __init__(
        self,
        path: Path,
        archive: Path,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
        parse_retry_s: float = 0.5,
        record_summary: Path | None = None,
    ) -> None:
        self.path = path
        self.archive = archive
        self.record_summary = record_summary  # where views keep what they read of the record
        self.durability = durability
        self.lock_timeout = lock_timeout
        self.parse_retry_s = parse_retry_s
        self._spool: Spool | None = None

    def lock(self) -> FileGuard:
        # the inboxes folder is made if missing (Claude Code makes it on its first message), but
        # never the team's folder: a team deleted under a late writer stays deleted
        safefs.makedir_in(self.path.parent)
        ensure_file(self.path, "[]", self.durability)  # the lock target must exist
        return FileGuard(self.path, timeout=self.lock_timeout, keep_lock_dir=True)

    def signature(self) -> Signature | None:
        try:
            st = safefs.stat_of(self.path)
        except FileNotFoundError:
            return None
        return signature_of(st)

    def try_load(self, lazy: bool = False) -> Loaded | None:
        """Load without the lock; None if the file does not parse right now. `lazy`: a file
        whole as its writers write it (`inbox_splice.whole`) is not parsed until its items are
        asked for."""
        try:
            fd = safefs.open_path(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return Loaded([], "[]", None)
        except safefs.NotRegularFile:  # a FIFO planted as the inbox: moved aside as corrupt
            return None
        try:
            st = os.fstat(fd)
            signature = signature_of(st)
            data = safefs.read_fd(fd, st.st_size)
        finally:
            os.close(fd)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if lazy and inbox_splice.whole(text):
            return Loaded(None, text, signature, inbox_splice.digest(data))
        try:
            items = json.loads(text)
        except ValueError:
            return None
        if not isinstance(items, list):
            return None
        return Loaded(items, text, signature)

    def _parsed(self, lazy: bool = False) -> Loaded | None:
        """Load without the lock, waiting out a half-written file for `parse_retry_s`; None if
        it still does not parse."""

        def attempt() -> Loaded:
            loaded = self.try_load(lazy)
            if loaded is None:
                raise ValueError(f"{self.path} does not parse as a JSON array")
            return loaded

        try:
            return parse_patiently(attempt, self.parse_retry_s)
        except ValueError:
            return None

    def peek(self) -> Loaded:
        """Load for looking only: no lock, never a write (an inbox that does not parse reads as
        empty and is left for its readers to deal with). For status views and listings."""
        return self._parsed() or Loaded([], "[]", None)

    def load_locked(self, lazy: bool = False) -> Loaded:
        """Load under the lock, waiting out a half-written file; a corrupt one is moved aside.
        `lazy`: see `try_load` (then `parse_locked` before using the items)."""
        loaded = self._parsed(lazy)
        if loaded is not None:
            return loaded
        self._set_aside()
        return Loaded([], "[]", None)

    def parse_locked(self, loaded: Loaded) -> None:
        """Parse a lazily loaded inbox now (lock held): one that looked whole but does not
        parse is moved aside as `load_locked` does, and `loaded` is then a fresh, empty one."""
        try:
            loaded.items  # noqa: B018 - parsed here, on purpose
        except ValueError:
            self._set_aside()
            loaded.items, loaded.text = [], "[]"

    def _set_aside(self) -> None:
        aside = _move_aside(self.path, "inbox")
        if aside is None:
            return  # not a regular file: said
        log.error(
            "%s did not parse as a JSON array of messages for %.1f s; moved it to %s and "
            "started a fresh inbox (its messages can be recovered from that file)",
            self.path,
            self.parse_retry_s,
            aside,
        )
        ensure_file(self.path, "[]", self.durability)
        note_written(self.path)  # our own change, under our lock

    def load(self) -> Loaded:
        """Load for reading: lock-free when the file parses, else under the lock."""
        loaded = self.try_load()
        if loaded is not None:
            return loaded
        with self.lock():
            return self.load_locked()

    def append_locked(
        self,
        loaded: Loaded,
        items: list[dict[str, Any]],
        compact_after: int,
        rendered: list[str] | None = None,
        known: set[str] | None = None,
    ) -> None:
        """Add `items` at the end, then to the record (call with the lock held). `rendered`:
        the items as `dumps_pretty(item, level=1)` already, if the caller has them; `known`:
        the record's identities, if the caller read them during this hold (`recorded`)."""
        if not items:
            return
        if sum(1 for i in loaded.items if is_read(i)) > compact_after >= 0:
            loaded.items.extend(items)
            self.store_locked(loaded, compact_after, known=known)
            return
        body = loaded.text.rstrip()
        if rendered is None:
            rendered = [dumps_pretty(item, level=1) for item in items]
        added = ",\n  ".join(rendered)
        if loaded.items and body.endswith("]"):
            text = body[:-1].rstrip() + ",\n  " + added + "\n]"
        else:
            text = "[\n  " + added + "\n]"
        atomic_write_text(self.path, text, self.durability)
        loaded.items.extend(items)
        loaded.text = text
        try:
            # not synced here: the entries are durable in the inbox, and a line lost to a power
            # cut is recorded again by the next holder; compaction syncs the record first
            self.record_locked(
                loaded.items, sync=False, identities=loaded.identities(), known=known
            )
        except (OSError, ProtocolsError) as exc:  # delivered: the next writer records it
            log.error("%s: the message was delivered but not recorded: %s", self.archive, exc)

    # group commit (protocols.inbox.spool)

    @property
    def spool(self) -> Spool:
        if self._spool is None:
            from protocols.inbox.spool import Spool  # a writer's: a reader never needs it

            self._spool = Spool(self.path)
        return self._spool

    def deliver(self, item: dict[str, Any], compact_after: int) -> None:
        """Put `item` in the inbox durably, sharing one lock hold and one write with whatever
        other writers spooled meanwhile (`protocols.inbox.spool`). Returns once `item` is committed,
        by this process or by another; an item whose identity the inbox already holds (a retry)
        is not written again.

        A writer that finds the lock free commits at once (its own item after whatever waits in
        the spool); one that finds it taken spools its item and waits, and is usually carried
        by the holder's next round. Raises `LockTimeout` if the lock stayed taken: the item is
        then taken back out of the spool, so nothing is written (unless a holder that had
        already read the spool, and then stalled past the timeout, commits it after all: a
        retry with the same id is still stored once)."""
        self.deliver_many([item], compact_after)

    def deliver_many(self, items: list[dict[str, Any]], compact_after: int) -> None:
        """`deliver` for several entries at once, in this order, in one write (spooled, they
        are committed together: `protocols.inbox.spool`)."""
        if items:
            self._group_commit(_Carried(self.spool, items=items), compact_after)

    def mark_read(self, wanted: set[str], compact_after: int) -> int:
        """Set ``read`` on the unread entries whose identity is in `wanted`, group-committed
        like `deliver`: a reader that finds the lock taken by writers spools its marks and is
        carried by the holder's next write, rather than waiting out a stream of writers while
        its inbox grows. Returns how many entries this call marked (when carried: how many of
        `wanted` are not unread in the inbox now: read, or moved to the record)."""
        marked = self._group_commit(_Carried(self.spool, marks=wanted), compact_after)
        if marked is None:  # carried by another holder
            loaded = self.try_load()
            items = loaded.items if loaded is not None else []
            unread = {identity_of(i) for i in items if isinstance(i, dict) and not is_read(i)}
            return len(wanted - unread)
        return marked

    def _group_commit(self, carried: _Carried, compact_after: int) -> int | None:
        exists = safefs.exists(self.path)
        if not exists:
            safefs.makedir_in(self.path.parent)  # never the team's folder: see `lock`
        for attempt in range(1, REDO_ATTEMPTS + 1):
            try:
                return self._commit_once(carried, compact_after, exists)
            except LockLost as exc:  # nothing of this attempt was committed
                if attempt == REDO_ATTEMPTS:
                    raise
                log.warning("%s; doing it again (attempt %d)", exc, attempt + 1)
        raise AssertionError("unreachable")

    def _commit_once(self, carried: _Carried, compact_after: int, exists: bool) -> int | None:
        """One attempt: None if another holder's commit carried it, else how many entries its
        own read marks marked."""
        if not exists:
            ensure_file(self.path, "[]", self.durability)  # the lock target must exist
        guard = FileGuard(self.path, timeout=self.lock_timeout, keep_lock_dir=True)
        try:
            if not guard.acquire_unless(
                carried.done, on_busy=carried.spool_it, pause=carried.pause
            ):
                return None  # another writer's commit carried it
        except BaseException:
            carried.withdraw()  # not acknowledged: not left to be committed later either
            raise
        finally:
            carried.close()
        try:
            loaded = self.load_locked(lazy=True)
            if not loaded.parsed and guard.note() != loaded.digest:
                self.parse_locked(loaded)  # not as the last swarm commit left it: check it
            done = self.commit_spool_locked(loaded, compact_after, *carried.own())
            # what was spooled while that commit was being written goes in one more round
            # under the same hold: fewer hand-overs of the lock when many write at once. A
            # hold that found nobody waiting does not look again (a lone writer's every send
            # would list the spool twice); a writer that came meanwhile takes the lock next.
            more = done.spooled > 0
            for _ in range(COMMIT_ROUNDS - 1):
                if not more:
                    break
                more = self.commit_spool_locked(loaded, compact_after).taken > 0
            # the file is now `loaded.text`, written or parsed by this hold: the next holder
            # may append to it without parsing it
            guard.set_note(inbox_splice.digest(loaded.text.encode("utf-8")))
            return done.marked
        finally:
            guard.release()

    def commit_spool_locked(
        self,
        loaded: Loaded,
        compact_after: int,
        own: list[dict[str, Any]] | None = None,
        own_marks: set[str] | None = None,
    ) -> Committed:
        """Move every spooled entry, then `own`, into the inbox, and apply every spooled read
        mark and `own_marks`, in one write; then remove what was taken from the spool (call
        with the lock held). Entries whose identity the inbox or its record holds already (a
        commit that died before cleaning up, a retried send) are dropped. With no read marks the
        entries are spliced in (`append_locked`); with marks the file is written whole and
        compacted as `store_locked` does."""
        spool = self.spool
        pending = spool.pending()
        marks: set[str] = set()
        taken: list[tuple[dict[str, Any], str]] = []
        for spooled in pending:
            if spooled.item is None:
                marks |= spooled.marks
            else:
                taken.append((spooled.item, spooled.text))
        taken += [(item, dumps_pretty(item, level=1)) for item in own or ()]
        if not taken and not marks and own_marks is None:
            return Committed(0, 0)
        counted = Committed(len(pending) + len(own or ()), 0, len(pending))
        if not marks and own_marks is None and not loaded.parsed:
            ids = [i for item, _ in taken if (i := inbox_splice.msg_id(item)) is not None]
            if len(ids) == len(taken):  # an append of messages the text can be asked about
                self._append_unparsed(loaded, taken, ids, compact_after)
                spool.remove([p.name for p in pending])
                return counted
        self.parse_locked(loaded)
        known = set(loaded.identities())
        read_record: set[str] | None  # the record as read in this hold, passed on to its writes
        try:
            read_record = self.recorded()
        except (OSError, ProtocolsError) as exc:  # a planted link, say: deliver all the same
            log.error(
                "%s: the record could not be read (%s); not checked for repeats", self.archive, exc
            )
            read_record = None
        recorded = read_record if read_record is not None else set()
        fresh, rendered = [], []
        for item, text in taken:
            identity = identity_of(item)
            if identity not in known and identity not in recorded:
                known.add(identity)
                fresh.append(item)
                rendered.append(text)
        marked = 0
        if marks or own_marks:
            loaded.items.extend(fresh)
            changed = bool(fresh)
            for item, item_id in zip(loaded.items, loaded.identities(), strict=True):
                if item_id is None or is_read(item):
                    continue
                if own_marks is not None and item_id in own_marks:
                    item["read"] = True  # every copy of a msg_id: it is delivered once
                    marked += 1
                    changed = True
                elif item_id in marks:
                    item["read"] = True
                    changed = True
            if changed:
                self.store_locked(loaded, compact_after, reads_on_disk=False, known=read_record)
            else:
                self.record_locked(loaded.items, known=read_record)
        elif fresh:
            self.append_locked(loaded, fresh, compact_after, rendered, known=read_record)
        elif own_marks is not None:  # a reader with nothing to mark still records
            self.record_locked(loaded.items, known=read_record)
        spool.remove([p.name for p in pending])
        return Committed(counted.taken, marked, counted.spooled)

    def _append_unparsed(
        self,
        loaded: Loaded,
        taken: list[tuple[dict[str, Any], str]],
        ids: list[str],
        compact_after: int,
    ) -> None:
        """Append the messages of `taken` (item, text as the inbox holds it) that neither the
        inbox nor the record's tail holds, to an inbox not parsed (`protocols.inbox.splice`);
        then record them. An inbox with more read entries than `compact_after` is parsed and
        compacted by `append_locked` instead."""
        tail = self._record_tail()
        seen: set[str] = set()
        fresh, rendered = [], []
        for (item, text), message_id in zip(taken, ids, strict=True):
            if message_id in seen or inbox_splice.holds(loaded.text, message_id):
                continue
            seen.add(message_id)
            if not inbox_splice.recorded(tail, message_id):
                fresh.append(item)
                rendered.append(text)
        if not fresh:
            return
        if inbox_splice.read_entries(loaded.text) > compact_after >= 0:
            self.parse_locked(loaded)
            self.append_locked(loaded, fresh, compact_after, rendered)
            return
        loaded.text = inbox_splice.appended(loaded.text, rendered)
        atomic_write_text(self.path, loaded.text, self.durability)
        try:  # as `append_locked`: not synced here; compaction syncs the record first
            lines = "".join(dumps_compact(i) + "\n" for i in fresh)
            self._append_record(lines.encode("utf-8"), sync=False)
        except (OSError, ProtocolsError) as exc:  # delivered: compaction records it
            log.error("%s: the message was delivered but not recorded: %s", self.archive, exc)

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

    def store_locked(
        self,
        loaded: Loaded,
        compact_after: int,
        reads_on_disk: bool = True,
        known: set[str] | None = None,
    ) -> None:
        """Write `loaded.items` back (call with the lock held), compacting read entries first.

        Compaction drops read entries from the live file only once their ``read`` flag is on
        disk and they are in the record: otherwise a crash in between would leave them unread
        in the live file, to be delivered again. So when `reads_on_disk` is false (entries were
        just marked in memory), the marks are written first.
        """
        items = loaded.items
        read = [i for i in items if is_read(i)]
        if compact_after >= 0 and len(read) > compact_after:
            if not reads_on_disk:
                atomic_write_text(self.path, dumps_pretty(items), self.durability)
            # what leaves the inbox is on disk in the record
            self.record_locked(items, sync=True, known=known)
            items = [i for i in items if not is_read(i)]
            loaded.items, loaded.text = items, dumps_pretty(items)
            atomic_write_text(self.path, loaded.text, self.durability)
            return
        loaded.text = dumps_pretty(items)
        atomic_write_text(self.path, loaded.text, self.durability)
        # not synced: nothing left the inbox (as `append_locked`; compaction syncs the record)
        self.record_locked(items, sync=False, known=known)

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
                _move_aside(self.archive, "record")
        return len(fresh)

    def _append_record(self, data: bytes, sync: bool) -> None:
        """Append `data` to the record (lock held). A record that is not a regular file (a
        FIFO planted there: every append failed, so no compaction could ever happen and the
        owner could mark nothing read) is moved aside as a corrupt inbox is, and a fresh one
        started."""
        try:
            append_durably(self.archive, data, self.durability, sync=sync)
        except safefs.NotRegularFile:
            _move_aside(self.archive, "record")
            append_durably(self.archive, data, self.durability, sync=sync)

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
            result.append(live.get(identity) or _marked_read(entry))
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


class Committed(NamedTuple):
    """What one commit round took: spooled files and own entries, and own read marks set."""

    taken: int
    marked: int
    spooled: int = 0  # of `taken`, the spool's files


class _Carried:
    """One writer's items, or one reader's read marks, in a group commit: spooled only if the
    lock was taken when it came (`spool_it`), and then waited on (`done`) until the holder
    commits it."""

    def __init__(
        self,
        spool: Spool,
        items: list[dict[str, Any]] | None = None,
        marks: set[str] | None = None,
    ) -> None:
        self.spool = spool
        self.items = items or []
        self.marks = marks
        self.names: list[str] | None = None  # its spool files, once spooled
        self._waiting: Waiting | None = None

    def spool_it(self) -> None:
        if self.items:
            self._waiting = self.spool.put_many(self.items)
        else:
            self._waiting = self.spool.put_marks(self.marks or set())
        self.names = list(self._waiting.names)

    def done(self) -> bool:
        return self._waiting is not None and self._waiting.done()

    def pause(self, timeout: float) -> None:
        """Wait between looks at `done`: woken as soon as a committer hands the send back."""
        if self._waiting is None:
            time.sleep(timeout)
        else:
            self._waiting.pause(timeout)

    def own(self) -> tuple[list[dict[str, Any]], set[str] | None]:
        """What the lock holder applies as its own besides the spool: its items and its marks,
        spooled or not. A spooled copy found in the spool goes in first and the own one is then
        a repeat (skipped by identity); one that is not there (its slot file removed by another
        process) is committed all the same. Setting ``read`` twice changes nothing, and the
        marks are counted as this call's."""
        return self.items, self.marks

    def withdraw(self) -> None:
        if self.names:
            self.spool.remove(self.names)

    def close(self) -> None:
        if self._waiting is not None:
            self._waiting.close()
            self._waiting = None


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


def _move_aside(path: Path, what: str) -> Path | None:
    """Move the broken file `path` (lock held) to ``<name>.corrupt-<ms>`` beside it, for a
    fresh one to be started. For one that is not a regular file (a FIFO planted there) the
    error is logged here and None returned; otherwise the caller says why, with the path
    returned."""
    aside = path.with_name(f"{path.name}.corrupt-{now_ms()}")
    mode = safefs.lstat(path).st_mode
    safefs.replace(path, aside)
    if stat.S_ISREG(mode):
        return aside
    kind = safefs.NotRegularFile(path, mode, "")
    log.error("%s; moved it to %s and started a fresh %s", kind, aside, what)
    return None


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


def _marked_read(entry: Any) -> Any:
    """`entry` with ``read: true`` (a shallow copy: no validation, cheap for a long record)."""
    from protocols.inbox.shape import PlainEntry

    if entry.is_read:
        return entry
    if isinstance(entry, PlainEntry):
        return entry.marked_read()
    return entry.model_copy(update={"read": True})
