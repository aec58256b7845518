"""The `Model` interface the agent loop talks to, and its two implementations.

`ClaudeModel` calls the Messages API through the `anthropic` SDK (``ANTHROPIC_API_KEY`` or
``ANTHROPIC_AUTH_TOKEN``, and ``ANTHROPIC_BASE_URL`` for Anthropic-compatible local servers are
honoured by the SDK). It streams, so long answers do not hit the SDK's non-streaming limits (a
request may ask for no stream: the loop's fallback after streams kept failing), sends the
request's thinking, effort and betas (`teammate.api.model_settings`), and never retries by
itself: the agent loop does (`teammate.agent.retries`), so that every wait shows in the status
and a shutdown is honoured during it. `ScriptedModel` plays a script (`teammate.api.script`)
with no network, for demos and tests.

Both raise `ModelError` for a failed call, with what the agent loop needs to decide: whether to
retry (`retryable`, after `retry_after` seconds if the API said so), whether it failed in the
middle of a stream (`stream_failed`), whether to compact the conversation (`context_too_long`),
or whether the answer's room must shrink (`limit`: the API's ``input length and `max_tokens`
exceed context limit: A + B > C``). A call in progress can be abandoned from another thread
(`Abort`): its stream is closed, and the call raises.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from protocols.collector import import_frozen
from protocols.errors import Error
from protocols.member.catalogue import resolve
from protocols.member.prices import ONE_HOUR_KEY, WEB_SEARCHES_KEY
from teammate.api.script import Turn

DEFAULT_MAX_TOKENS = 32_000  # a request that says nothing (the loop sets the model's own)
# how long an idle connection to the API is kept for the next request (the SDK's default, 5 s,
# is shorter than a teammate idles: each wake-up paid a new TCP and TLS handshake); the SDK's
# TCP keep-alive probes (after 60 s) keep it open through NATs, and a connection the server
# closed meanwhile is seen at once and replaced (or the request retried)
KEEPALIVE_S = 300.0
# the API's error types, as the HTTP status a failure of that kind comes with (an error event
# in a stream that began with 200 says only its type)
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
LIMIT = re.compile(r"input length and `max_tokens` exceed context limit: (\d+) \+ (\d+) > (\d+)")


def has_api_key(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the SDK will find credentials (``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``)."""
    env = os.environ if environ is None else environ
    return bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))


@dataclass
class Usage:
    """Tokens, as the API counts them; adds up across calls. Of the cache writes
    (``cache_creation_input_tokens``), ``cache_creation_1h_input_tokens`` were made for an hour
    (priced higher); the rest for 5 minutes. ``web_search_requests`` (the API's
    ``server_tool_use.web_search_requests``) counts web searches, priced per search; its value
    leaves it out while it is 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    web_search_requests: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_creation_1h_input_tokens += other.cache_creation_1h_input_tokens
        self.web_search_requests += other.web_search_requests

    @property
    def prompt_tokens(self) -> int:
        """Every input token, however it was billed: the size of the request."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @property
    def total(self) -> int:
        """Every token read or written (a budget's count)."""
        return self.prompt_tokens + self.output_tokens

    @classmethod
    def from_value(cls, value: Any) -> Usage:
        """From the API's usage (an object or a dict); its ``cache_creation`` split gives the
        hour-long writes."""
        get = value.get if isinstance(value, dict) else lambda key: getattr(value, key, None)
        usage = cls(*(int(get(name) or 0) for name in list(cls.__dataclass_fields__)[:4]))
        split = get("cache_creation")
        hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
        if hour is None and split is not None and not isinstance(split, dict):
            hour = getattr(split, "ephemeral_1h_input_tokens", None)
        usage.cache_creation_1h_input_tokens = int(hour or get(ONE_HOUR_KEY) or 0)
        server = get("server_tool_use")
        searches = _field(server, "web_search_requests") if server is not None else None
        usage.web_search_requests = int(searches or get(WEB_SEARCHES_KEY) or 0)
        return usage

    def to_value(self) -> dict[str, int]:
        value = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if not self.web_search_requests:
            del value[WEB_SEARCHES_KEY]
        return value


def _field(value: Any, key: str) -> Any:
    """`key` of an object or a dict (None if it has none)."""
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


class Abort:
    """Abandons a call in progress from another thread: `abort` closes its stream (the call
    raises) and stops a call not yet sent from being sent."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closer: Callable[[], None] | None = None
        self.aborted = False

    def opened(self, closer: Callable[[], None]) -> None:
        """The model's stream is open; `closer` ends it (called at once if aborted already)."""
        with self._lock:
            self._closer = closer
            aborted = self.aborted
        if aborted:
            closer()

    def release(self) -> None:
        """The call is over: forget its stream (which holds the whole request's bytes)."""
        with self._lock:
            self._closer = None

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            closer = self._closer
        if closer is not None:
            with contextlib.suppress(Exception):  # the other thread may be tearing it down
                closer()


@dataclass(frozen=True)
class ModelRequest:
    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking: dict[str, Any] | None = None  # {"type": "adaptive"} or {"type": "enabled", ...}
    effort: str | None = None  # output_config.effort
    betas: tuple[str, ...] = ()
    stream: bool = True
    # called once the request has been sent (the caller's bookkeeping waits for it; a model
    # that never calls it leaves that to the caller, after the call); may be another thread
    on_sent: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    abort: Abort | None = field(default=None, compare=False, repr=False)

    def params(self, model: str) -> dict[str, Any]:
        """The Messages API parameters of this request for `model` (no ``stream``)."""
        params: dict[str, Any] = {
            "model": model,
            "system": self.system,
            "tools": self.tools,
            "messages": self.messages,
            "max_tokens": self.max_tokens,
        }
        if self.thinking is not None:
            params["thinking"] = self.thinking
        if self.effort is not None:
            params["output_config"] = {"effort": self.effort}
        if self.betas:
            params["betas"] = list(self.betas)
        return params


@dataclass(frozen=True)
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class ModelError(Error):
    """A model call that failed; `status` is the HTTP status when there was one (an error
    event in a stream: the status its error type comes with)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        retryable: bool = False,
        context_too_long: bool = False,
        retry_after: float | None = None,
        stream_failed: bool = False,
        limit: tuple[int, int, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.context_too_long = context_too_long
        self.retry_after = retry_after  # seconds, as the API's retry-after header said
        self.stream_failed = stream_failed  # it broke after the answer began (or mid-way)
        self.limit = limit  # (input, max_tokens, window) of an "A + B > C" refusal

    @property
    def short(self) -> str:
        """A few words for a status line: ``overloaded, 529``."""
        if self.status == 529:
            return "overloaded, 529"
        if self.status is not None:
            return f"HTTP {self.status}"
        return "connection failed" if not self.stream_failed else "stream broke"


class Model(Protocol):
    name: str

    def complete(self, request: ModelRequest) -> ModelReply: ...

    def variant(self, model: str | None) -> Model:
        """The same connection asking for `model` (None: this model), for a sub-agent."""
        ...


def error_for_status(
    status: int,
    message: str,
    retry_after: float | None = None,
    stream_failed: bool = False,
) -> ModelError:
    """The `ModelError` of an HTTP status and the API's message."""
    lowered = message.lower()
    found = LIMIT.search(message) if status == 400 else None
    too_long = (
        status == 400 and found is None and ("too long" in lowered or "context window" in lowered)
    )
    retryable = status in (408, 409, 429) or status >= 500
    return ModelError(
        f"the model API answered {status}: {message}",
        status,
        retryable,
        context_too_long=too_long,
        retry_after=retry_after,
        stream_failed=stream_failed,
        limit=(int(found[1]), int(found[2]), int(found[3])) if found else None,
    )


def _transport_errors() -> tuple[type[BaseException], ...]:
    """What the SDK's HTTP client raises when a connection breaks mid-stream (it is httpx in
    older SDKs, httpx2 in newer ones), and the OS's own errors."""
    found: list[type[BaseException]] = [OSError]
    for module in ("httpx2", "httpx"):
        try:
            found.append(__import__(module).HTTPError)
        except ImportError:
            continue
    return tuple(found)


class ClaudeModel:
    """The Messages API through the `anthropic` SDK (module doc)."""

    def __init__(self, model: str, timeout_s: float = 600.0) -> None:
        # imported here (the shell worker never needs it), with the collector kept off its
        # million objects (protocols.collector)
        anthropic = import_frozen("anthropic")
        self.name = resolve(model).id
        self._anthropic = anthropic
        self._transport = _transport_errors()
        self._timeout_s = timeout_s
        limits = anthropic.DEFAULT_CONNECTION_LIMITS
        try:
            self._client = anthropic.Anthropic(
                max_retries=0,  # the agent loop retries (teammate.agent.retries)
                timeout=timeout_s,
                http_client=anthropic.DefaultHttpxClient(
                    limits=type(limits)(
                        max_connections=limits.max_connections,
                        max_keepalive_connections=limits.max_keepalive_connections,
                        keepalive_expiry=KEEPALIVE_S,
                    )
                ),
            )
        except anthropic.AnthropicError as exc:
            raise ModelError(f"cannot create the Anthropic client: {exc}") from None

    def variant(self, model: str | None) -> ClaudeModel:
        if model is None or resolve(model).id == self.name:
            return self
        other = copy.copy(self)  # one client (and its connections) for all
        other.name = resolve(model).id
        return other

    def complete(self, request: ModelRequest) -> ModelReply:
        anthropic = self._anthropic
        params = request.params(self.name)
        # the betas as the header they are: the SDK's beta client would load its own copy of
        # every type (6 MB more of a teammate's memory) for the same request
        betas = params.pop("betas", None)
        if betas:
            params["extra_headers"] = {"anthropic-beta": ",".join(betas)}
        api: Any = self._client.messages
        began = False
        try:
            if request.abort is not None and request.abort.aborted:
                raise ModelError("the call was abandoned before it was sent")
            if not request.stream:
                message = api.create(**params, timeout=self._timeout_s)
                if request.on_sent is not None:
                    request.on_sent()
            else:
                with api.stream(**params) as stream:
                    began = True
                    if request.abort is not None:
                        request.abort.opened(stream.close)
                    if request.on_sent is not None:  # sent, and the API has begun to answer
                        request.on_sent()
                    message = stream.get_final_message()
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, began) from None
        except anthropic.APIConnectionError as exc:
            raise ModelError(
                f"cannot reach the model API: {exc}", retryable=True, stream_failed=began
            ) from None
        except self._transport as exc:  # a connection reset in the middle of the stream
            raise ModelError(
                f"the model API's stream broke: {type(exc).__name__}: {exc}",
                retryable=True,
                stream_failed=True,
            ) from None
        return ModelReply(
            content=[block.model_dump(exclude_none=True) for block in message.content],
            stop_reason=message.stop_reason or "end_turn",
            usage=Usage.from_value(message.usage),
            model=message.model,
        )


def _status_error(exc: Any, began: bool) -> ModelError:
    """An HTTP error, or an ``error`` event in a stream that began with 200 (its type says what
    it stands for: ``overloaded_error`` is a 529)."""
    kind, message = _error_body(exc)
    status = int(exc.status_code)
    mid_stream = status == 200 or began
    if status == 200:
        status = ERROR_STATUS.get(kind or "", 500)
    return error_for_status(status, message, _retry_after(exc), stream_failed=mid_stream)


def _retry_after(exc: Any) -> float | None:
    """The retry-after header of a failed response, in seconds (None if absent or odd)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def _error_body(exc: Any) -> tuple[str | None, str]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return error.get("type"), str(error["message"])
    return None, str(getattr(exc, "message", None) or exc)


class ScriptedModel:
    """Plays scripted turns in order; an ``error`` turn fails the call like the API would."""

    def __init__(self, turns: list[Turn], name: str = "scripted") -> None:
        self.name = name
        self._turns = iter(turns)
        self.requests: list[ModelRequest] = []

    def variant(self, model: str | None) -> ScriptedModel:
        return self  # one script: a sub-agent plays the turns that come next

    def complete(self, request: ModelRequest) -> ModelReply:
        # the agent loop's request shares its conversation's blocks, which change later
        self.requests.append(copy.deepcopy(replace(request, on_sent=None, abort=None)))
        if request.on_sent is not None:
            request.on_sent()
        turn = next(self._turns, None)
        if turn is None:
            turn = Turn.text("(the script has no more turns)")
        if turn.error is not None:
            raise error_for_status(turn.error, turn.message, turn.retry_after)
        fault = getattr(turn, "fault", None)
        if fault is not None:  # the stream broke after it began
            status = {"overloaded": 529, "reset": None}.get(fault, 500)
            raise ModelError(f"scripted stream fault: {fault}", status, True, stream_failed=True)
        return ModelReply(
            content=[dict(block) for block in turn.content],
            stop_reason=turn.stop_reason,
            usage=Usage.from_value(turn.usage),
            model=self.name,
        )
