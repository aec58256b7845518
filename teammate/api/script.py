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
- thinking: "The file is written; check it."   # a thinking block first (signed for you)
  redacted_thinking: "EmwKAhgBEgy3va..."       # (optional) a redacted thinking block's data
  tool: Read
  input: {file_path: out.txt}
- text: "Here is the long ans"         # an answer cut off: stop_reason may be any the API
  stop_reason: max_tokens              # sends (end_turn, tool_use, max_tokens, stop_sequence,
                                       # pause_turn, refusal, model_context_window_exceeded)
- text: "Half an answer"               # the stream breaks after it began: overloaded,
  fault: overloaded                    # api_error (an SSE error event) or reset (the
  fault_after: 1                       # connection drops), after this many whole blocks
- text: All done.                      # no tool call: the turn ends (stop_reason end_turn)
  usage: {input_tokens: 1200, output_tokens: 40}
- web_search:                          # the API ran its web search tool: a server_tool_use
    query: swarm agent teams           # and a web_search_tool_result block (before the text
    results:                           # and tool calls), one search in its usage; results
      - {title: Swarm, url: "https://example.com/swarm"}   # may be an error code instead:
  text: Found it.                      # `error: max_uses_exceeded`
```

`Turn` is one entry; `load_script` reads a file and names the entry and field that is wrong.
A tool call cut off by ``max_tokens`` or ``model_context_window_exceeded`` is sent with half
its input (``cut: false`` sends it whole); ``stop_sequence:`` names the sequence that matched.
The test suite's Messages API server (``tests/messages_api.py``) plays every field; the
scripted model has no stream, so it plays a ``fault`` as a failed call.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
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
    "stop_sequence",
    "thinking",
    "redacted_thinking",
    "cut",
    "fault",
    "fault_after",
    "web_search",
}
# every stop reason the API sends (``compaction``: the beta API's server-side compaction)
STOP_REASONS = {
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
    "compaction",
}
CUT_BY = {"max_tokens", "model_context_window_exceeded"}  # stop reasons that cut a tool call
FAULTS = {"overloaded", "api_error", "reset"}


class ScriptError(Error, ValueError):
    """A script that cannot be played; the message names the file, the turn and the field."""


_ids = itertools.count(1)


def tool_use_id() -> str:
    return f"toolu_script_{next(_ids):06d}"


def server_tool_use_id() -> str:
    return f"srvtoolu_script_{next(_ids):06d}"


def web_search_blocks(query: str, results: list[dict[str, Any]] | str) -> list[dict[str, Any]]:
    """The ``server_tool_use`` and ``web_search_tool_result`` blocks of one web search the API
    ran: `results` are its hits (``title``, ``url``; ``encrypted_content`` and ``page_age``
    made up if not given), or an error code (``max_uses_exceeded``, ``too_many_requests``...)."""
    use_id = server_tool_use_id()
    content: list[dict[str, Any]] | dict[str, Any]
    if isinstance(results, str):
        content = {"type": "web_search_tool_result_error", "error_code": results}
    else:
        content = [
            {
                "type": "web_search_result",
                "encrypted_content": f"enc-{index}",
                "page_age": "1 day ago",
                **hit,
            }
            for index, hit in enumerate(results)
        ]
    return [
        {"type": "server_tool_use", "id": use_id, "name": "web_search", "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": use_id, "content": content},
    ]


@dataclass
class Turn:
    """One model response: content blocks, why it stopped, and token usage (or an HTTP error).

    `content` may hold ``thinking`` blocks (`thinking_block`: signed for you when the block
    has no signature) and ``redacted_thinking`` blocks before the text and tool calls. The
    fields after `message` are played by the test suite's Messages API server:

    - `stop_sequence`: the sequence that matched, for ``stop_reason="stop_sequence"``;
    - `cut`: with ``stop_reason`` ``max_tokens`` or ``model_context_window_exceeded``, a last
      ``tool_use`` block is sent cut off (half its input JSON); False sends it whole;
    - `fault`: the answer breaks after a 200 response began: ``"overloaded"`` or
      ``"api_error"`` (an SSE ``error`` event), ``"reset"`` (the connection drops), after
      `fault_after` whole content blocks (0: right after ``message_start``);
    - `stall`: the stream waits on this event (at most 60 s) after `stall_after` whole blocks.
    """

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    # token counts; ``server_tool_use`` ({"web_search_requests": N}) as the API reports it
    usage: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    error: int | None = None  # answer with this HTTP status instead
    retry_after: float | None = None
    message: str = "scripted error"  # the error's message
    stop_sequence: str | None = None
    cut: bool = True
    fault: str | None = None
    fault_after: int = 1
    stall: threading.Event | None = field(default=None, compare=False, repr=False)
    stall_after: int = 1

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {sorted(FAULTS)}, not {self.fault!r}")

        def unsigned(block: dict[str, Any]) -> bool:
            return block.get("type") == "thinking" and not block.get("signature")

        if any(unsigned(block) for block in self.content):  # a new list: the caller's stays
            self.content = [
                Turn.thinking_block(block.get("thinking", "")) if unsigned(block) else block
                for block in self.content
            ]

    @staticmethod
    def thinking_block(thinking: str, signature: str | None = None) -> dict[str, Any]:
        """A thinking block; without a `signature`, a deterministic one made from the text."""
        if not signature:
            digest = hashlib.sha256(b"scripted thinking\0" + thinking.encode()).digest()
            signature = base64.b64encode(digest).decode()
        return {"type": "thinking", "thinking": thinking, "signature": signature}

    @staticmethod
    def _thoughts(thinking: str | None, redacted_thinking: str | None) -> list[dict[str, Any]]:
        blocks = [Turn.thinking_block(thinking)] if thinking is not None else []
        if redacted_thinking is not None:
            blocks.append({"type": "redacted_thinking", "data": redacted_thinking})
        return blocks

    @classmethod
    def text(
        cls,
        text: str,
        *,
        thinking: str | None = None,
        redacted_thinking: str | None = None,
        **kwargs: Any,
    ) -> Turn:
        """A text answer, after a thinking block (`thinking`) and a redacted one if given."""
        blocks = cls._thoughts(thinking, redacted_thinking)
        return cls([*blocks, {"type": "text", "text": text}], **kwargs)

    @classmethod
    def tool(
        cls,
        name: str,
        tool_input: dict[str, Any],
        text: str | None = None,
        *,
        thinking: str | None = None,
        redacted_thinking: str | None = None,
        **kwargs: Any,
    ) -> Turn:
        return cls.tools(
            [(name, tool_input)],
            text,
            thinking=thinking,
            redacted_thinking=redacted_thinking,
            **kwargs,
        )

    @classmethod
    def tools(
        cls,
        calls: list[tuple[str, dict[str, Any]]],
        text: str | None = None,
        *,
        thinking: str | None = None,
        redacted_thinking: str | None = None,
        **kwargs: Any,
    ) -> Turn:
        blocks = cls._thoughts(thinking, redacted_thinking)
        if text:
            blocks.append({"type": "text", "text": text})
        for name, tool_input in calls:
            blocks.append(
                {"type": "tool_use", "id": tool_use_id(), "name": name, "input": tool_input}
            )
        return cls(blocks, **{"stop_reason": "tool_use", **kwargs})

    @classmethod
    def web_search(
        cls,
        query: str,
        results: list[dict[str, Any]] | str,
        text: str | None = None,
        **kwargs: Any,
    ) -> Turn:
        """An answer after the API ran one web search (`web_search_blocks`), then `text`; its
        usage counts the search (``server_tool_use.web_search_requests``)."""
        blocks = web_search_blocks(query, results)
        if text is not None:
            blocks.append({"type": "text", "text": text})
        usage = {**DEFAULT_USAGE, "server_tool_use": {"web_search_requests": 1}}
        return cls(blocks, **{"usage": usage, **kwargs})

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
        text = _optional(value, "text", str, where)
        thoughts = {
            "thinking": _optional(value, "thinking", str, where),
            "redacted_thinking": _optional(value, "redacted_thinking", str, where),
        }
        searched = _web_search(value.get("web_search"), where)
        if calls:
            turn = cls.tools(calls, text, **thoughts)
        elif text is not None:
            turn = cls.text(text, **thoughts)
        elif any(thought is not None for thought in thoughts.values()) or searched:
            turn = cls(cls._thoughts(**thoughts))  # only thinking: say, cut off by max_tokens
        else:
            raise ScriptError(
                f"{where}: a turn needs text, tool, tools, thinking, web_search or error"
            )
        turn.usage = {**usage}
        if searched:
            thought = sum(1 for b in turn.content if "thinking" in b.get("type", ""))
            turn.content[thought:thought] = searched
            turn.usage["server_tool_use"] = {"web_search_requests": 1}
        turn.stop_reason = _optional(value, "stop_reason", str, where) or turn.stop_reason
        if turn.stop_reason not in STOP_REASONS:
            raise ScriptError(f"{where}: stop_reason must be one of {sorted(STOP_REASONS)}")
        turn.stop_sequence = _optional(value, "stop_sequence", str, where)
        cut = _optional(value, "cut", bool, where)
        turn.cut = turn.cut if cut is None else cut
        turn.fault = _optional(value, "fault", str, where)
        if turn.fault is not None and turn.fault not in FAULTS:
            raise ScriptError(f"{where}: fault must be one of {sorted(FAULTS)}")
        fault_after = _optional(value, "fault_after", int, where)
        if fault_after is not None and fault_after < 0:
            raise ScriptError(f"{where}: fault_after must be a whole number of blocks, 0 or more")
        turn.fault_after = turn.fault_after if fault_after is None else fault_after
        return turn


_KINDS = {str: "a string", bool: "true or false", int: "a whole number"}


def _optional(value: dict[str, Any], key: str, kind: type[Any], where: str) -> Any:
    """``value[key]`` if it is a `kind` (None when absent); `ScriptError` if it is not."""
    found = value.get(key)
    wrong = not isinstance(found, kind) or (kind is int and isinstance(found, bool))
    if found is not None and wrong:
        raise ScriptError(f"{where}: {key} must be {_KINDS[kind]}")
    return found


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


def _web_search(value: Any, where: str) -> list[dict[str, Any]]:
    """A turn's ``web_search`` field as its two blocks ([] when absent); `ScriptError` if bad."""
    if value is None:
        return []
    shape = "web_search must be a mapping with query and results (a list of {title, url}) or error"
    if not isinstance(value, dict) or not isinstance(value.get("query"), str):
        raise ScriptError(f"{where}: {shape}")
    if isinstance(value.get("error"), str):
        return web_search_blocks(value["query"], value["error"])
    hits = value.get("results")
    fields = ("title", "url")
    if not isinstance(hits, list) or not all(
        isinstance(hit, dict) and all(isinstance(hit.get(k), str) for k in fields) for hit in hits
    ):
        raise ScriptError(f"{where}: {shape}")
    return web_search_blocks(value["query"], [{k: hit[k] for k in fields} for hit in hits])


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
