"""A text file's lines for Read, streamed: bounded memory whatever the file's size.

This module owns reading a range of lines (`read_page`) without ever holding more of the file
than one block (`BLOCK`) and the lines shown: the lines before the range are counted in blocks,
each shown line is read up to `LINE_BYTES` and the rest of a longer one skipped, and the output
stops at a character budget. It also owns how a line reaches the model (`render`: the ``cat -n``
prefix, lines cut at `MAX_LINE_CHARS`, bytes that are not UTF-8 and control characters written
as ``\\xNN`` escapes, never a crash), the one marker that says what was left out and how to read
it (`Page.marker`), UTF-16 files behind their byte-order mark (`text_source`), opening a
file a tool reads (`open_regular`: a FIFO or a device is refused, never waited on; `read_whole`
within a size limit), and sizes for people (`human_size`).
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from protocols.fs.safefs import NotRegularFile
from teammate.tools.base import ToolError

BLOCK = 1 << 20  # what a skip or a count reads at a time
MAX_LINE_CHARS = 2000
LINE_BYTES = MAX_LINE_CHARS * 4 + 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8
COUNT_REST_BYTES = 64 << 20  # lines after a page are counted up to this much of the file
MAX_WIDE_BYTES = 16 << 20  # a UTF-16 file is re-encoded whole: up to this size
Stop = Literal["eof", "limit", "budget"]


def _escapes() -> tuple[dict[int, str], dict[int, str]]:
    """`str.translate` tables: control characters and undecodable bytes (the lone surrogates of
    ``surrogateescape``) as ``\\xNN``, C1 controls as ``\\u00NN``; one keeps tabs, the other
    tabs and newlines."""
    table: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if c != 0x09}
    table.update({c: f"\\u{c:04x}" for c in range(0x80, 0xA0)})
    table.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})
    keep_newlines = {c: s for c, s in table.items() if c != 0x0A}
    return table, keep_newlines


LINE_ESCAPES, TEXT_ESCAPES = _escapes()


def escape(text: str, newlines: bool = False) -> str:
    """`text` safe to show: control characters and undecodable bytes as escapes (tabs kept,
    newlines too if `newlines`)."""
    return text.translate(TEXT_ESCAPES if newlines else LINE_ESCAPES)


def human_size(size: int) -> str:
    """``812 bytes``, ``256 KB``, ``1.9 GB`` (units of 1024)."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            if unit == "bytes":
                return f"{size} bytes"
            return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@dataclass
class Page:
    """Lines `start`.. of a file as shown, and what a marker must say about the rest."""

    start: int
    lines: list[str]
    stopped: Stop
    total: int | None = None  # the file's line count, when known (a short file)
    cut_lines: int = 0  # lines cut at MAX_LINE_CHARS
    cut_bytes: int = 0  # what those cuts left out
    rest_lines: int | None = None  # lines after the page (None: not counted)
    rest_bytes: int = 0  # bytes after the page

    @property
    def last(self) -> int:
        return self.start + len(self.lines) - 1

    def marker(self, budget: int) -> str:
        """The one line that says what was left out, and how to read it; "" if nothing was."""
        parts = []
        if self.stopped == "budget":
            parts.append(
                f"Stopped after line {self.last:,} to keep this result within {budget:,} "
                "characters."
            )
        if self.stopped != "eof" and (self.rest_lines or self.rest_bytes):
            parts.append(self._rest())
        if self.cut_lines:
            lines = "1 line was" if self.cut_lines == 1 else f"{self.cut_lines:,} lines were"
            parts.append(
                f"{lines} longer than {MAX_LINE_CHARS:,} characters and cut "
                f"({self.cut_bytes:,} bytes left out): use Grep, or Bash with cut -c, to see "
                "them whole."
            )
        return f"[{' '.join(parts)}]" if parts else ""

    def _rest(self) -> str:
        go_on = f"Read with offset={self.last + 1}"
        if self.rest_lines is None:
            return (
                f"The file goes on after line {self.last:,} for {human_size(self.rest_bytes)} "
                f"more (not counted in lines). {go_on} to see more."
            )
        lines = "1 more line" if self.rest_lines == 1 else f"{self.rest_lines:,} more lines"
        total = self.last + self.rest_lines
        return f"{lines} not shown (the file has {total:,} lines). {go_on} to see more."


def render(raw: bytes, number: int) -> tuple[str, int]:
    """One line as shown (``cat -n`` prefix, cut, escaped) and how many bytes a cut left out."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    text = raw.decode("utf-8", errors="surrogateescape")
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    cut = 0
    if len(text) > MAX_LINE_CHARS:
        kept = text[:MAX_LINE_CHARS]
        cut = len(raw) - len(kept.encode("utf-8", errors="surrogateescape"))
        text = kept
    return f"{number:>6}\t{escape(text)}", cut


def read_page(handle: BinaryIO, start: int, count: int, budget: int) -> Page:
    """Up to `count` lines from line `start` (1 is the first), stopping before the shown text
    passes `budget` characters (the first line is always shown, cut to fit). The handle is
    left just after the last line shown, for `count_rest`."""
    skipped, partial = _skip(handle, start - 1)
    if skipped < start - 1:
        return Page(start, [], "eof", total=skipped + partial)
    page = Page(start, [], "eof")
    used = 0
    while len(page.lines) < count:
        where = handle.tell()
        line = _next_line(handle)
        if line is None:
            page.total = None if page.lines else start - 1
            return page
        raw, dropped = line
        shown, cut = render(raw, start + len(page.lines))
        if page.lines and used + len(shown) + 1 > budget:
            handle.seek(where)
            page.stopped = "budget"
            return page
        if cut or dropped:
            page.cut_lines += 1
            page.cut_bytes += cut + dropped
        page.lines.append(shown[:budget])
        used += len(shown) + 1
    page.stopped = "limit"
    return page


def count_rest(handle: BinaryIO, size: int, page: Page) -> None:
    """Fill in what follows `page` (the handle is where `read_page` left it): its lines if
    there are at most `COUNT_REST_BYTES` of it, else only its size. (A file that says it has
    size 0, as those of /proc do, is counted as it is read.)"""
    here = handle.tell()
    page.rest_bytes = max(size - here, 0)
    if page.rest_bytes > COUNT_REST_BYTES:
        return
    lines, last, seen = 0, b"", 0
    while seen <= COUNT_REST_BYTES and (block := handle.read(BLOCK)):
        seen += len(block)
        lines += block.count(b"\n")
        last = block[-1:]
    page.rest_bytes = max(page.rest_bytes, seen)
    if seen <= COUNT_REST_BYTES:
        page.rest_lines = lines + (1 if last not in (b"", b"\n") else 0)


def _skip(handle: BinaryIO, count: int) -> tuple[int, int]:
    """Move past `count` lines, a block at a time: (lines passed, 1 if the file ended on a
    line with no newline, else 0)."""
    left, last = count, b""
    while left:
        block = handle.read(BLOCK)
        if not block:
            return count - left, 1 if last not in (b"", b"\n") else 0
        found = block.count(b"\n")
        if found < left:
            left -= found
            last = block[-1:]
            continue
        at = -1
        for _ in range(left):
            at = block.index(b"\n", at + 1)
        handle.seek(at + 1 - len(block), io.SEEK_CUR)
        return count, 0
    return count, 0


def _next_line(handle: BinaryIO) -> tuple[bytes, int] | None:
    """The next line's first `LINE_BYTES` and how many bytes of it were skipped; None at the
    end of the file."""
    raw = handle.readline(LINE_BYTES)
    if not raw:
        return None
    if raw.endswith(b"\n") or len(raw) < LINE_BYTES:
        return raw, 0
    dropped = 0
    while more := handle.readline(BLOCK):
        if more.endswith(b"\n"):
            return raw, dropped + len(more) - 1 - (1 if more.endswith(b"\r\n") else 0)
        dropped += len(more)
    return raw, dropped


def text_source(handle: BinaryIO, head: bytes, size: int, name: str) -> tuple[BinaryIO, int]:
    """What to read lines from, and its size: the file itself, or, for UTF-16 behind its
    byte-order mark, its text re-encoded as UTF-8 (`MAX_WIDE_BYTES` at most)."""
    bom = next((b for b in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) if head.startswith(b)), None)
    if bom is None:
        return handle, size
    if size > MAX_WIDE_BYTES:
        raise ToolError(
            f"{name} is UTF-16 text of {human_size(size)}, more than Read converts "
            f"({human_size(MAX_WIDE_BYTES)}). Convert it first, e.g. with iconv -f UTF-16 -t "
            "UTF-8, then read the copy."
        )
    text = handle.read().decode("utf-16", errors="replace")
    data = text.encode("utf-8", errors="backslashreplace")
    return io.BytesIO(data), len(data)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading (links followed) if it is a regular file; a FIFO, a socket or
    a device raises `NotRegularFile` at once (a FIFO is opened without waiting for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            raise NotRegularFile(path, os.stat(path).st_mode, "") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(path, mode, "")
    return open(fd, "rb", buffering=BLOCK)  # the caller closes it


def read_whole(handle: BinaryIO, limit: int, name: str) -> bytes:
    """All of an open file, refused (not read) if it holds more than `limit` bytes."""
    size = os.fstat(handle.fileno()).st_size
    data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise ToolError(
            f"{name} is {human_size(max(size, len(data)))}, more than this tool reads "
            f"({human_size(limit)})."
        )
    return data
