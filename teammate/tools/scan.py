"""The `Grep` tool's query and results, and its pure-Python engine: one file's contents searched
the way ripgrep searches them.

This module owns what is found in a file (`FileResult`: its count, its lines with their
numbers) and how: a file is read in blocks of whole lines (`BLOCK` bytes at a time, never whole
unless the search is multiline), so memory stays bounded whatever the file's size. As ripgrep
does, a file met in a walk is binary if a NUL byte is in its first 64 KiB (it is skipped); a
NUL further on ends the search of it there, keeping what was found before (and its count
is then not reported, as ripgrep squashes it); a file named outright is searched whole, a NUL
or not (the tool reports "binary file matches" for it). A file starting with a UTF-16 byte
order mark is read as UTF-16; bytes that are not UTF-8 read as U+FFFD.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from protocols.errors import Error
from teammate.tools.ignore import IgnoreNotes
from teammate.tools.patterns import VCS_DIRECTORIES, FileTypes, Overrides
from teammate.tools.rg_regex import translate
from teammate.tools.walk import Deadline, WalkRules, walk

OutputMode = Literal["content", "files_with_matches", "count"]
BLOCK = 1 << 20
FIRST_BUFFER = 64 * 1024  # ripgrep's read buffer: a NUL within it makes a walked file binary


@dataclass(frozen=True)
class Hit:
    """A line to show: its number, whether it matches (else it is context), its text."""

    number: int
    match: bool
    text: str


@dataclass
class FileResult:
    """What a search found in one file."""

    path: str
    count: int = 0  # matching lines; matches for a multiline search
    hits: list[Hit] = field(default_factory=list)
    binary_offset: int | None = None  # where a NUL byte was found


@dataclass(frozen=True)
class GrepQuery:
    """One Grep search: the compiled pattern, whether it spans lines, what to collect."""

    regex: re.Pattern[str]
    multiline: bool
    mode: OutputMode
    before: int = 0
    after: int = 0
    only_matching: bool = False


class _Binary(Error):
    """A walked file found binary before anything of it was searched."""


def _read_all(descriptor: int) -> bytes:
    chunks = []
    while chunk := os.read(descriptor, BLOCK):
        chunks.append(chunk)
    return b"".join(chunks)


def _rest(more: Callable[[], bytes]) -> bytes:
    chunks = []
    while chunk := more():
        chunks.append(chunk)
    return b"".join(chunks)


class _Reader:
    """A file's text in blocks of whole lines; records where a NUL byte was."""

    def __init__(self, path: str, explicit: bool, whole: bool) -> None:
        self.path = path
        self.explicit = explicit
        self.whole = whole
        self.binary_offset: int | None = None

    def blocks(self, deadline: Deadline) -> Iterable[str]:
        try:
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return iter(())
        try:
            regular = not self.explicit or stat.S_ISREG(os.fstat(descriptor).st_mode)
            # a first read of 64 KiB (no large buffer for a small file); never wait on a FIFO
            first = os.read(descriptor, FIRST_BUFFER) if regular else b""
        except OSError:
            first = b""
        if len(first) < FIRST_BUFFER:  # the whole file: no more reads
            os.close(descriptor)
            return self._small(first)
        return self._stream(descriptor, first, deadline)

    def _small(self, data: bytes) -> list[str]:
        """A file read whole in one read: its text as one block (what `_read` makes of it,
        without a generator: most files are small)."""
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return [data.decode("utf-16", errors="replace")]
        data = data.removeprefix(codecs.BOM_UTF8)
        if b"\0" in data:
            self._binary_cut(data, 0)  # a walked file's NUL is in ripgrep's first buffer
        return [data.decode("utf-8", errors="replace")] if data else []

    def _stream(self, descriptor: int, first: bytes, deadline: Deadline) -> Iterator[str]:
        def more() -> bytes:
            return _read_all(descriptor) if self.whole else os.read(descriptor, BLOCK)

        try:
            yield from self._read(first, more, deadline)
        finally:
            os.close(descriptor)

    def _read(self, first: bytes, more: Callable[[], bytes], deadline: Deadline) -> Iterator[str]:
        if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            yield (first + _rest(more)).decode("utf-16", errors="replace")
            return
        pending, base = first.removeprefix(codecs.BOM_UTF8), 0
        if self.whole:
            pending += _rest(more)
        while pending:
            following = b"" if self.whole else more()
            pending, cut = self._binary_cut(pending, base)
            end = len(pending) if not following or cut else pending.rfind(b"\n") + 1
            if end > 0:
                yield pending[:end].decode("utf-8", errors="replace")
            if cut or deadline.expired():
                return
            base += end
            pending = pending[end:] + following

    def _binary_cut(self, data: bytes, base: int) -> tuple[bytes, bool]:
        """`data` (at offset `base`) up to where a walked file's search stops, and whether it
        stops there."""
        if self.binary_offset is not None:
            return data, False
        nul = data.find(b"\0")
        if nul < 0:
            return data, False
        self.binary_offset = base + nul
        if self.explicit:
            return data, False
        if self.binary_offset < FIRST_BUFFER:
            raise _Binary
        buffer_start = (self.binary_offset // FIRST_BUFFER) * FIRST_BUFFER - base
        return data[: data.rfind(b"\n", 0, max(buffer_start, 0)) + 1], True


def scan_file(
    path: str, query: GrepQuery, deadline: Deadline, explicit: bool = False
) -> FileResult | None:
    """What `query` finds in the file at `path`, or None (no match, binary, unreadable)."""
    reader = _Reader(path, explicit, whole=query.multiline)
    result = FileResult(path)
    content = _Content(query) if query.mode == "content" else None
    lines_before = 0
    try:
        for text in reader.blocks(deadline):
            if query.mode == "files_with_matches":
                if _found(query.regex, text):
                    result.count = 1
                    return result
                continue
            events = _events(query, text)
            if not events:
                if content is not None:
                    content.quiet(text, lines_before)
                lines_before += text.count("\n")
                continue
            result.count += len(events)  # matching lines; matches when they may span lines
            if content is not None:
                content.block(text, lines_before, events)
            lines_before += text.count("\n")
    except _Binary:
        return None
    result.binary_offset = reader.binary_offset
    squashed = query.mode == "count" and reader.binary_offset is not None and not explicit
    if result.count == 0 or squashed:
        return None
    if content is not None:
        result.hits = content.hits
    return result


@dataclass(frozen=True)
class _Event:
    """A match's lines in a block (0-based), and its matched texts with the line each starts."""

    first: int
    last: int
    parts: tuple[tuple[int, str], ...] = ()
    lines: str = ""  # the text of its lines (without the last newline)


def _events(query: GrepQuery, text: str) -> list[_Event]:
    return _span_events(query, text) if query.multiline else _line_events(query, text)


def _found(regex: re.Pattern[str], text: str) -> bool:
    """Whether `text` has a match (a line's, or one spanning lines: it is the first)."""
    found = regex.search(text)
    return found is not None and not _phantom(found, text)


def _phantom(match: re.Match[str], text: str) -> bool:
    """An empty match after the last line's newline, where there is no line."""
    return match.start() == len(text) and (not text or text.endswith("\n"))


def _line_events(query: GrepQuery, text: str) -> list[_Event]:
    """Each matching line of `text` (no match can span lines here)."""
    events: list[_Event] = []
    cursor, line = 0, 0
    while cursor <= len(text):
        found = query.regex.search(text, cursor)
        if found is None or _phantom(found, text):
            break
        line += text.count("\n", cursor, found.start())
        end = text.find("\n", found.start())
        start = text.rfind("\n", 0, found.start()) + 1
        stop = len(text) if end < 0 else end
        parts: tuple[tuple[int, str], ...] = ()
        if query.only_matching:
            parts = tuple(
                (line, hit.group())
                for hit in query.regex.finditer(text, start, stop)
                if hit.group()
            )
        events.append(_Event(line, line, parts, text[start:stop]))
        if query.mode == "files_with_matches" or end < 0:
            break
        cursor, line = end + 1, line + 1
    return events


def _span_events(query: GrepQuery, text: str) -> list[_Event]:
    """Each match of `text` searched whole, with the lines it spans."""
    events: list[_Event] = []
    line, at = 0, 0
    for found in query.regex.finditer(text):
        if _phantom(found, text):
            break
        line += text.count("\n", at, found.start())
        at = found.start()
        last_char = max(found.end() - 1, found.start())
        last = line + text.count("\n", found.start(), last_char)
        parts: tuple[tuple[int, str], ...] = ()
        if query.only_matching and found.group():
            pieces = found.group().split("\n")
            parts = tuple((line + offset, piece) for offset, piece in enumerate(pieces))
        start = text.rfind("\n", 0, found.start()) + 1
        stop = text.find("\n", last_char) if last_char < len(text) else -1
        lines = text[start : len(text) if stop < 0 else stop]
        events.append(_Event(line, last, parts, lines))
        if query.mode == "files_with_matches":
            break
    return events


class _Content:
    """A file's lines to show: the matching ones and their context, over blocks."""

    def __init__(self, query: GrepQuery) -> None:
        self.query = query
        self.hits: list[Hit] = []
        self.tail: deque[tuple[int, str]] = deque(maxlen=query.before)
        self.after_left = 0
        self.last = 0  # the number of the last line shown

    def quiet(self, text: str, base: int) -> None:
        """A block without a match: the after-context it ends, the lines it leaves for the
        next match's before-context."""
        if self.after_left:
            self.block(text, base, [])
            return
        if self.query.before:
            lines = _lines_of(text, self.query.before)
            first = base + text.count("\n") - len(lines) + (0 if text.endswith("\n") else 1)
            self.tail.extend((first + index + 1, line) for index, line in enumerate(lines))

    def block(self, text: str, base: int, events: list[_Event]) -> None:
        if not (self.query.before or self.query.after or self.after_left):
            self._matches(base, events)
            return
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        marks = self._marks(events, len(lines))
        self._before_from_tail(base, events)
        parts: dict[int, list[tuple[int, str]]] = {}
        for event in events:
            parts.setdefault(event.first, []).extend(event.parts)
        for index in sorted(marks):
            number = base + index + 1
            if self.query.only_matching and marks[index] and index not in parts:
                continue
            if self.query.only_matching and marks[index]:
                self.hits.extend(
                    Hit(base + line + 1, True, piece.rstrip("\r")) for line, piece in parts[index]
                )
            else:
                self.hits.append(Hit(number, marks[index], lines[index].rstrip("\r")))
            self.last = number
        self.tail.clear()
        start = max(len(lines) - self.query.before, 0)
        self.tail.extend(
            (base + index + 1, lines[index])
            for index in range(start, len(lines))
            if base + index + 1 > self.last
        )

    def _matches(self, base: int, events: list[_Event]) -> None:
        """The block's matching lines (no context asked for): from the events alone."""
        for event in events:
            if self.query.only_matching:
                hits = [
                    Hit(base + line + 1, True, piece.rstrip("\r")) for line, piece in event.parts
                ]
            else:
                texts = event.lines.split("\n") if event.last > event.first else [event.lines]
                first = base + event.first + 1
                hits = [
                    Hit(first + offset, True, piece.rstrip("\r"))
                    for offset, piece in enumerate(texts)
                    if first + offset > self.last
                ]
            self.hits.extend(hits)
            self.last = max(self.last, base + event.last + 1)

    def _marks(self, events: list[_Event], count: int) -> dict[int, bool]:
        """The block's lines to show (by index): True for a match, False for context."""
        marks = {index: False for index in range(min(self.after_left, count))}
        before, after = self.query.before, self.query.after
        end = self.after_left - 1 if self.after_left else -1
        for event in events:
            for index in range(max(event.first - before, 0), event.first):
                marks.setdefault(index, False)
            for index in range(event.first, min(event.last, count - 1) + 1):
                marks[index] = True
            for index in range(event.last + 1, min(event.last + after, count - 1) + 1):
                marks.setdefault(index, False)
            end = max(end, event.last + after)
        self.after_left = max(end - (count - 1), 0)
        return marks

    def _before_from_tail(self, base: int, events: list[_Event]) -> None:
        """The before-context of a block's first match that lies in the previous block."""
        if not events or not self.tail:
            return
        start = base + events[0].first + 1 - self.query.before
        for number, line in self.tail:
            if number >= start and number > self.last:
                self.hits.append(Hit(number, False, line.rstrip("\r")))
                self.last = number


def _lines_of(text: str, count: int) -> list[str]:
    """The last `count` lines of `text`."""
    body = text[:-1] if text.endswith("\n") else text
    return body.rsplit("\n", count)[-count:] if body or text else []


@dataclass(frozen=True)
class GrepRequest:
    """One Grep search as the tool was asked it: the pattern in ripgrep's dialect, where
    (`root`, a folder or a file), the filters and what to collect."""

    pattern: str
    root: str
    is_dir: bool
    mode: OutputMode
    globs: tuple[str, ...] = ()
    file_type: str | None = None
    ignore_case: bool = False
    multiline: bool = False
    before: int = 0
    after: int = 0
    only_matching: bool = False


@dataclass
class GrepOutcome:
    """What a Grep search found, whether the deadline cut it, its notes on ignore files."""

    results: list[FileResult]
    timed_out: bool
    notes: list[str]


def python_grep(request: GrepRequest, deadline: Deadline) -> GrepOutcome:
    """Grep by the pure-Python engine; `RegexDialectError` or `re.error` for a bad pattern."""
    translation = translate(
        request.pattern, ignore_case=request.ignore_case, multiline=request.multiline
    )
    query = GrepQuery(
        translation.compile(),
        translation.multiline,
        request.mode,
        request.before,
        request.after,
        request.only_matching and request.mode == "content",
    )
    notes = IgnoreNotes()
    if not request.is_dir:
        found = scan_file(request.root, query, deadline, explicit=True)
        return GrepOutcome([found] if found else [], deadline.reached, [])
    excluded = [f"!{name}" for name in VCS_DIRECTORIES]
    types = FileTypes(request.file_type) if request.file_type else None
    rules = WalkRules(Overrides([*excluded, *request.globs]), types)
    results = []
    for entry in walk(request.root, rules, notes, deadline):
        result = scan_file(entry.path, query, deadline)
        if result is not None:
            results.append(result)
    return GrepOutcome(results, deadline.reached, notes.lines)
