"""The `Model` interface the agent loop talks to, and its two implementations.

`ClaudeModel` calls the Messages API through the `anthropic` SDK (``ANTHROPIC_API_KEY`` or
``ANTHROPIC_AUTH_TOKEN``, and ``ANTHROPIC_BASE_URL`` for Anthropic-compatible local servers are
honoured by the SDK). It streams, so long answers do not hit the SDK's non-streaming limits, and
the SDK retries 429, 529 and 5xx with backoff. `ScriptedModel` plays a script
(`teammate.agent.script`) with no network, for demos and tests.

Both raise `ModelError` for a failed call, with what the agent loop needs to decide: whether to
retry later (`retryable`), or to shorten the conversation (`context_too_long`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from protocols.errors import Error

# aliases as Claude Code spells them (in protocols.prices, which prices them); each can be
# redirected like Claude Code's ANTHROPIC_DEFAULT_<ALIAS>_MODEL variables
from protocols.prices import MODEL_ALIASES as MODEL_ALIASES
from protocols.prices import resolve_model as resolve_model
from teammate.agent.script import Turn

DEFAULT_MAX_TOKENS = 16_000
# how long an idle connection to the API is kept for the next request (the SDK's default, 5 s,
# is shorter than a teammate idles: each wake-up paid a new TCP and TLS handshake); the SDK's
# TCP keep-alive probes (after 60 s) keep it open through NATs, and a connection the server
# closed meanwhile is seen at once and replaced (or the request retried)
KEEPALIVE_S = 300.0


def has_api_key(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the SDK will find credentials (``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``)."""
    env = os.environ if environ is None else environ
    return bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))


@dataclass
class Usage:
    """Tokens, as the API counts them; adds up across calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens

    @property
    def prompt_tokens(self) -> int:
        """Every input token, however it was billed."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @classmethod
    def from_value(cls, value: Any) -> Usage:
        get = value.get if isinstance(value, dict) else lambda key: getattr(value, key, None)
        return cls(*(int(get(name) or 0) for name in cls.__dataclass_fields__))

    def to_value(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class ModelRequest:
    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int | None = None  # extended thinking, from an agent's ``effort``
    # called once the request has been sent (the caller's bookkeeping waits for it; a model
    # that never calls it leaves that to the caller, after the call)
    on_sent: Callable[[], None] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ModelReply:
    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class ModelError(Error):
    """A model call that failed; `status` is the HTTP status when there was one."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        retryable: bool = False,
        context_too_long: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.context_too_long = context_too_long


class Model(Protocol):
    name: str

    def complete(self, request: ModelRequest) -> ModelReply: ...

    def variant(self, model: str | None) -> Model:
        """The same connection asking for `model` (None: this model), for a sub-agent."""
        ...


def error_for_status(status: int, message: str) -> ModelError:
    too_long = status == 400 and "too long" in message.lower()
    retryable = status in (408, 409, 429) or status >= 500
    return ModelError(
        f"the model API answered {status}: {message}", status, retryable, context_too_long=too_long
    )


class ClaudeModel:
    """The Messages API through the `anthropic` SDK."""

    def __init__(self, model: str, max_retries: int = 2, timeout_s: float = 600.0) -> None:
        import anthropic  # imported here: the shell worker never needs it

        self.name = resolve_model(model)
        self._anthropic = anthropic
        limits = anthropic.DEFAULT_CONNECTION_LIMITS
        try:
            self._client = anthropic.Anthropic(
                max_retries=max_retries,
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
        if model is None or resolve_model(model) == self.name:
            return self
        other = copy.copy(self)  # one client (and its connections) for all
        other.name = resolve_model(model)
        return other

    def complete(self, request: ModelRequest) -> ModelReply:
        anthropic = self._anthropic
        options: dict[str, Any] = {"max_tokens": request.max_tokens}
        if request.thinking_budget:  # the answer needs room beyond the thinking
            budget = request.thinking_budget
            options["thinking"] = {"type": "enabled", "budget_tokens": budget}
            options["max_tokens"] = max(request.max_tokens, budget + DEFAULT_MAX_TOKENS)
        try:
            with self._client.messages.stream(
                model=self.name,
                system=request.system,  # type: ignore[arg-type]
                tools=request.tools,  # type: ignore[arg-type]
                messages=request.messages,  # type: ignore[arg-type]
                **options,
            ) as stream:
                if request.on_sent is not None:  # sent, and the API has begun to answer
                    request.on_sent()
                message = stream.get_final_message()
        except anthropic.APIStatusError as exc:
            raise error_for_status(exc.status_code, _error_text(exc)) from None
        except anthropic.APIConnectionError as exc:
            raise ModelError(f"cannot reach the model API: {exc}", retryable=True) from None
        return ModelReply(
            content=[block.model_dump(exclude_none=True) for block in message.content],
            stop_reason=message.stop_reason or "end_turn",
            usage=Usage.from_value(message.usage),
            model=message.model,
        )


def _error_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc)


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
        self.requests.append(copy.deepcopy(replace(request, on_sent=None)))
        if request.on_sent is not None:
            request.on_sent()
        turn = next(self._turns, None)
        if turn is None:
            turn = Turn.text("(the script has no more turns)")
        if turn.error is not None:
            raise error_for_status(turn.error, turn.message)
        return ModelReply(
            content=[dict(block) for block in turn.content],
            stop_reason=turn.stop_reason,
            usage=Usage.from_value(turn.usage),
            model=self.name,
        )
