"""One inbox file ``inboxes/<agent>.json`` (spec section 3): entries, loading, compaction.

`InboxEntry` is one message as stored. `InboxFile` owns the file's bytes: it loads them (a file
that does not parse is re-read for a moment, because Claude Code writes in place; one that stays
broken is moved aside to ``<name>.json.corrupt-<timestamp>`` and a fresh inbox starts), rewrites
them atomically under the lock, and compacts: read entries move to the append-only archive
``<agent>.archive.jsonl`` beside the inbox, so the live file stays small. Unread entries are never
moved. Messaging logic (who may send what to whom) lives in `protocols.mailbox`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from protocols.clock import now_ms
from protocols.jsonio import Durability, append_durably, dumps_compact, ensure_file, write_json
from protocols.locks import FileGuard
from protocols.messages import StructuredMessage, decode
from protocols.records import Record

log = logging.getLogger(__name__)

ARCHIVE_TAIL_BYTES = 256 * 1024


class InboxEntry(Record):
    """``{from, text, summary?, timestamp, color?, read}`` plus swarm's own ``id``."""

    from_: str = Field(alias="from")
    text: str
    summary: str | None = None
    timestamp: str
    color: str | None = None
    read: bool | None = None
    id: str | None = None

    @property
    def is_read(self) -> bool:
        return self.read is True

    @property
    def identity(self) -> str:
        """swarm's ``id`` when present; otherwise a digest of sender, timestamp and text."""
        if self.id:
            return self.id
        digest = hashlib.sha1(
            f"{self.from_}\0{self.timestamp}\0{self.text}".encode("utf-8", "surrogatepass")
        )
        return "cc-" + digest.hexdigest()[:20]

    def structured(self) -> StructuredMessage | None:
        """The structured message in ``text``; None for a plain message.

        Raises `MessageValidationError` when ``text`` is a known type with bad fields.
        """
        return decode(self.text)


def format_for_model(entries: Iterable[InboxEntry]) -> str:
    """Unread messages as Claude Code hands them to a model: ``<teammate-message>`` blocks."""
    blocks = []
    for entry in entries:
        attrs = f'teammate_id="{entry.from_}"'
        if entry.color:
            attrs += f' color="{entry.color}"'
        if entry.summary:
            attrs += f' summary="{entry.summary}"'
        blocks.append(f"<teammate-message {attrs}>\n{entry.text}\n</teammate-message>")
    return "\n\n".join(blocks)


@dataclass
class Loaded:
    """An inbox as read: parsed entries, and entries kept verbatim because they are not objects."""

    entries: list[InboxEntry]
    foreign: list[Any]
    signature: tuple[int, int, int] | None


class InboxFile:
    """The live inbox file of one agent and its archive."""

    def __init__(
        self,
        path: Path,
        archive: Path,
        durability: Durability | None = None,
        lock_timeout: float = 30.0,
        parse_retry_s: float = 0.5,
    ) -> None:
        self.path = path
        self.archive = archive
        self.durability = durability
        self.lock_timeout = lock_timeout
        self.parse_retry_s = parse_retry_s

    def lock(self) -> FileGuard:
        ensure_file(self.path, "[]", self.durability)  # the lock target must exist
        return FileGuard(self.path, timeout=self.lock_timeout)

    def signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def try_load(self) -> Loaded | None:
        """Load without the lock; None if the file does not parse right now."""
        signature = self.signature()
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Loaded([], [], None)
        try:
            entries, foreign = _parse(raw)
        except ValueError:
            return None
        return Loaded(entries, foreign, signature)

    def load_locked(self) -> Loaded:
        """Load under the lock, waiting out a half-written file; a corrupt one is moved aside."""
        deadline = time.monotonic() + self.parse_retry_s
        delay = 0.01
        while True:
            loaded = self.try_load()
            if loaded is not None:
                return loaded
            if time.monotonic() >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        aside = self.path.with_name(f"{self.path.name}.corrupt-{now_ms()}")
        os.replace(self.path, aside)
        log.error(
            "%s did not parse as a JSON array of messages for %.1f s; moved it to %s and "
            "started a fresh inbox (its messages can be recovered from that file)",
            self.path,
            self.parse_retry_s,
            aside,
        )
        ensure_file(self.path, "[]", self.durability)
        return Loaded([], [], None)

    def load(self) -> Loaded:
        """Load for reading: lock-free when the file parses, else under the lock."""
        loaded = self.try_load()
        if loaded is not None:
            return loaded
        with self.lock():
            return self.load_locked()

    def store_locked(self, loaded: Loaded, compact_after: int) -> None:
        """Write `loaded` back (call with the lock held), compacting read entries first."""
        entries = loaded.entries
        read = [e for e in entries if e.is_read]
        if compact_after >= 0 and len(read) > compact_after:
            self._archive(read)
            entries = [e for e in entries if not e.is_read]
        data = [*loaded.foreign, *(e.to_json_dict() for e in entries)]
        write_json(self.path, data, self.durability)

    def archived_identities(self) -> set[str]:
        """Identities of the most recently archived entries (the tail of the archive)."""
        try:
            with open(self.archive, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - ARCHIVE_TAIL_BYTES))
                tail = handle.read()
        except FileNotFoundError:
            return set()
        identities = set()
        for line in tail.splitlines():
            try:
                identities.add(InboxEntry.from_json_dict(json.loads(line)).identity)
            except (ValueError, ValidationError, TypeError):
                continue  # the first line of the tail may be cut
        return identities

    def read_archive(self) -> list[InboxEntry]:
        try:
            lines = self.archive.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(InboxEntry.from_json_dict(json.loads(line)))
            except (ValueError, ValidationError, TypeError):
                log.warning("skipping a damaged line in %s", self.archive)
        return entries

    def _archive(self, read: list[InboxEntry]) -> None:
        done = self.archived_identities()
        fresh = [e for e in read if e.identity not in done]
        if fresh:
            data = "".join(dumps_compact(e.to_json_dict()) + "\n" for e in fresh)
            append_durably(self.archive, data.encode("utf-8"), self.durability)


def _parse(raw: bytes) -> tuple[list[InboxEntry], list[Any]]:
    value = json.loads(raw.decode("utf-8"))
    if not isinstance(value, list):
        raise ValueError("an inbox must be a JSON array")
    entries: list[InboxEntry] = []
    foreign: list[Any] = []
    for item in value:
        if isinstance(item, dict):
            try:
                entries.append(InboxEntry.from_json_dict(item))
                continue
            except ValidationError:
                pass
        log.warning("keeping an inbox item that is not a message as it is: %r", item)
        foreign.append(item)
    return entries, foreign
