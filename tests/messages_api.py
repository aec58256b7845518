"""A local HTTP server that speaks the Anthropic Messages API and plays scripted turns.

Tests point the real `anthropic` SDK (or Claude Code, spec section 8) at it with
``ANTHROPIC_BASE_URL``; nothing reaches the network. It serves ``POST /v1/messages`` both as a
JSON response and, when the request asks for ``"stream": true``, as server-sent events in the
order the API uses (``message_start``, ``content_block_start``/``_delta``/``_stop`` per block,
``message_delta``, ``message_stop``).

A script is a list of `Turn`s (`teammate.agent.script`, the format the scripted model plays too)
played in order, or a function from the request body to a `Turn` (to answer depending on what
the model was sent), called for one request at a time, or with ``concurrent=True`` for all of
them at once, so that one answer may wait for another request (the function must then be
thread-safe). Every request is recorded in `requests`.

Clients whose requests do not say which agent is calling (Claude Code's teammates) get a base
URL of their own, `url_for(NAME)` (``.../agent/NAME``): the recorded body then carries NAME
under `AGENT_KEY`, and `by_agent` uses it. ``POST /v1/messages/count_tokens`` answers an
estimate, and a ``HEAD`` of the base URL (Claude Code's connectivity probe) a plain 404.

With ``cache=PromptCache()`` the server also counts tokens the way prompt caching bills them
(an estimate: 4 characters a token): the longest prefix of the request that an earlier request
marked with ``cache_control`` is ``cache_read_input_tokens``, what the new breakpoints add is
``cache_creation_input_tokens``, the rest ``input_tokens``.
`Turn.error` makes the server answer with that HTTP status instead (429, 529, 500 ...), to test
retries.

`arrivals` holds, for each ``/v1/messages`` request, the `time.monotonic` at which it had
arrived whole (headers and body read) next to its recorded body: a benchmark in the same process compares it
with its own clock. With ``keep_alive=True`` the server speaks HTTP/1.1 and keeps connections
open between requests (streams are sent chunked), as the real API does; by default it answers
in HTTP/1.0 and closes each connection.

    with MessagesAPI([Turn.text("hello")]) as api:
        client = anthropic.Anthropic(api_key="test", base_url=api.url)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from teammate.agent.script import Turn

__all__ = ["AGENT_KEY", "MessagesAPI", "PromptCache", "Turn", "by_agent"]
AGENT_KEY = "_stub_agent"  # the recorded body's key for the agent named in the URL path
_ids = itertools.count(1)


Script = list[Turn] | Callable[[dict[str, Any]], Turn]


class MessagesAPI:
    """The server; a context manager that runs it on 127.0.0.1 on a free port."""

    def __init__(
        self,
        script: Script,
        model: str = "claude-stub",
        cache: PromptCache | None = None,
        concurrent: bool = False,
        keep_alive: bool = False,
    ) -> None:
        self.script = script
        self.keep_alive = keep_alive
        self.concurrent = concurrent
        self.model = model
        self.cache = cache
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []  # each /v1/messages body as it arrived, in order
        self.arrivals: list[tuple[float, dict[str, Any]]] = []  # (monotonic time, body)
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
            protocol_version = "HTTP/1.1" if api.keep_alive else "HTTP/1.0"
            # a kept connection's small writes would otherwise wait on delayed ACKs (40 ms)
            disable_nagle_algorithm = api.keep_alive

            def do_POST(self) -> None:
                api._handle(self)

            def do_HEAD(self) -> None:  # Claude Code's connectivity probe of the base URL
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

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
        if self._turns is None and self.concurrent:  # one answer may wait for another request
            with self._lock:
                self.requests.append(body)
            return self.script(body)  # type: ignore[operator]
        with self._lock:
            self.requests.append(body)
            if self._turns is None:
                return self.script(body)  # type: ignore[operator]
            turn = next(self._turns, None)
        if turn is None:
            return Turn.text("(the script has no more turns)")
        return turn

    def url_for(self, agent: str) -> str:
        """A base URL that tells the server which agent is calling (``/agent/NAME``): for
        clients whose requests do not name the agent, such as Claude Code's teammates."""
        return f"{self.url}/agent/{agent}"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        agent = re.match(r"/agent/([^/]+)(/.*)", path)
        if agent:
            path = agent[2]
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        arrived = time.monotonic()  # the whole request is here (headers and body)
        if path == "/v1/messages/count_tokens":
            _send_json(handler, 200, {"input_tokens": len(raw) // 4})
            return
        if path != "/v1/messages":
            _send_json(
                handler,
                404,
                {"type": "error", "error": {"type": "not_found_error", "message": handler.path}},
            )
            return
        with self._lock:
            self.raw_bodies.append(raw)
        body = json.loads(raw or b"{}")
        if agent:
            body[AGENT_KEY] = agent[1]
        with self._lock:
            self.arrivals.append((arrived, body))
        turn = self._next_turn(body)
        if turn.error is not None:
            kinds = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}
            kind = kinds.get(turn.error, "api_error")
            headers = {"retry-after": str(turn.retry_after)} if turn.retry_after is not None else {}
            _send_json(
                handler,
                turn.error,
                {"type": "error", "error": {"type": kind, "message": turn.message}},
                headers,
            )
            return
        usage = dict(turn.usage)
        if self.cache is not None:
            with self._lock:
                usage.update(self.cache.bill(body))
        message = {
            "id": f"msg_stub_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model),
            "content": turn.content,
            "stop_reason": turn.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        if body.get("stream"):
            _send_stream(handler, message, chunked=self.keep_alive)
        else:
            _send_json(handler, 200, message)


class PromptCache:
    """Prompt caching as the API bills it, with tokens estimated at 4 characters each.

    The request is read as one sequence of blocks (tools, then system, then each message's
    content blocks). A block carrying ``cache_control`` writes the prefix ending with it to the
    cache; a later request reads the longest prefix, ending at any block boundary, that is in
    the cache. Prefixes shorter than `min_tokens` are not cached (the API's minimum).
    """

    def __init__(self, min_tokens: int = 0) -> None:
        self.min_tokens = min_tokens
        self.prefixes: set[str] = set()

    def bill(self, body: dict[str, Any]) -> dict[str, int]:
        digest = hashlib.sha256()
        boundaries: list[tuple[str, int, bool]] = []  # (prefix digest, tokens so far, breakpoint)
        tokens = 0
        for marked, block in _blocks(body):
            text = json.dumps(block, sort_keys=True)
            digest.update(text.encode())
            tokens += max(1, len(text) // 4)
            boundaries.append((digest.copy().hexdigest(), tokens, marked))
        read = max((n for key, n, _ in boundaries if key in self.prefixes), default=0)
        written = 0
        for key, n, marked in boundaries:
            if marked and n >= self.min_tokens and n > read:
                self.prefixes.add(key)
                written = max(written, n)
        created = max(0, written - read)
        return {
            "input_tokens": tokens - read - created,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
        }


def _blocks(body: dict[str, Any]) -> list[tuple[bool, Any]]:
    """The request as (has a cache breakpoint, block without its marker), in prefix order."""
    parts: list[tuple[str, Any]] = [("tool", tool) for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        parts.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        parts.extend(("system", block) for block in system)
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts.extend((message.get("role", "user"), block) for block in content or [])
    blocks = []
    for where, block in parts:
        marked = isinstance(block, dict) and "cache_control" in block
        if marked:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append((marked, {where: block}))
    return blocks


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


def _send_stream(
    handler: BaseHTTPRequestHandler, message: dict[str, Any], chunked: bool = False
) -> None:
    """The message as server-sent events; `chunked`: in HTTP/1.1 chunks, so that the
    connection stays open after the stream (an HTTP/1.0 stream ends when it closes)."""
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

    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        # as the API does: every input count in message_start, the output count at the end
        "usage": {**{k: v for k, v in usage.items() if k != "output_tokens"}, "output_tokens": 1},
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
    if chunked:
        handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def by_agent(scripts: dict[str, Script]) -> Callable[[dict[str, Any]], Turn]:
    """One server for a whole team: each agent plays its own script (a list of turns, or a
    function of the request), told apart by its system prompt (``You are 'NAME'`` for a swarm
    teammate, ``team-lead`` for swarm's lead agent) or else by the URL it was given
    (`MessagesAPI.url_for`: Claude Code's requests do not name the agent, and a swarm teammate
    that Claude Code starts inherits its lead's URL, so the system prompt goes first)."""
    turns = {n: iter(s) for n, s in scripts.items() if isinstance(s, list)}

    def play(body: dict[str, Any]) -> Turn:
        system = json.dumps(body.get("system"))
        found = re.search(r"You are '([a-z0-9-]+)'", system)
        if "You are the team lead" in system:
            name = "team-lead"
        else:
            name = found[1] if found else body.get(AGENT_KEY, "")
        script = scripts.get(name)
        if callable(script):
            return script(body)
        turn = next(turns.get(name, iter(())), None)
        return turn if turn is not None else Turn.text("(nothing more to do)")

    return play
