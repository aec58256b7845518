"""A transcript's segments: the live file begins at the last compaction, the rest is history.

Each compaction of an agent's conversation (`teammate.agent.loop`) ends a segment of its
transcript. `rotate` starts the live file anew with the compaction's boundary event (which holds
the whole new conversation) and moves the finished segment to the history directory beside it,
``<transcript>.history/0001.jsonl.gz`` (gzip: a finished segment is only read again by
`swarm logs`). So the live file, which `--resume` reads, holds one window's worth of
conversation at most, however long the agent works, and a compaction writes the new
conversation once instead of the whole history each time.

A rotation is three renames; a process killed in the middle of one leaves either the old live
file and a ``.new`` file (the rotation never happened: the ``.new`` is dropped) or only the
``.new`` (the old segment already moved: it becomes the live file); `recover` finishes either.

`load_conversation` is what a resumed agent carries on with: the conversation as of the live
file's last event, or, where the file is damaged, as of the last good boundary, with a warning
saying what was left out.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from protocols.fs.jsonio import atomic_write_bytes

NEW = ".new"
BOUNDARIES = ("compact_boundary", "conversation")  # events that hold a whole conversation
_SEGMENT = re.compile(r"^(\d+)\.jsonl(\.gz)?$")


def history_dir(path: Path) -> Path:
    """Where the finished segments of transcript `path` go."""
    return path.with_name(path.name.removesuffix(".jsonl") + ".history")


def segments(path: Path) -> list[Path]:
    """The finished segments of transcript `path`, oldest first."""
    try:
        names = safefs.listdir(history_dir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = {}
    for name in names:
        match = _SEGMENT.match(name)
        if match and (int(match[1]) not in found or not match[2]):
            found[int(match[1])] = history_dir(path) / name  # a raw one over its .gz: newer
    return [found[n] for n in sorted(found)]


def recover(path: Path) -> None:
    """Finish or undo a rotation a killed process left half done (module doc)."""
    new = path.with_name(path.name + NEW)
    if not safefs.exists(new):
        return
    if safefs.exists(path):
        safefs.unlink(new, missing_ok=True)
    else:
        safefs.replace(new, path)


def rotate(path: Path, first: bytes) -> None:
    """Make `first` (whole lines: the boundary) the live file's content and the old content
    the next finished segment."""
    recover(path)
    new = path.with_name(path.name + NEW)
    atomic_write_bytes(new, first, "process")  # whole or not at all, never through a link
    finished: Path | None = None
    if safefs.exists(path):
        safefs.makedirs(history_dir(path))
        numbers = [int(m[1]) for s in segments(path) if (m := _SEGMENT.match(s.name))]
        finished = history_dir(path) / f"{max(numbers, default=0) + 1:04d}.jsonl"
        safefs.replace(path, finished)
    safefs.replace(new, path)
    if finished is not None:
        with contextlib.suppress(OSError):  # kept uncompressed, it still reads
            _compress(finished)


def _compress(segment: Path) -> None:
    packed = segment.with_name(segment.name + ".gz")
    temporary = segment.with_name(segment.name + ".gz.tmp")
    fd = safefs.open_path(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(safefs.read_bytes(segment))
    safefs.replace(temporary, packed)
    safefs.unlink(segment)


def read_segment(segment: Path) -> bytes:
    data = safefs.read_bytes(segment)
    return gzip.decompress(data) if segment.name.endswith(".gz") else data


@dataclass
class Resumed:
    """What a resumed agent carries on from: the events to play back, and what was wrong."""

    events: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _parse(data: bytes) -> tuple[list[dict[str, Any]], int | None, bool]:
    """The events of `data` up to the first damaged line; that line's number (None: none),
    and whether it was only a torn last line (a writer killed while writing it)."""
    lines = data.split(b"\n")
    complete = lines[:-1]  # the last piece has no newline: torn, or empty
    events: list[dict[str, Any]] = []
    for number, line in enumerate(complete, 1):
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            return events, number, False
        events.append(event)
    return events, (len(lines) if lines[-1].strip() else None), True


def load_conversation(path: Path) -> Resumed:
    """The live transcript's events to play back (`conversation_of`), from its last good
    boundary; a damaged file gives what is good, and a warning for each thing left out."""
    recover(path)
    found = Resumed()
    try:
        data = safefs.read_bytes(path)
    except FileNotFoundError:
        data = b""
    events, bad, torn = _parse(data)
    history = segments(path)
    if bad == 1 and not torn and history:
        # its first line, the boundary the rest builds on, is damaged: the segment before it
        # ends where that boundary began
        try:
            found.events, _, _ = _parse(read_segment(history[-1]))
        except (OSError, EOFError, gzip.BadGzipFile):
            found.events = []
        found.warnings.append(
            f"{path}: its first line (the last compaction's boundary) is damaged; resumed "
            f"from the boundary before it ({history[-1].name}), without what was done since"
        )
        return found
    found.events = events
    if bad is not None and torn:
        found.warnings.append(
            f"{path}: its last line was cut off (the agent was stopped as it wrote it); "
            "resumed without it"
        )
    elif bad is not None:
        later = data.count(b"\n") - bad + 1
        found.warnings.append(
            f"{path}: line {bad} is damaged; resumed from the events before it "
            f"({later} later line(s) left out)"
        )
    return found
