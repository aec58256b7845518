"""A teammate's transcript: one JSON line per event (request, response, tool call, tool result,
error, note), each with a timestamp, in ``teams/<team>/agents/<name>.transcript.jsonl``.

Append-only and written one whole line per ``write`` call, so a reader (``tail
-f``) never sees half an event, and a killed teammate loses at most the line being written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from protocols.clock import now_iso


class Transcript:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def record(self, kind: str, **fields: Any) -> None:
        """Append one event; a transcript that cannot be written never stops the teammate."""
        if self.path is None:
            return
        line = json.dumps(
            {"ts": now_iso(), "kind": kind, **fields}, ensure_ascii=False, default=str
        )
        try:
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError:
            pass


def read_transcript(path: Path) -> list[dict[str, Any]]:
    """Every complete event in a transcript (a torn last line is skipped)."""
    events = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events
