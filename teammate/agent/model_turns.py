"""The model half of the agent loop: each request built, sent, waited for and retried.

`ModelTurns` is a base of `teammate.agent.loop.AgentLoop`, which owns the attributes it uses.
A request is the conversation marked for the prompt cache (`teammate.agent.requests`) with the
model's settings (`teammate.api.model_settings`: ``max_tokens`` no larger than the window
leaves, thinking, effort, betas). It is sent on a thread of its own (`PendingCall`) while the
agent's thread waits through its team link (`TeamLink.watch`): a teammate answers protocol
messages meanwhile, so a shutdown ends a long stream at once; a stopped sub-agent abandons it.

What a failure leads to (`_send`): ``A + B > C`` shrinks ``max_tokens`` to fit and teaches the
loop the API's window; a prompt too long compacts the conversation (at most `REACTIVE_TRIES`
times a request); a passing failure (429, 529, 5xx, a connection or a stream that broke) is
retried after the back-off of `teammate.agent.retries` (the API's retry-after if it gave one),
waited out through the link, which shows "model unavailable: overloaded (529), retry 4/10" in the
status; after streams broke twice in a row, the next try asks for the answer without streaming.
Before each request the agent's budget (`teammate.budget`) may hold it while it is over.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from teammate.agent.model_call import PendingCall
from teammate.agent.requests import CacheMarks
from teammate.agent.retries import RetryPolicy
from teammate.agent.transcript import Transcript
from teammate.api.model import Model, ModelError, ModelReply, ModelRequest
from teammate.api.model_settings import MIN_MAX_TOKENS, ModelSettings
from teammate.telemetry.spans import model_span

if TYPE_CHECKING:
    from teammate.mcp.search import Deferred
from teammate.link import TeamLink
from teammate.reporter import StatusReporter
from teammate.tools.base import Tool

REACTIVE_TRIES = 2  # compactions after the API said the prompt is too long, per request


class LoopCancelled(Exception):
    """The loop's `cancelled` event was set: it stopped at a boundary (before a model call or
    a tool call, or in the middle of one). Not an `Error`: nothing went wrong, someone
    stopped it."""


class ModelTurns:
    model: Model
    messages: list[dict[str, Any]]
    system_prompt: str
    settings: ModelSettings
    retries: RetryPolicy
    marks: CacheMarks
    link: TeamLink | None
    transcript: Transcript
    reporter: StatusReporter | None
    cancelled: threading.Event | None
    clock: Callable[[], float]
    say: Callable[[str], None]
    _real: int
    _since: int
    _replied_at: float | None
    deferred: Deferred | None

    if TYPE_CHECKING:  # what the loop that has this base provides

        def all_tools(self) -> dict[str, Tool]: ...

        def settle(self) -> None: ...

        def context_size(self) -> int: ...

        def compact(self, trigger: str = "manual", instructions: str = "") -> bool: ...

        def _before_request(self) -> None: ...

        def _show_context(self, write: bool = True) -> None: ...

        def _measure_fixed(self, tools: list[dict[str, Any]]) -> None: ...

        def _add_user(self, content: list[dict[str, Any]]) -> None: ...

    def _check_cancelled(self) -> None:
        if self.cancelled is not None and self.cancelled.is_set():
            raise LoopCancelled("stopped")

    def request(self) -> ModelRequest:
        """The next request of the conversation (see `teammate.agent.requests`). It shares the
        conversation's blocks (only the marked ones are copies): a model must not change it,
        nor keep it past the call (`ScriptedModel` keeps a deep copy)."""
        return self._request(self.messages, None, True, remember=False)

    def _request(
        self, messages: list[dict[str, Any]], room: int | None, stream: bool, remember: bool
    ) -> ModelRequest:
        tools = [t.api_schema for t in self.all_tools().values()]
        self._measure_fixed(tools)
        system = [{"type": "text", "text": self.system_prompt}]
        last = self.marks.last
        system, tools, messages = self.marks.mark(system, tools, messages)
        if not remember:
            self.marks.last = last
        settings = self.settings
        return ModelRequest(
            system=system,
            tools=tools,
            messages=messages,
            max_tokens=room or settings.room(self.context_size()),
            thinking=settings.thinking,
            effort=settings.effort,
            betas=settings.betas,
            stream=stream,
            on_sent=self.settle,
        )

    def _call(self) -> ModelReply:
        """The next model turn of the conversation."""
        self._before_request()
        self._tell_deferred_tools()

        def build(room: int | None, stream: bool) -> ModelRequest:
            return self._request(self.messages, room, stream, remember=True)

        reply = self._send(build)
        self._real, self._since = reply.usage.prompt_tokens, 0
        self._replied_at = self.clock()
        self._show_context(write=False)  # the tool call or the turn's end that follows writes
        return reply

    def _send(
        self, build: Callable[[int | None, bool], ModelRequest], compacting: bool = False
    ) -> ModelReply:
        """Make the request `build` gives (its ``max_tokens`` and streaming as asked), retrying
        what may pass (module doc)."""
        attempt = stream_failures = reactive = shrinks = 0
        room: int | None = None
        while True:
            self._pass_budget()
            request = build(room, self.retries.stream_next(stream_failures))
            self.transcript.record(
                "request", messages=len(request.messages), tokens=self.context_size()
            )
            try:
                with model_span(self.model.name) as traced:
                    reply = self._complete(request)
                    traced(reply.usage)
            except ModelError as exc:
                self.settle()
                self.transcript.record("error", error=str(exc), status=exc.status)
                if self.reporter:
                    self.reporter.model_call(None)
                if exc.limit is not None and shrinks < 3:
                    shrinks += 1
                    given, _, window = exc.limit
                    self.settings = self.settings.with_window(window)
                    room = window - given - 256
                    if room >= MIN_MAX_TOKENS:
                        continue
                    room = None
                    exc.context_too_long = True
                if exc.context_too_long and not compacting and reactive < REACTIVE_TRIES:
                    reactive += 1
                    self._learn_window(str(exc))
                    self.compact("auto")
                    continue
                if exc.retryable and attempt < self.retries.max_retries:
                    attempt += 1
                    stream_failures = stream_failures + 1 if exc.stream_failed else 0
                    delay = self.retries.delay(attempt, exc.retry_after)
                    most = self.retries.max_retries
                    why = f"model unavailable ({exc.short}), retry {attempt}/{most}"
                    self.say(f"{why} in {delay:.0f} s: {exc}")
                    self._wait(delay, why)
                    continue
                raise
            self.settle()  # a model that does not call on_sent
            self.transcript.record(
                "response",
                content=[b for b in reply.content if b.get("type") == "text"],
                tool_uses=sum(1 for b in reply.content if b.get("type") == "tool_use"),
                stop_reason=reply.stop_reason,
                usage=reply.usage.to_value(),
            )
            if self.reporter:
                self.reporter.model_call(reply.usage, model=self.model.name)
            return reply

    def _tell_deferred_tools(self) -> None:
        """The MCP tools not loaded yet, when their list changed (`teammate.mcp.search`)."""
        if self.deferred is None or not self.messages or self.messages[-1]["role"] != "user":
            return
        note = self.deferred.note()
        if note is not None:
            self._add_user([{"type": "text", "text": note}])

    def _learn_window(self, message: str) -> None:
        """ "prompt is too long: N tokens > W maximum": the API's window is W."""
        found = re.search(r"> (\d+) maximum", message)
        if found:
            self.settings = self.settings.with_window(int(found[1]))

    def _complete(self, request: ModelRequest) -> ModelReply:
        """The call, on a thread of its own while this one waits through the link (module
        doc); abandoned (its stream closed) if the wait ends otherwise."""
        if self.link is None:
            return self.model.complete(request)
        call = PendingCall(self.model, request).start()
        try:
            if not self.link.watch(call, "waiting for the model"):
                call.abort.abort()
                self._check_cancelled()
                raise LoopCancelled("the model call was abandoned")
            return call.result()
        except BaseException:
            call.abort.abort()
            raise

    def _pass_budget(self) -> bool:
        """Before a model request: wait here while the agent is over budget (`teammate.budget`);
        a sub-agent's wait ends when it is stopped. True if it waited (the deferred
        bookkeeping is done before the wait: a held agent shows as working)."""
        budget = self.reporter.budget if self.reporter is not None else None
        if budget is None:
            return False
        self._check_cancelled()
        return budget.gate(self._budget_wait, before_wait=self.settle)

    def _budget_wait(self, seconds: float) -> None:
        if self.cancelled is None:
            time.sleep(seconds)
            return
        self.cancelled.wait(seconds)
        self._check_cancelled()

    def _wait(self, seconds: float, why: str) -> None:
        """Wait before a retry; a team link watches the inbox meanwhile (a shutdown is answered
        at once, by raising `Interrupted`) and shows `why` in the status."""
        if self.link is not None:
            self.link.pause(seconds, why)
        else:
            time.sleep(seconds)
