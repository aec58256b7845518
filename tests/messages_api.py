"""A local HTTP server that speaks the Anthropic Messages API and plays scripted turns.

Tests point the real `anthropic` SDK (or Claude Code, spec section 8) at it with
``ANTHROPIC_BASE_URL``; nothing reaches the network. It serves ``POST /v1/messages`` (and the
beta SDK's ``/v1/messages?beta=true``) both as a JSON response and, when the request asks for
``"stream": true``, as server-sent events in the order the API uses (``message_start``,
``content_block_start``/``_delta``/``_stop`` per block, ``message_delta``, ``message_stop``;
`messages_api_stream` has the details, and what the SDK makes of a broken stream).

A script is a list of `Turn`s (`teammate.api.script`, the format the scripted model plays too)
played in order, or a function from the request body to a `Turn` (to answer depending on what
the model was sent), called for one request at a time, or with ``concurrent=True`` for all of
them at once, so that one answer may wait for another request (the function must then be
thread-safe). Every ``/v1/messages`` request is recorded, refused ones too, in parallel lists:
`requests` (the body), `raw_bodies`, `arrivals`, `betas` (its ``anthropic-beta`` header as a
list, [] if none) and `streamed` (whether it asked for a stream); `billed` maps the index of each
request answered with a message to the usage the answer reported.

What a turn may hold (`Turn`): ``thinking`` and ``redacted_thinking`` blocks, streamed as the
API does (a thinking block's signature in a ``signature_delta``); the blocks of a web search
the API ran (`Turn.web_search`: ``server_tool_use``, streamed like a tool call, and
``web_search_tool_result``, whole; the search counted in the usage's ``server_tool_use``,
which ``count_tokens`` keeps); any stop reason, with a last
``tool_use`` block cut off (half its input JSON; `messages_api_stream.complete_keys` without a
stream) for ``max_tokens`` and ``model_context_window_exceeded`` unless ``cut=False``;
``stop_sequence`` (else the request's first ``stop_sequences`` entry, for that stop reason).
`Turn.error` makes the server answer with that HTTP status instead (429, 529, 500 ..., with a
``retry-after`` header when `Turn.retry_after` is set), to test retries. `Turn.fault` breaks the
answer after it began: ``overloaded`` or ``api_error``, an SSE ``error`` event after
`Turn.fault_after` whole blocks, ``reset``, the connection shut mid-stream; without a stream the
first two are an HTTP 529 or 500 and ``reset`` a connection closed with no response.
`Turn.stall` (a `threading.Event`) holds the answer after `Turn.stall_after` whole blocks (before
the whole JSON answer, without a stream) until it is set, for at most 60 s: the request's index
goes to `stalled` meanwhile, and `wait_stalled` waits for it. A client that goes away before
its answer ends (say, while it stalls) ends it quietly, and its index goes to `disconnected`;
`wait_for` waits for any state of the server (the lists above, `active`: the number of
requests being answered), with no sleeping.

Clients whose requests do not say which agent is calling (Claude Code's teammates) get a base
URL of their own, `url_for(NAME)` (``.../agent/NAME``): the recorded body then carries NAME
under `AGENT_KEY`, and `by_agent` uses it. ``POST /v1/messages/count_tokens`` answers an
estimate (`request_tokens` with ``count_tokens``), and a ``HEAD`` of the base URL (Claude Code's connectivity probe) a plain 404.

Tokens are estimated at 4 characters each, over the request's blocks (`request_tokens`: tools,
system, messages). With ``count_tokens=True`` usage reports them: ``input_tokens`` is the
request's count (or, with a `PromptCache`, the part neither read nor written) and
``output_tokens`` the answer's (its content's JSON length / 4, at least 1), except that a turn
whose `usage` is not the default (`DEFAULT_USAGE`) keeps its ``output_tokens``; the turn's other
usage keys are then ignored. Without it, a turn's `usage` is reported as it is.
``window=W`` (implies ``count_tokens``) is a context window: a request over W tokens is refused
with HTTP 400 ``prompt is too long: N tokens > W maximum``, and one whose N tokens fit but not
with its ``max_tokens`` with ``input length and `max_tokens` exceed context limit: N + M > W,
decrease input length or `max_tokens` and try again`` (the API's words). A refused request is
recorded, with (status, message) in `refused`, and the script is not asked for a turn.

With ``cache=PromptCache()`` the server also bills tokens the way prompt caching does (the
cache's counts replace the turn's ``input_tokens`` and cache keys, and add ``cache_creation``),
and refuses (as above) what the API refuses about ``cache_control`` (`PromptCache` says how).

`arrivals` holds, for each ``/v1/messages`` request, the `time.monotonic` at which it had
arrived whole (headers and body read) next to its recorded body: a benchmark in the same process compares it
with its own clock. With ``keep_alive=True`` the server speaks HTTP/1.1 and keeps connections
open between requests (streams are sent chunked), as the real API does; by default it answers
in HTTP/1.0 and closes each connection.

    with MessagesAPI([Turn.text("hello", thinking="greet")]) as api:
        client = anthropic.Anthropic(api_key="test", base_url=api.url)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from messages_api_stream import FAULT_ERRORS, ClientGone, complete_keys, send_stream

from teammate.api.script import CUT_BY, DEFAULT_USAGE, Turn

__all__ = ["AGENT_KEY", "MessagesAPI", "PromptCache", "Turn", "by_agent", "request_tokens"]
AGENT_KEY = "_stub_agent"  # the recorded body's key for the agent named in the URL path
STALL_S = 60.0  # the longest a stalled answer waits for its event
_ids = itertools.count(1)
_CONNECTION_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, ClientGone)


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
        window: int | None = None,
        count_tokens: bool = False,
    ) -> None:
        self.script = script
        self.keep_alive = keep_alive
        self.concurrent = concurrent
        self.model = model
        self.cache = cache
        self.window = window
        self.count_tokens = count_tokens or window is not None
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []  # each /v1/messages body as it arrived, in order
        self.arrivals: list[tuple[float, dict[str, Any]]] = []  # (monotonic time, body)
        self.betas: list[list[str]] = []  # each request's anthropic-beta header, split
        self.streamed: list[bool] = []  # whether each request asked for a stream
        self.refused: list[tuple[int, str]] = []  # (status, message) of each refused request
        self.billed: dict[int, dict[str, Any]] = {}  # the usage answered, by request index
        self.stalled: list[int] = []  # the index in `requests` of each answer that stalled
        self.disconnected: list[int] = []  # ... of each whose client left before its end
        self.active = 0  # requests being answered now
        self._turns = iter(script) if isinstance(script, list) else None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._server: _Server | None = None

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

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll: closing the server waits for it (0.5 s each by default)
        serve = self._server.serve_forever
        threading.Thread(target=serve, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._closing.set()  # stalled answers end
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def url_for(self, agent: str) -> str:
        """A base URL that tells the server which agent is calling (``/agent/NAME``): for
        clients whose requests do not name the agent, such as Claude Code's teammates."""
        return f"{self.url}/agent/{agent}"

    def wait_for(self, ready: Callable[[MessagesAPI], bool], timeout: float = 10.0) -> bool:
        """Wait until ``ready(self)`` (checked whenever a request is recorded, stalls, ends or
        loses its client), at most `timeout` seconds; whether it is."""
        with self._changed:
            return self._changed.wait_for(lambda: ready(self), timeout)

    def wait_stalled(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until `count` answers have stalled (`Turn.stall`); whether they have."""
        return self.wait_for(lambda api: len(api.stalled) >= count, timeout)

    def _changes(self, change: Callable[[], None]) -> None:
        with self._changed:
            change()
            self._changed.notify_all()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        self._changes(lambda: setattr(self, "active", self.active + 1))
        try:
            self._answer(handler)
        except _CONNECTION_ERRORS:  # the client went away: end quietly
            handler.close_connection = True
        finally:
            self._changes(lambda: setattr(self, "active", self.active - 1))

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        agent = re.match(r"/agent/([^/]+)(/.*)", path)
        if agent:
            path = agent[2]
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        arrived = time.monotonic()  # the whole request is here (headers and body)
        if path == "/v1/messages/count_tokens":
            count = request_tokens(json.loads(raw)) if self.count_tokens else len(raw) // 4
            _send_json(handler, 200, {"input_tokens": count})
            return
        if path != "/v1/messages":
            _send_json(
                handler,
                404,
                {"type": "error", "error": {"type": "not_found_error", "message": handler.path}},
            )
            return
        body = json.loads(raw or b"{}")
        if agent:
            body[AGENT_KEY] = agent[1]
        betas = [b.strip() for b in handler.headers.get("anthropic-beta", "").split(",")]
        tokens = request_tokens(body) if self.count_tokens else None
        refusal = self._refusal(body, tokens)
        with self._changed:
            index = len(self.requests)
            self.raw_bodies.append(raw)
            self.arrivals.append((arrived, body))
            self.requests.append(body)
            self.betas.append([beta for beta in betas if beta])
            self.streamed.append(bool(body.get("stream")))
            if refusal is not None:
                self.refused.append((400, refusal))
            self._changed.notify_all()
            turn = None if refusal is not None or self.concurrent else self._next_turn(body)
        if refusal is not None:
            error = {"type": "invalid_request_error", "message": refusal}
            _send_json(handler, 400, {"type": "error", "error": error})
            return
        if turn is None:  # one answer may wait for another request
            turn = self._next_turn(body)
        try:
            self._play(handler, body, index, turn, tokens)
        except _CONNECTION_ERRORS:
            self._changes(lambda: self.disconnected.append(index))
            raise

    def _next_turn(self, body: dict[str, Any]) -> Turn:
        if self._turns is None:
            return self.script(body)  # type: ignore[operator]
        turn = next(self._turns, None)
        if turn is None:
            return Turn.text("(the script has no more turns)")
        return turn

    def _refusal(self, body: dict[str, Any], tokens: int | None) -> str | None:
        """The message of the HTTP 400 the API would answer this request with, if any."""
        if self.cache is not None:
            refusal = self.cache.refusal(body)
            if refusal is not None:
                return refusal
        if self.window is None or tokens is None:
            return None
        if tokens > self.window:
            return f"prompt is too long: {tokens} tokens > {self.window} maximum"
        room = int(body.get("max_tokens") or 0)
        if tokens + room > self.window:
            return (
                "input length and `max_tokens` exceed context limit: "
                f"{tokens} + {room} > {self.window}, "
                "decrease input length or `max_tokens` and try again"
            )
        return None

    def _play(
        self,
        handler: BaseHTTPRequestHandler,
        body: dict[str, Any],
        index: int,
        turn: Turn,
        tokens: int | None,
    ) -> None:
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
        stream = bool(body.get("stream"))
        stall = None if turn.stall is None else lambda: self._stall(handler, index, turn.stall)
        if not stream and stall is not None:
            stall()
        if not stream and turn.fault is not None:
            if turn.fault == "reset":  # closed with no response
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            _send_json(handler, *FAULT_ERRORS[turn.fault])
            return
        content = [
            Turn.thinking_block(block["thinking"], block.get("signature"))
            if block.get("type") == "thinking"
            else dict(block)
            for block in turn.content
        ]
        cut = turn.cut and turn.stop_reason in CUT_BY and bool(content)
        cut = cut and content[-1].get("type") == "tool_use"
        if cut and not stream:
            content[-1]["input"] = complete_keys(content[-1]["input"])
        stop_sequence = turn.stop_sequence
        if stop_sequence is None and turn.stop_reason == "stop_sequence":
            stop_sequence = next(iter(body.get("stop_sequences") or []), None)
        message = {
            "id": f"msg_stub_{next(_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", self.model),
            "content": content,
            "stop_reason": turn.stop_reason,
            "stop_sequence": stop_sequence,
            "usage": self._usage(body, turn, tokens),
        }
        self._changes(lambda: self.billed.__setitem__(index, message["usage"]))
        if not stream:
            _send_json(handler, 200, message)
            return
        send_stream(
            handler,
            message,
            chunked=self.keep_alive,
            cut=cut,
            fault=turn.fault,
            fault_after=turn.fault_after,
            stall=stall,
            stall_after=turn.stall_after,
        )

    def _usage(self, body: dict[str, Any], turn: Turn, tokens: int | None) -> dict[str, Any]:
        """The usage to report (module doc)."""
        usage: dict[str, Any] = dict(turn.usage)
        if tokens is not None:
            output = turn.usage.get("output_tokens") if turn.usage != DEFAULT_USAGE else None
            estimate = max(1, len(json.dumps(turn.content)) // 4)
            usage = {
                "input_tokens": tokens,
                "output_tokens": estimate if output is None else output,
            }
            if "server_tool_use" in turn.usage:  # the searches it made, whatever the tokens
                usage["server_tool_use"] = turn.usage["server_tool_use"]
        if self.cache is not None:
            with self._lock:
                usage.update(self.cache.bill(body))
        return usage

    def _stall(self, handler: BaseHTTPRequestHandler, index: int, release: threading.Event) -> None:
        """Hold the answer until `release` is set (at most `STALL_S`), the server closes, or
        the client goes away (`ClientGone`)."""
        self._changes(lambda: self.stalled.append(index))
        deadline = time.monotonic() + STALL_S
        while not release.wait(0.05) and not self._closing.is_set():
            if _gone(handler.connection):
                raise ClientGone
            if time.monotonic() > deadline:
                break
        if _gone(handler.connection):
            raise ClientGone


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a client that went away (say, one that reset a kept connection)."""
        if not isinstance(sys.exc_info()[1], _CONNECTION_ERRORS):
            super().handle_error(request, client_address)


def _gone(connection: socket.socket) -> bool:
    """Whether the client closed the connection (we expect nothing from it mid-answer)."""
    try:
        if not select.select([connection], [], [], 0)[0]:
            return False
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:  # reset by the client
        return True


def request_tokens(body: dict[str, Any]) -> int:
    """The request's tokens, estimated as `PromptCache` does: 4 characters a token, at least
    one a block, over its tools, system and messages (`cache_control` markers left out)."""
    return sum(_tokens(block) for _, block, _ in _blocks(body))


TTL_S = {"5m": 300.0, "1h": 3600.0}  # a cache entry's life after it was last written or read
LOOKBACK = 20  # block boundaries checked for a hit at and before each breakpoint
MAX_BREAKPOINTS = 4


class PromptCache:
    """Prompt caching as the API bills it, with tokens estimated at 4 characters each.

    The request is read as one sequence of blocks (tools, then system, then each message's
    content blocks). A block carrying ``cache_control`` (or the last block, for a top-level
    ``cache_control``: automatic caching) is a breakpoint: for each, the cache is checked for a
    hit at its prefix and the 19 block boundaries before it (`LOOKBACK`), and the longest
    prefix found that way is read (``cache_read_input_tokens``). Each breakpoint past the read
    writes the prefix ending with it (``cache_creation_input_tokens``, split in
    ``cache_creation`` by the TTL of the breakpoint that wrote each part), the rest is
    ``input_tokens``; the three add up to `request_tokens`. Prefixes shorter than `min_tokens`
    are not written (the API's minimum). An entry lives ``cache_control``'s ``ttl``, ``"5m"``
    (the default) or ``"1h"``, after it was last written or read, by `clock` (a test may pass
    a fake one to move time on).

    `refusal` is what the API refuses: more than 4 breakpoints, a TTL other than those two,
    and a 1h breakpoint after a 5m one in the order above.
    """

    def __init__(self, min_tokens: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_tokens = min_tokens
        self.clock = clock
        self.entries: dict[str, tuple[float, float]] = {}  # prefix digest: (expires at, ttl s)

    @property
    def prefixes(self) -> set[str]:
        """The digests of the prefixes cached now."""
        now = self.clock()
        return {key for key, (expires, _) in self.entries.items() if expires > now}

    def refusal(self, body: dict[str, Any]) -> str | None:
        """The message of the HTTP 400 the API answers this request's breakpoints with, if any."""
        marks = [(mark, path) for mark, _, path in _blocks(body) if mark is not None]
        if len(marks) > MAX_BREAKPOINTS:
            return (
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(marks)}."
            )
        five_minutes = False
        for mark, path in marks:
            ttl = mark.get("ttl", "5m")
            if ttl not in TTL_S:
                return f"{path}.cache_control.ttl: Input should be '5m' or '1h'"
            if ttl == "1h" and five_minutes:
                return (
                    f"{path}.cache_control.ttl: a ttl='1h' cache_control block must not come "
                    "after a ttl='5m' cache_control block. Note that blocks are processed in "
                    "the following order: `tools`, `system`, `messages`."
                )
            five_minutes = five_minutes or ttl == "5m"
        return None

    def bill(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self.clock()
        self.entries = {key: entry for key, entry in self.entries.items() if entry[0] > now}
        digest = hashlib.sha256()
        keys: list[str] = []  # each block boundary's prefix digest ...
        ends: list[int] = []  # ... its tokens so far ...
        ttls: list[str | None] = []  # ... and its breakpoint's TTL (None: not a breakpoint)
        for mark, block, _ in _blocks(body):
            digest.update(json.dumps(block, sort_keys=True).encode())
            keys.append(digest.copy().hexdigest())
            ends.append((ends[-1] if ends else 0) + _tokens(block))
            ttls.append(None if mark is None else mark.get("ttl", "5m"))
        marks = [index for index, ttl in enumerate(ttls) if ttl is not None]
        read, hit = 0, None
        for mark in marks:
            for index in range(mark, max(mark - LOOKBACK, -1), -1):
                if keys[index] in self.entries:
                    if ends[index] > read:
                        read, hit = ends[index], keys[index]
                    break
        if hit is not None:  # a read refreshes the entry
            seconds = self.entries[hit][1]
            self.entries[hit] = (now + seconds, seconds)
        created = {"5m": 0, "1h": 0}
        cached = read
        for mark in marks:
            ttl = ttls[mark] or "5m"
            if ends[mark] > cached and ends[mark] >= self.min_tokens:
                self.entries[keys[mark]] = (now + TTL_S[ttl], TTL_S[ttl])
                created[ttl] += ends[mark] - cached
                cached = ends[mark]
        return {
            "input_tokens": (ends[-1] if ends else 0) - cached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": cached - read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": created["5m"],
                "ephemeral_1h_input_tokens": created["1h"],
            },
        }


def _tokens(block: Any) -> int:
    return max(1, len(json.dumps(block, sort_keys=True)) // 4)


def _blocks(body: dict[str, Any]) -> list[tuple[dict[str, Any] | None, Any, str]]:
    """The request as (its ``cache_control`` or None, block without it, where it is: the
    API's path such as ``messages.2.content.0``), in prefix order."""
    parts: list[tuple[str, Any, str]] = [
        ("tool", tool, f"tools.{index}") for index, tool in enumerate(body.get("tools") or [])
    ]
    system = body.get("system")
    if isinstance(system, str):
        parts.append(("system", {"type": "text", "text": system}, "system"))
    elif isinstance(system, list):
        parts.extend(("system", block, f"system.{index}") for index, block in enumerate(system))
    for number, message in enumerate(body.get("messages", [])):
        content = message.get("content")
        path = f"messages.{number}.content"
        if isinstance(content, str):
            parts.append((message.get("role", "user"), {"type": "text", "text": content}, path))
            continue
        role = message.get("role", "user")
        parts.extend((role, block, f"{path}.{index}") for index, block in enumerate(content or []))
    blocks: list[tuple[dict[str, Any] | None, Any, str]] = []
    for where, block, path in parts:
        mark = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(block, dict) and "cache_control" in block:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append((mark if isinstance(mark, dict) else None, {where: block}, path))
    automatic = body.get("cache_control")  # top-level: the last block is the breakpoint
    if isinstance(automatic, dict) and blocks and blocks[-1][0] is None:
        blocks[-1] = (automatic, blocks[-1][1], blocks[-1][2])
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
