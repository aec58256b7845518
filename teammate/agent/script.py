"""The script format shared by the scripted model and the test suite's Messages API server.

A script is a YAML (or JSON) list of turns, each one model response, played in order:

```yaml
- text: "I'll write the file."        # a text block (optional)
  tool: Write                          # one tool call: name ...
  input: {file_path: out.txt, content: "hi"}   # ... and its input
- tools:                               # several tool calls in one turn
    - {name: Read, input: {file_path: out.txt}}
    - {name: SendMessage, input: {to: team-lead, message: done, summary: done}}
- error: 529                           # the API answers with this HTTP status instead
  message: Overloaded                  # (optional) the error's message
- text: All done.                      # no tool call: the turn ends (stop_reason end_turn)
  usage: {input_tokens: 1200, output_tokens: 40}
```

`Turn` is one entry; `load_script` reads a file and names the entry and field that is wrong.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.errors import Error

DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5}
_KEYS = {
    "text",
    "tool",
    "input",
    "tools",
    "error",
    "message",
    "retry_after",
    "usage",
    "stop_reason",
}


class ScriptError(Error, ValueError):
    """A script that cannot be played; the message names the file, the turn and the field."""


_ids = itertools.count(1)


def tool_use_id() -> str:
    return f"toolu_script_{next(_ids):06d}"


@dataclass
class Turn:
    """One model response: content blocks, why it stopped, and token usage (or an HTTP error)."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    error: int | None = None  # answer with this HTTP status instead
    retry_after: float | None = None
    message: str = "scripted error"  # the error's message

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> Turn:
        return cls([{"type": "text", "text": text}], **kwargs)

    @classmethod
    def tool(cls, name: str, tool_input: dict[str, Any], text: str | None = None) -> Turn:
        return cls.tools([(name, tool_input)], text)

    @classmethod
    def tools(cls, calls: list[tuple[str, dict[str, Any]]], text: str | None = None) -> Turn:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for name, tool_input in calls:
            blocks.append(
                {"type": "tool_use", "id": tool_use_id(), "name": name, "input": tool_input}
            )
        return cls(blocks, stop_reason="tool_use")

    @classmethod
    def failure(
        cls, status: int, retry_after: float | None = 0.0, message: str = "scripted error"
    ) -> Turn:
        return cls(error=status, retry_after=retry_after, message=message)

    @classmethod
    def from_value(cls, value: Any, where: str = "turn") -> Turn:
        """A turn from its script form (see the module docstring)."""
        if isinstance(value, str):
            return cls.text(value)
        if not isinstance(value, dict):
            raise ScriptError(f"{where}: a turn is a mapping or a string, got {value!r}")
        unknown = set(value) - _KEYS
        if unknown:
            raise ScriptError(
                f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}"
            )
        usage = value.get("usage", DEFAULT_USAGE)
        if not isinstance(usage, dict) or not all(isinstance(v, int) for v in usage.values()):
            raise ScriptError(f"{where}: usage must map token kinds to integers")
        if "error" in value:
            if not isinstance(value["error"], int) or not 400 <= value["error"] <= 599:
                raise ScriptError(f"{where}: error must be an HTTP status 400-599")
            return cls.failure(
                value["error"], value.get("retry_after", 0.0), str(value.get("message", "scripted"))
            )
        calls = [_call(value, where)] if "tool" in value else []
        for index, item in enumerate(value.get("tools") or []):
            calls.append(_call(item, f"{where}.tools[{index}]"))
        text = value.get("text")
        if text is not None and not isinstance(text, str):
            raise ScriptError(f"{where}: text must be a string")
        if calls:
            turn = cls.tools(calls, text)
        elif text is not None:
            turn = cls.text(text)
        else:
            raise ScriptError(f"{where}: a turn needs text, tool, tools or error")
        turn.usage = {**usage}
        turn.stop_reason = value.get("stop_reason", turn.stop_reason)
        return turn


def _call(value: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ScriptError(f"{where}: a tool call is a mapping with name and input")
    name = value.get("tool", value.get("name"))
    tool_input = value.get("input", {})
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}: the tool name is missing")
    if not isinstance(tool_input, dict):
        raise ScriptError(f"{where}: input must be a mapping")
    return name, tool_input


def parse_script(values: Any, source: str = "script") -> list[Turn]:
    if not isinstance(values, list):
        raise ScriptError(f"{source}: a script is a list of turns")
    return [
        Turn.from_value(value, f"{source}: turn {index + 1}") for index, value in enumerate(values)
    ]


def load_script(path: Path) -> list[Turn]:
    """Read a YAML or JSON script file; `ScriptError` says what is wrong and where."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from None
    import yaml  # here: only a scripted teammate reads a script

    try:
        values = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ScriptError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}"
        ) from None
    return parse_script(values, str(path))
