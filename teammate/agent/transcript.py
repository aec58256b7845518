"""A teammate's transcript: one JSON line per event (request, response, tool call, tool result,
error, note), each with a timestamp, in ``teams/<team>/agents/<name>.transcript.jsonl``.

It is also the agent's conversation, so a restarted teammate (``--resume``) or a sub-agent of
an earlier process can carry on where it stopped: ``session`` opens an instance's record,
``message`` adds to the conversation exactly as the loop did (`add_message`), ``conversation``
replaces it whole (a resumed start, a fork's seed), ``compact_boundary`` too (a compaction, or
old tool output cleared: `boundary`, which also starts a new segment of the file,
`teammate.agent.transcript_history`), and ``session_end`` says the instance stopped in order.
`conversation_of` plays that back. What the model said and the tools returned is in the
messages; ``response`` and ``tool_result`` records keep only what `swarm logs` shows of them
(the text, a result's first 2,000 characters), so nothing is written twice.

Append-only, one whole line per event (`protocols.fs.jsonio.append_durably`, without fsync): a
reader (``tail -f``) never sees half an event, a killed teammate loses at most the line being
written, and a torn last line is cut off before the next one is appended. The file is opened
without following links (`protocols.fs.safefs`).

`hold` keeps the lines recorded from then on in memory until `release` appends them, in order,
in one write: the agent loop holds a run's first lines (the prompt, the request) until the
request has been sent. Held lines die with the process; so does the request they describe,
unsent (the message it answers is still unread in the inbox).

A `mirror` is handed every event as it is recorded: on a PostgreSQL team, the shipper of the
member's log to the store (`protocols.pg.member_log`), for `swarm logs` on other hosts.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocols.clock import now_iso
from protocols.fs import safefs
from protocols.fs.jsonio import append_durably
from teammate.agent.transcript_history import BOUNDARIES, rotate


class Transcript:
    def __init__(
        self, path: Path | None, mirror: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        self.path = path
        self.mirror = mirror  # also given each event (a PostgreSQL team's log shipper)
        self._held: list[bytes] | None = None  # lines waiting for `release` (None: not held)
        self._lock = threading.Lock()  # MCP servers' states are recorded from another thread
        if path is not None:
            # a directory that cannot be made shows as records that cannot be written
            with contextlib.suppress(OSError):
                safefs.makedirs(path.parent)

    def record(self, kind: str, **fields: Any) -> None:
        """Append one event; a transcript that cannot be written never stops the teammate."""
        if self.path is None and self.mirror is None:
            return
        event = {"ts": now_iso(), "kind": kind, **fields}
        if self.mirror is not None:
            self.mirror(event)
        if self.path is None:
            return
        data = _encoded(event)
        with self._lock:
            if self._held is not None:
                self._held.append(data)
                return
            self._append(data)

    def boundary(self, messages: list[dict[str, Any]], **info: Any) -> None:
        """The conversation is now `messages` (a compaction): the boundary event, first line of
        a new segment of the file; what was held is written first, to the segment it ends."""
        event = {"ts": now_iso(), "kind": "compact_boundary", **info, "messages": messages}
        if self.mirror is not None:
            self.mirror(event)
        self.release()
        if self.path is None:
            return
        with self._lock, contextlib.suppress(OSError):
            rotate(self.path, _encoded(event))

    def hold(self) -> None:
        """Keep what is recorded from now on in memory, until `release`."""
        with self._lock:
            if self._held is None:
                self._held = []

    def release(self) -> None:
        """Write what was held (one append), and record directly again."""
        with self._lock:
            held, self._held = self._held, None
            if held:
                self._append(b"".join(held))

    def _append(self, data: bytes) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                append_durably(self.path, data, "process")


def _encoded(event: dict[str, Any]) -> bytes:
    line = json.dumps(event, ensure_ascii=False, default=str)
    try:
        return (line + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from a hostile message): escape it
        return (json.dumps(event, ensure_ascii=True, default=str) + "\n").encode("ascii")


def add_message(messages: list[dict[str, Any]], role: str, content: list[dict[str, Any]]) -> None:
    """Add `content` as a `role` turn: a user turn right after another user turn joins it (the
    API wants turns to alternate). The loop and the playback both add messages this way."""
    if not content:
        return
    if role == "user" and messages and messages[-1]["role"] == "user":
        messages[-1]["content"].extend(content)
    else:
        messages.append({"role": role, "content": list(content)})


INTERRUPTED = "[interrupted: the agent stopped before this tool call finished]"


def conversation_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation the last instance recorded in `events` had when it stopped (empty if
    none), ready to send again: a tool call it never answered is answered as interrupted."""
    messages: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("kind")
        if kind == "session" and not event.get("resumed"):
            messages = []
        elif kind in BOUNDARIES and isinstance(event.get("messages"), list):
            messages = [m for m in event["messages"] if _is_message(m)]
        elif kind == "message" and _is_message(event):
            add_message(messages, event["role"], event["content"])
    return _answer_open_calls(messages)


def ended_in_order(events: list[dict[str, Any]]) -> bool:
    """Whether the last instance recorded in `events` stopped in order (not killed, not
    crashed); True for a transcript with no instance at all."""
    for event in reversed(events):
        if event.get("kind") == "session_end":
            return True
        if event.get("kind") in ("session", "compact_boundary"):  # a live instance's
            return False
    return True


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("role") in ("user", "assistant")
        and isinstance(value.get("content"), list)
        and all(isinstance(block, dict) for block in value["content"])
    )


def _answer_open_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if messages and messages[-1]["role"] == "assistant":
        uses = [b for b in messages[-1]["content"] if b.get("type") == "tool_use" and "id" in b]
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b["id"],
                "content": INTERRUPTED,
                "is_error": True,
            }
            for b in uses
        ]
        add_message(messages, "user", results)
    return messages


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
