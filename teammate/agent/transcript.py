"""A teammate's transcript: one JSON line per event (request, response, tool call, tool result,
error, note), each with a timestamp, in ``teams/<team>/agents/<name>.transcript.jsonl``.

Append-only, one whole line per event (`protocols.jsonio.append_durably`, without fsync): a
reader (``tail -f``) never sees half an event, a killed teammate loses at most the line being
written, and a torn last line is cut off before the next one is appended. The file is opened
without following links (`protocols.safefs`).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from protocols import safefs
from protocols.clock import now_iso
from protocols.jsonio import append_durably


class Transcript:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            # a directory that cannot be made shows as records that cannot be written
            with contextlib.suppress(OSError):
                safefs.makedirs(path.parent)

    def record(self, kind: str, **fields: Any) -> None:
        """Append one event; a transcript that cannot be written never stops the teammate."""
        if self.path is None:
            return
        event = {"ts": now_iso(), "kind": kind, **fields}
        line = json.dumps(event, ensure_ascii=False, default=str)
        try:
            data = (line + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (from a hostile message): escape it
            data = (json.dumps(event, ensure_ascii=True, default=str) + "\n").encode("ascii")
        with contextlib.suppress(OSError):
            append_durably(self.path, data, "process")


def read_transcript(path: Path) -> list[dict[str, Any]]:
    """Every complete event in a transcript (a torn last line is skipped)."""
    events = []
    try:
        lines = safefs.read_bytes(path).decode("utf-8", "replace").split("\n")
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events
