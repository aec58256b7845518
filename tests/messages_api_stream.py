"""The server-sent events of one answer of the test Messages API (`messages_api`), as the
API sends them, and the faults a long stream meets.

Events come in the API's order: ``message_start``, then per content block
``content_block_start``, its deltas and ``content_block_stop``, then ``message_delta`` (the
stop reason and output tokens, and the ``server_tool_use`` counts, such as
``web_search_requests``, when the answer has them) and ``message_stop``. A ``text`` block is
one ``text_delta``; a ``tool_use`` or ``server_tool_use`` block one ``input_json_delta``; a
``thinking`` block starts empty (``{"type": "thinking", "thinking": "", "signature": ""}``),
then comes in ``thinking_delta`` pieces of at most `THINKING_PIECE` characters and one
``signature_delta``; any other block (a ``redacted_thinking`` one, a
``web_search_tool_result``) is whole in its ``content_block_start``.

Options (`send_stream`): `cut` sends only the first half of the last ``tool_use`` block's input
JSON (an answer cut off by ``max_tokens``); `fault` breaks the stream after `fault_after` whole
blocks (0: right after ``message_start``; more than there are: before ``message_delta``) with an
SSE ``error`` event (``"overloaded"``, ``"api_error"``: the bodies in `FAULT_ERRORS`, then the
stream ends) or by closing the connection (``"reset"``: the socket is shut down without the
end of the body; such a stream is always sent chunked in HTTP/1.1, so that the client can tell
the body was cut short, where an HTTP/1.0 body would simply end); `stall` is called after
`stall_after` whole blocks (before a fault at the same place) and may wait.

What the `anthropic` SDK (2.14) makes of these, for tests that rely on it: an ``error`` event
raises ``anthropic.APIStatusError`` with ``status_code`` 200 (the status the response began
with) and the event's JSON as its ``body``; a reset raises ``httpx2.RemoteProtocolError``
(the SDK's HTTP client; "peer closed connection without sending complete message body
(incomplete chunked read)") from the stream's iteration, not wrapped in an ``anthropic``
error (a non-streaming request that gets no response raises ``anthropic.APIConnectionError``
once retries are spent); a stream closed from another thread while its reader waits in
``recv()`` does not wake it (no FIN goes out) until more bytes arrive; a cut ``tool_use`` ends
with the input the SDK's partial JSON parser (``jiter``, ``partial_mode=True``) makes of the
half: complete keys and values, a list or object cut inside kept as far as it is complete, a
number cut inside read as far as it goes (``123`` cut after ``12`` is 12), and a string, key
or ``true``/``false``/``null`` cut inside left out (the beta client asking for the
``fine-grained-tool-streaming-2025-05-14`` beta keeps a cut string's beginning instead).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

THINKING_PIECE = 100  # characters of thinking per thinking_delta
FAULT_ERRORS: dict[str, tuple[int, dict[str, Any]]] = {  # fault: (HTTP status, error body)
    "overloaded": (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ),
    "api_error": (
        500,
        {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
    ),
}


class ClientGone(Exception):
    """The client closed its connection while the answer was being sent."""


def half_json(value: dict[str, Any]) -> str:
    """The first half of `value`'s JSON: what a tool call cut off mid-way streamed."""
    text = json.dumps(value)
    return text[: len(text) // 2]


def complete_keys(value: dict[str, Any]) -> dict[str, Any]:
    """The keys of `value` whose whole value fits in `half_json(value)`: the input a
    non-streaming answer gives a tool call cut off mid-way (simplest honest approximation:
    the API's own non-streaming answer for it is not documented)."""
    room = len(half_json(value))
    kept: dict[str, Any] = {}
    for key, item in value.items():
        # the JSON up to this item's end is the JSON of the keys so far without its "}"
        if len(json.dumps({**kept, key: item})) - 1 > room:
            break
        kept[key] = item
    return kept


def send_stream(
    handler: BaseHTTPRequestHandler,
    message: dict[str, Any],
    *,
    chunked: bool = False,
    cut: bool = False,
    fault: str | None = None,
    fault_after: int = 1,
    stall: Callable[[], None] | None = None,
    stall_after: int = 1,
) -> None:
    """The message as server-sent events (module doc); `chunked`: in HTTP/1.1 chunks, so that
    the connection stays open after the stream (an HTTP/1.0 stream ends when it closes)."""
    if fault == "reset" and not chunked:
        handler.protocol_version = "HTTP/1.1"  # framed: the client sees the body cut short
        chunked = True
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    if chunked:
        handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()

    def event(name: str, data: dict[str, Any]) -> None:
        payload = f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
        if chunked:
            payload = b"%x\r\n%s\r\n" % (len(payload), payload)
        handler.wfile.write(payload)

    def end() -> None:
        if chunked:
            handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def broke(sent: int) -> bool:
        """Stall and break here if asked to; True if the stream has ended."""
        if stall is not None and sent == min(stall_after, len(blocks)):
            stall()
        if fault is None or sent != min(fault_after, len(blocks)):
            return False
        if fault == "reset":
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return True
        event("error", {"error": FAULT_ERRORS[fault][1]["error"]})
        end()
        return True

    usage = message["usage"]
    at_end = ("output_tokens", "server_tool_use")
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # as the API does: every input count in message_start, the output count (and the server
        # tools' uses) at the end
        "usage": {**{k: v for k, v in usage.items() if k not in at_end}, "output_tokens": 1},
    }
    event("message_start", {"message": start})
    blocks = message["content"]
    for index, block in enumerate(blocks):
        if broke(index):
            return
        for name, data in _block_events(block, cut and index == len(blocks) - 1):
            event(name, {"index": index, **data})
        event("content_block_stop", {"index": index})
    if broke(len(blocks)):
        return
    event(
        "message_delta",
        {
            "delta": {
                "stop_reason": message["stop_reason"],
                "stop_sequence": message["stop_sequence"],
            },
            "usage": {
                "output_tokens": usage.get("output_tokens", 0),
                **(
                    {"server_tool_use": usage["server_tool_use"]}
                    if "server_tool_use" in usage
                    else {}
                ),
            },
        },
    )
    event("message_stop", {})
    end()


def _block_events(block: dict[str, Any], cut: bool) -> list[tuple[str, dict[str, Any]]]:
    """A content block's ``content_block_start`` and deltas; `cut`: a tool call's input is
    sent only half."""
    kind = block["type"]
    if kind == "text":
        return [
            ("content_block_start", {"content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"delta": {"type": "text_delta", "text": block["text"]}}),
        ]
    if kind in ("tool_use", "server_tool_use"):
        partial = half_json(block["input"]) if cut else json.dumps(block["input"])
        return [
            ("content_block_start", {"content_block": {**block, "input": {}}}),
            (
                "content_block_delta",
                {"delta": {"type": "input_json_delta", "partial_json": partial}},
            ),
        ]
    if kind == "thinking":
        text = block["thinking"]
        pieces = [text[i : i + THINKING_PIECE] for i in range(0, len(text), THINKING_PIECE)]
        empty = {"type": "thinking", "thinking": "", "signature": ""}
        return [
            ("content_block_start", {"content_block": empty}),
            *(
                ("content_block_delta", {"delta": {"type": "thinking_delta", "thinking": piece}})
                for piece in pieces or [""]
            ),
            (
                "content_block_delta",
                {"delta": {"type": "signature_delta", "signature": block["signature"]}},
            ),
        ]
    # redacted_thinking, web_search_tool_result, ...
    return [("content_block_start", {"content_block": block})]
