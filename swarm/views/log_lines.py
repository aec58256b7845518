"""How `swarm logs` words what a member did: one `LogEvent` per line, and the line each kind of
transcript record, tool call and message reads as (`swarm.views.logs` reads the records;
`swarm.web.threads` and `swarm watch` show the same lines)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from protocols.clock import ms_from_iso
from protocols.errors import ProtocolsError
from protocols.inbox.entry import InboxEntry
from protocols.printable import printable_json_text, printable_line

INPUT_CHARS = 100
TEXT_CHARS = 200
DETAIL_KEYS = (
    "summary",
    "reason",
    "subject",
    "description",
    "message",
    "feedback",
    "error",
    "idleReason",
)


@dataclass(frozen=True)
class LogEvent:
    """One line: ``ts`` (ISO-8601, "" for a process log line), a ``kind``, the readable text."""

    ts: str
    kind: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        """The line to print, escaped (`protocols.printable`): a raw transcript line stays
        valid JSON, anything else shows its control characters as ``\\x1b``, ``\\n``."""
        text = printable_json_text(self.text) if self.kind == "raw" else printable_line(self.text)
        return f"{clock(self.ts)}  {text}" if self.ts else text

    def to_json(self) -> dict[str, Any]:
        return {"ts": self.ts, "kind": self.kind, "text": self.text, **self.fields}


def clock(ts: str) -> str:
    """``HH:MM:SS`` in local time ("--:--:--" when the timestamp does not parse)."""
    ms = ms_from_iso(ts)
    return "--:--:--" if ms is None else datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int = TEXT_CHARS) -> str:
    return cut(" ".join(text.split()), limit)


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def compacted_line(record: dict[str, Any]) -> str:
    """A compaction as a line: what it did, and how big the conversation was before and after."""
    before, after = record.get("pre_tokens"), record.get("post_tokens")
    size = ""
    if isinstance(before, int) and isinstance(after, int):
        size = f": {before:,} -> {after:,} tokens"
    if record.get("how") == "microcompact":
        dropped = record.get("dropped") or 0
        extra = f", {plural(int(dropped), 'message')} dropped" if dropped else ""
        return f"old tool output cleared{extra}{size}"
    trigger = record.get("trigger") or "auto"
    return f"compacted the conversation ({trigger}){size}"


def summarize_input(name: str, tool_input: Any) -> str:
    """A tool call's input on one line: a Bash command, file paths, else compact JSON."""
    if isinstance(tool_input, dict):
        command = tool_input.get("command") if name == "Bash" else None
        if isinstance(command, str):
            return cut(" ↵ ".join(p.strip() for p in command.strip().splitlines()), INPUT_CHARS)
        files = [str(tool_input[k]) for k in ("file_path", "notebook_path") if k in tool_input]
        if files:
            return cut(" ".join(files), INPUT_CHARS)
    compact = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"), default=str)
    return cut(compact, INPUT_CHARS)


def first_line(text: str) -> str:
    """The first line of a tool's output, and how many more there are."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    more = f" ({plural(len(lines) - 1, 'more line')})" if len(lines) > 1 else ""
    return cut(lines[0].strip(), INPUT_CHARS) + more


def token_note(usage: Any) -> str:
    """``(1,234 in / 56 out, 1,000 cached)``: every input token, and how many came from cache."""
    get = usage.get if isinstance(usage, dict) else lambda key: None
    cached = int(get("cache_read_input_tokens") or 0)
    prompt = int(get("input_tokens") or 0) + cached + int(get("cache_creation_input_tokens") or 0)
    note = f"({prompt:,} in / {int(get('output_tokens') or 0):,} out"
    return note + (f", {cached:,} cached)" if cached else ")")


def message_text(entry: InboxEntry) -> str:
    """A plain message on one line; a structured one as ``[type]`` and its main detail."""
    try:
        message = entry.structured()
    except ProtocolsError:
        return f"[invalid] {one_line(entry.text)}"
    if message is None:
        return one_line(entry.text)
    body = message.to_json_dict()
    detail = next((body[k] for k in DETAIL_KEYS if isinstance(body.get(k), str)), "")
    return f"[{message.type}] {one_line(detail)}".rstrip()


def _error_line(record: dict[str, Any]) -> str:
    status = f" ({record['status']})" if record.get("status") else ""
    return f"model error{status}: {one_line(str(record.get('error')))}"


def _shell_line(record: dict[str, Any]) -> str:
    code = record.get("exit_code")
    end = f" (exit code {code})" if isinstance(code, int) else ""
    what = one_line(str(record.get("command") or ""))
    return f"background command {record.get('id')} {record.get('state')}{end}: {what}"


def _not_compacted_line(record: dict[str, Any]) -> str:
    why = one_line(str(record.get("error") or record.get("reason") or ""))
    failed = (
        "no summary could be had" if record["kind"] == "compact_failed" else "a hook blocked it"
    )
    return f"not compacted ({failed}): {why}"


def _trimmed_line(record: dict[str, Any]) -> str:
    budget, dropped = int(record.get("budget") or 0), int(record.get("dropped") or 0)
    return f"trimmed the conversation to {budget:,} tokens ({plural(dropped, 'message')} dropped)"


def _session_line(record: dict[str, Any]) -> str:
    how = "carrying on with its conversation" if record.get("resumed") else "fresh"
    return f"started (pid {record.get('pid')}), {how}"


def _mcp_line(record: dict[str, Any]) -> str:
    server, state = str(record.get("server") or "?"), str(record.get("state") or "?")
    detail = f": {one_line(str(record['error']))}" if record.get("error") else ""
    if state == "connected":
        detail = f" ({plural(len(record.get('tools') or []), 'tool')})"
    return f"MCP server {server} {state}{detail}"


# a transcript record's kind -> its one line in `swarm logs` (tool calls and responses apart)
RECORD_LINES: dict[str, Callable[[dict[str, Any]], str]] = {
    "error": _error_line,
    "shell": _shell_line,
    "compacted": compacted_line,
    "compact_failed": _not_compacted_line,
    "compact_blocked": _not_compacted_line,
    "resume_warning": lambda r: f"resumed with a warning: {one_line(str(r.get('warning')))}",
    "trimmed": _trimmed_line,
    "session": _session_line,
    "session_end": lambda record: "stopped",
    "mcp_server": _mcp_line,
}
