"""A local HTTP server that speaks the Anthropic Messages API and plays scripted turns.

Tests point the real `anthropic` SDK (or Claude Code, spec section 8) at it with
``ANTHROPIC_BASE_URL``; nothing reaches the network. It serves ``POST /v1/messages`` both as a
JSON response and, when the request asks for ``"stream": true``, as server-sent events in the
order the API uses (``message_start``, ``content_block_start``/``_delta``/``_stop`` per block,
``message_delta``, ``message_stop``).

A script is a list of `Turn`s played in order, or a function from the request body to a `Turn`
(to answer depending on what the model was sent). Every request is recorded in `requests`.
`Turn.error` makes the server answer with that HTTP status instead (429, 529, 500 ...), to test
retries.

    with MessagesAPI([Turn.text("hello")]) as api:
        client = anthropic.Anthropic(api_key="test", base_url=api.url)
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Turn:
    """One model response: content blocks, why it stopped, and token usage."""

    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    error: int | None = None  # answer with this HTTP status instead
    retry_after: float | None = None

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> Turn:
        return cls([{"type": "text", "text": text}], **kwargs)

    @classmethod
    def tool(cls, name: str, tool_input: dict[str, Any], text: str | None = None) -> Turn:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": _tool_id(), "name": name, "input": tool_input})
        return cls(blocks, stop_reason="tool_use")

    @classmethod
    def failure(cls, status: int, retry_after: float | None = 0.0) -> Turn:
        return cls(error=status, retry_after=retry_after)


_ids = itertools.count(1)


def _tool_id() -> str:
    return f"toolu_stub_{next(_ids):06d}"


Script = list[Turn] | Callable[[dict[str, Any]], Turn]


class MessagesAPI:
    """The server; a context manager that runs it on 127.0.0.1 on a free port."""

    def __init__(self, script: Script, model: str = "claude-stub") -> None:
        self.script = script
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._turns = iter(script) if isinstance(script, list) else None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the server is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> MessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                api._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        with self._lock:
            self.requests.append(body)
            if self._turns is None:
                return self.script(body)  # type: ignore[operator]
            turn = next(self._turns, None)
        if turn is None:
            return Turn.text("(the script has no more turns)")
        return turn

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path.split("?")[0] != "/v1/messages":
            _send_json(
                handler,
                404,
                {"type": "error", "error": {"type": "not_found_error", "message": handler.path}},
            )
            return
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        turn = self._next_turn(body)
        if turn.error is not None:
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(turn.error, "api_error")
            headers = {"retry-after": str(turn.retry_after)} if turn.retry_after is not None else {}
            _send_json(
                handler,
                turn.error,
                {"type": "error", "error": {"type": kind, "message": "scripted"}},
                headers,
            )
            return
        message = {
            "id": f"msg_stub_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model),
            "content": turn.content,
            "stop_reason": turn.stop_reason,
            "stop_sequence": None,
            "usage": turn.usage,
        }
        if body.get("stream"):
            _send_stream(handler, message)
        else:
            _send_json(handler, 200, message)


def _send_json(
    handler: BaseHTTPRequestHandler, status: int, value: Any, headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.send_header("request-id", f"req_stub_{next(_ids):06d}")
    for key, value_ in (headers or {}).items():
        handler.send_header(key, value_)
    handler.end_headers()
    handler.wfile.write(data)


def _send_stream(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.end_headers()

    def event(name: str, data: dict[str, Any]) -> None:
        handler.wfile.write(
            f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
        )

    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1},
    }
    event("message_start", {"message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            event(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": block["text"]}},
            )
        elif block["type"] == "tool_use":
            event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            event(
                "content_block_delta",
                {
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
            )
        event("content_block_stop", {"index": index})
    event(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        },
    )
    event("message_stop", {})
    handler.wfile.flush()
