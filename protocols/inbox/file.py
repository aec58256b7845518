"""One inbox file ``inboxes/<agent>.json`` (spec section 3): writing it, the group commit,
compaction. `InboxFile` builds on `protocols.inbox.record.InboxRecord` (the record) and
`protocols.inbox.reading.InboxReader` (loading); identities are `protocols.inbox.ids`.

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
- the group commit: a writer that finds the lock taken spools its entry (`protocols.inbox.spool`)
  and is carried by the holder's next write (`commit_spool_locked`: spliced in unparsed when it
  can be, else parsed and merged with the read marks that came with it);
- identity: an entry is known by its ``msg_id`` (Claude Code's UUID since 2.1.196, and swarm's
  own, derived from swarm's ``id``), else swarm's ``id``, else a digest of sender, time and
  text; one identity is delivered once.

Messaging rules (who may send what to whom) live in `protocols.inbox.mailbox`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocols.errors import LockLost, ProtocolsError
from protocols.fs import safefs
from protocols.fs.jsonio import (
    atomic_write_text,
    dumps_compact,
    dumps_pretty,
    ensure_file,
)
from protocols.fs.locks import REDO_ATTEMPTS, FileGuard
from protocols.inbox import splice as inbox_splice
from protocols.inbox.commit import Carried, Committed
from protocols.inbox.ids import identity_of
from protocols.inbox.reading import Loaded, is_read
from protocols.inbox.record import InboxRecord
from protocols.logs import logger

if TYPE_CHECKING:
    from protocols.inbox.spool import Spool

log = logger(__name__)

COMMIT_ROUNDS = 2  # a hold commits what was spooled, then once more what came meanwhile
MSG_V = 1  # the entry format version Claude Code writes since 2.1.196


class InboxFile(InboxRecord):
    """The live inbox file of one agent and its archive: loading and the record
    (`InboxRecord`), appends, the group commit and compaction."""

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
            self._group_commit(Carried(self.spool, items=items), compact_after)

    def mark_read(self, wanted: set[str], compact_after: int) -> int:
        """Set ``read`` on the unread entries whose identity is in `wanted`, group-committed
        like `deliver`: a reader that finds the lock taken by writers spools its marks and is
        carried by the holder's next write, rather than waiting out a stream of writers while
        its inbox grows. Returns how many entries this call marked (when carried: how many of
        `wanted` are not unread in the inbox now: read, or moved to the record)."""
        marked = self._group_commit(Carried(self.spool, marks=wanted), compact_after)
        if marked is None:  # carried by another holder
            loaded = self.try_load()
            items = loaded.items if loaded is not None else []
            unread = {identity_of(i) for i in items if isinstance(i, dict) and not is_read(i)}
            return len(wanted - unread)
        return marked

    def _group_commit(self, carried: Carried, compact_after: int) -> int | None:
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

    def _commit_once(self, carried: Carried, compact_after: int, exists: bool) -> int | None:
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
        entries are spliced in, unparsed when the text can be asked about them (`_splice`); else
        the file is parsed and merged (`_merge`)."""
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
        marked = 0
        if marks or own_marks is not None or not self._splice(loaded, taken, compact_after):
            marked = self._merge(loaded, taken, marks, own_marks, compact_after)
        spool.remove([p.name for p in pending])
        return Committed(len(pending) + len(own or ()), marked, len(pending))

    def _splice(
        self, loaded: Loaded, taken: list[tuple[dict[str, Any], str]], compact_after: int
    ) -> bool:
        """Append `taken` to an inbox not parsed, when every entry has a ``msg_id`` the text can
        be asked about (`_append_unparsed`); False if it cannot be done so."""
        if loaded.parsed:
            return False
        ids = [i for item, _ in taken if (i := inbox_splice.msg_id(item)) is not None]
        if len(ids) != len(taken):
            return False
        self._append_unparsed(loaded, taken, ids, compact_after)
        return True

    def _merge(
        self,
        loaded: Loaded,
        taken: list[tuple[dict[str, Any], str]],
        marks: set[str],
        own_marks: set[str] | None,
        compact_after: int,
    ) -> int:
        """The parsed way: the entries of `taken` neither the inbox nor its record holds are
        added, `marks` and `own_marks` set, and the file written (whole when anything was marked,
        compacted as `store_locked` does; else appended); how many of `own_marks` were marked."""
        self.parse_locked(loaded)
        read_record = self._record_if_readable()
        fresh, rendered = self._fresh(loaded, taken, read_record or set())
        if not marks and not own_marks:
            if fresh:
                self.append_locked(loaded, fresh, compact_after, rendered, known=read_record)
            elif own_marks is not None:  # a reader with nothing to mark still records
                self.record_locked(loaded.items, known=read_record)
            return 0
        loaded.items.extend(fresh)
        changed, marked = bool(fresh), 0
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
        return marked

    def _record_if_readable(self) -> set[str] | None:
        """The record's identities as read in this hold (passed on to its writes); None if it
        cannot be read (a planted link, say: the messages are delivered all the same)."""
        try:
            return self.recorded()
        except (OSError, ProtocolsError) as exc:
            log.error(
                "%s: the record could not be read (%s); not checked for repeats", self.archive, exc
            )
            return None

    @staticmethod
    def _fresh(
        loaded: Loaded, taken: list[tuple[dict[str, Any], str]], recorded: set[str]
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """The entries of `taken` (and their texts) that neither the inbox nor the record holds,
        each once."""
        known = set(loaded.identities())
        fresh, rendered = [], []
        for item, text in taken:
            identity = identity_of(item)
            if identity not in known and identity not in recorded:
                known.add(identity)
                fresh.append(item)
                rendered.append(text)
        return fresh, rendered

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
