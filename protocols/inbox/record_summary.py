"""What a view needs of a long record (``<agent>.archive.jsonl``) without reading it whole:
the lines that may hold a request to the lead or the lead's answer (a few, however long the
record), and the record's last lines (the latest messages).

A team that has run for days has tens of thousands of messages in the lead's record, and
``swarm status`` parsed every one of them to find the requests still waiting and the last few
messages (20,000 messages: ~300 ms). Now:

- `marked_lines`: every complete line holding one of `MARKS`. Every request and answer kind
  ends in ``_request`` or ``_response`` (``permission_request``, ``plan_approval_response``,
  ...), written as it is inside the entry's ``text``, unless escaped: a kind spelt with
  ``\\u`` escapes is caught by the third mark, so no request is missed; other lines that
  match are parsed and dropped by the caller. The lines found are kept in a summary file
  beside the task board's summaries (`TeamPaths.record_summary`), with how far the record was
  read: its inode, that offset, and the CRC-32 of the bytes just before it. The next look
  reads only what was appended since. The record only grows; pruning replaces it (another
  inode) and a record rewritten in place changes those bytes: either way it is read whole
  again. The summary is a cache, written as a temporary file renamed over it, never synced; one
  that is missing, corrupt or cannot be written just means a longer look;
- `tail_lines`: the complete lines of the record's last `TAIL_BYTES`.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

from protocols.fs import safefs
from protocols.fs.jsonio import dumps_compact
from protocols.logs import logger
from protocols.tasks.summary_file import write_cache

log = logger(__name__)

FORMAT = "swarm-record-summary"
VERSION = 1
MARKS = (b"_request", b"_response", b"\\u")
CHECK_BYTES = 4096  # the bytes before the offset read, whose CRC-32 tells a rewritten record
SAVE_AFTER_BYTES = 64 * 1024  # a look that read less than this new text writes no summary
TAIL_BYTES = 64 * 1024  # the record's end read for the latest messages: a few hundred


def marked_lines(record: Path, summary: Path) -> list[bytes]:
    """Every complete line of `record` holding one of `MARKS`, oldest first (none: no
    record). A link in place of the record raises `safefs.LinkRefused`."""
    try:
        fd = safefs.open_path(record, os.O_RDONLY)
    except (FileNotFoundError, safefs.NotRegularFile):  # a FIFO: its next write moves it aside
        return []
    try:
        st = os.fstat(fd)
        start, found = _cached(summary, fd, st.st_ino, st.st_size)
        data = safefs.read_fd(fd, st.st_size, start)
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        found += _marked(data[:end])
        if end >= SAVE_AFTER_BYTES:
            _save(summary, st.st_ino, start + end, _check(fd, start + end), found)
    finally:
        os.close(fd)
    return found


def tail_lines(record: Path, tail_bytes: int = TAIL_BYTES) -> tuple[list[bytes], bool]:
    """The complete lines in the last `tail_bytes` of `record`, oldest first (the first one
    only if it starts there), and whether they are all the record has (no record: none)."""
    try:
        fd = safefs.open_path(record, os.O_RDONLY)
    except (FileNotFoundError, safefs.NotRegularFile):
        return [], True
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - tail_bytes)
        data = safefs.read_fd(fd, size, max(0, start - 1))  # the byte before: a line's start?
    finally:
        os.close(fd)
    if start > 0:
        data = data[data.index(b"\n") + 1 :] if b"\n" in data else b""
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1], start == 0


def _marked(text: bytes) -> list[bytes]:
    """The lines of `text` (whole lines) holding a mark, found at C speed: a search per mark,
    not a look at each line."""
    starts: set[int] = set()
    for mark in MARKS:
        at = text.find(mark)
        while at >= 0:
            line_start = text.rfind(b"\n", 0, at) + 1
            starts.add(line_start)
            line_end = text.find(b"\n", at)
            at = text.find(mark, line_end)
    return [text[s : text.index(b"\n", s)] for s in sorted(starts)]


def _check(fd: int, offset: int) -> int:
    """The CRC-32 of the `CHECK_BYTES` before `offset` in the open record."""
    start = max(0, offset - CHECK_BYTES)
    return zlib.crc32(os.pread(fd, offset - start, start))


def _cached(summary: Path, fd: int, inode: int, size: int) -> tuple[int, list[bytes]]:
    """Where to read the record from, and the marked lines before that: from the summary if
    it is one of this record as it still is, else from the start."""
    try:
        head, _, body = safefs.read_bytes(summary).partition(b"\n")
        header = json.loads(head)
        if (
            type(header) is not dict
            or header.get("format") != FORMAT
            or header.get("version") != VERSION
            or header.get("inode") != inode
            or type(header.get("offset")) is not int
            or not 0 <= header["offset"] <= size
            or header.get("check") != _check(fd, header["offset"])
            or header.get("crc") != zlib.crc32(body)
        ):
            return 0, []
    except (OSError, ValueError):  # missing, a link, unreadable, not JSON
        return 0, []
    lines = body.split(b"\n")[:-1] if body else []
    return header["offset"], lines


def _save(summary: Path, inode: int, offset: int, check: int, lines: list[bytes]) -> None:
    body = b"".join(line + b"\n" for line in lines)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "inode": inode,
        "offset": offset,
        "check": check,
        "crc": zlib.crc32(body),
    }
    try:
        write_cache(summary, dumps_compact(header).encode() + b"\n" + body)
    except OSError as exc:  # read-only, full, a link in the way: only a cache
        log.debug("record summary %s not written: %s", summary, exc)
