"""Reading one inbox file ``inboxes/<agent>.json`` (spec section 3): its raw items as
`Loaded` (parsed only when asked: an append needs only the text), each as a message
(`read_entry`, `entry_of`), and `InboxReader`: loading without the lock while the file parses,
waiting out a half-written one, and moving aside, under the lock, one that stays broken (the error
logged, a fresh inbox started). The record and the writes are `protocols.inbox.record` and
`protocols.inbox.file`.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.clock import now_ms
from protocols.fs import safefs
from protocols.fs.file_cache import Signature, signature_of
from protocols.fs.jsonio import (
    Durability,
    ensure_file,
    parse_patiently,
)
from protocols.fs.locks import FileGuard, note_written
from protocols.inbox import splice as inbox_splice
from protocols.inbox.ids import identity_of
from protocols.logs import logger

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.shape import PlainEntry
    from protocols.inbox.spool import Spool

log = logger(__name__)


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


class InboxReader:
    """An inbox file read: loading it (lock-free while it parses, a corrupt one moved aside
    under the lock) and locking it. `InboxFile` adds the record and the writes."""

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
        aside = move_aside(self.path, "inbox")
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


def move_aside(path: Path, what: str) -> Path | None:
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


def marked_read(entry: Any) -> Any:
    """`entry` with ``read: true`` (a shallow copy: no validation, cheap for a long record)."""
    from protocols.inbox.shape import PlainEntry

    if entry.is_read:
        return entry
    if isinstance(entry, PlainEntry):
        return entry.marked_read()
    return entry.model_copy(update={"read": True})
