"""The compaction half of the agent loop: how big the conversation is, and making it smaller.

`Compacting` is a base of `teammate.agent.loop.AgentLoop`, which owns the attributes it uses.
The size of the conversation is the API's count of the last request (its usage) with an
estimate of what was added since, or the estimate of the whole if that is larger (a server that
counts nothing, a scripted model). Before each request (`_before_request`) the conversation is
compacted when a person asked for it (`request_compaction`) or when it has passed its
window's threshold (`teammate.api.model_settings`); after a compaction that could not be made,
not again until it has grown by a tenth of the window. When the prompt cache has expired (the
agent was away longer than its TTL), old tool output is cleared first: it would be written again
anyway, so the shorter the better.

A compaction (`compact`): the ``PreCompact`` hooks (a block skips it; their output adds to the
instructions), the summary asked of the model with the conversation as it is (a request too long
for the API is sent again shortened), and the conversation replaced by
`teammate.agent.compaction.after_compaction`. No summary: old tool output is cleared, then the
oldest exchanges dropped, keeping the work in progress (`_fall_back`). Each replacement is a
boundary in the transcript, where a resumed agent starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from teammate.agent import compaction as compact
from teammate.agent.requests import CacheMarks, estimate
from teammate.agent.transcript import Transcript
from teammate.api.model import ModelError, ModelReply, ModelRequest
from teammate.api.model_settings import ModelSettings
from teammate.hooks import HookResult
from teammate.reporter import StatusReporter
from teammate.tools.base import Tool

if TYPE_CHECKING:
    from teammate.mcp.search import Deferred

DROPPED = "[{n} earlier messages were removed to fit the context window]"


class Compacting:
    messages: list[dict[str, Any]]
    system_prompt: str
    tools: dict[str, Tool]
    settings: ModelSettings
    transcript: Transcript
    reporter: StatusReporter | None
    marks: CacheMarks
    files: compact.FilesTouched
    state: Callable[[], list[str]] | None
    clock: Callable[[], float]
    say: Callable[[str], None]
    work: str | None
    compactions: int
    _asked: tuple[str, str] | None
    _real: int
    _since: int
    _estimated: int
    _fixed: int
    _replied_at: float | None
    _quiet_until: int
    deferred: Deferred | None

    if TYPE_CHECKING:  # what the loop that has this base provides

        def hook(
            self, event: str, payload: dict[str, Any], target: str | None = None
        ) -> HookResult: ...

        def all_tools(self) -> dict[str, Tool]: ...

        def _text(self, text: str) -> dict[str, Any]: ...

        def _request(
            self, messages: list[dict[str, Any]], room: int | None, stream: bool, remember: bool
        ) -> ModelRequest: ...

        def _send(
            self, build: Callable[[int | None, bool], ModelRequest], compacting: bool = False
        ) -> ModelReply: ...

    def context_size(self) -> int:
        """Tokens the next request would have, about: the last request's count (or the
        estimate, if larger) and what was added since."""
        return max(self._real + self._since, self._fixed + self._estimated)

    def _measure_fixed(self, tools: list[dict[str, Any]]) -> None:
        """The estimate of what every request holds besides the conversation."""
        self._fixed = estimate(self.system_prompt) + estimate(tools)

    def _measure_again(self) -> None:
        self.marks.reset()
        self._measure_fixed([t.api_schema for t in self.all_tools().values()])
        self._estimated = estimate(self.messages)
        self._real, self._since = 0, 0
        self._quiet_until = 0
        if self.deferred is not None:  # the new conversation is told of them again
            self.deferred.forget_announcement()
        self._show_context()

    def request_compaction(self, instructions: str = "", trigger: str = "manual") -> None:
        """Compact before the next request (a person's `/compact` or `swarm compact`)."""
        self._asked = (trigger, instructions)

    def compact(self, trigger: str = "manual", instructions: str = "") -> bool:
        """Replace the conversation by its summary now (module doc); False if it was not
        (nothing to compact, a PreCompact hook blocked it, or no summary could be had: then
        old tool output was cleared instead)."""
        if len(self.messages) < 2:
            self.say("nothing to compact: the conversation has just begun")
            return False
        hooked = self.hook(
            "PreCompact", {"trigger": trigger, "custom_instructions": instructions}, trigger
        )
        if hooked.blocked:
            self.say(f"compaction blocked by a PreCompact hook: {hooked.reason}")
            self.transcript.record("compact_blocked", trigger=trigger, reason=hooked.reason)
            return False
        instructions = "\n".join(filter(None, [instructions, *hooked.context]))
        before = self.context_size()
        self.say(f"compacting the conversation ({trigger}, {before:,} tokens)")
        self.files.scan(self.messages)
        try:
            summary = self._summarize(instructions)
        except ModelError as exc:
            self.say(f"no summary could be had ({exc}); clearing old tool output instead")
            self.transcript.record("compact_failed", trigger=trigger, error=str(exc))
            self._fall_back()
            return False
        budget = min(self.settings.window // compact.TAIL_SHARE, compact.TAIL_MOST)
        tail = compact.recent_tail(self.messages, budget)
        state = self.state() if self.state is not None else []
        new = compact.after_compaction(summary, self.work, state, self.files, tail)
        self._replace(new, "compact", trigger=trigger, pre_tokens=before, summary=summary)
        self.compactions += 1
        self.say(f"compacted the conversation: {before:,} -> {self.context_size():,} tokens")
        self._show_context()
        return True

    def _summarize(self, instructions: str) -> str:
        """The model's summary of the conversation; a request too long for the API is sent
        again without old tool output, then without the oldest exchanges."""
        messages = list(self.messages)
        for _ in range(3):
            asked = compact.summary_messages(messages, instructions)

            def build(room: int | None, stream: bool, asked: list[Any] = asked) -> ModelRequest:
                size = self._fixed + estimate(asked)
                most = min(compact.SUMMARY_MAX_TOKENS, self.settings.room(size))
                return self._request(asked, room or most, stream, remember=False)

            try:
                reply = self._send(build, compacting=True)
            except ModelError as exc:
                if not exc.context_too_long:
                    raise
                messages = _shortened(messages)
                continue
            summary = compact.summary_of(reply.content)
            if not summary:
                raise ModelError("the model's summary was empty")
            return summary
        raise ModelError("the conversation is too long to summarise, even shortened")

    def _fall_back(self) -> None:
        """No summary: clear old tool output; if the conversation still does not fit its
        window, drop the oldest exchanges (the work in progress is kept)."""
        messages = list(self.messages)
        compact.clear_old_results(messages, keep=1)
        budget = self.settings.threshold
        dropped = 0
        while self._fixed + estimate(messages) > budget and len(messages) > 3:
            del messages[1:3]  # an assistant turn and the user turn answering it
            dropped += 2
        if dropped:
            first = [b for b in messages[0]["content"] if not _dropped_note(b)]
            kept = [*first, self._text(DROPPED.format(n=dropped))]
            if self.work and not any(b.get("text") == self.work for b in kept):
                kept.insert(0, self._text(self.work))
            messages[0] = {**messages[0], "content": kept}
        self._replace(messages, "microcompact", dropped=dropped)

    def _replace(self, messages: list[dict[str, Any]], how: str, **info: Any) -> None:
        """The conversation is now `messages` (`how`: ``compact``, ``microcompact``): a boundary
        in the transcript (`--resume` starts there), the cache marks and the size anew, and a
        short ``compacted`` record for `swarm logs`."""
        before = self.context_size()
        self.messages = messages
        self.transcript.boundary(self.messages, how=how, **info)
        self._measure_again()
        short = {k: v for k, v in info.items() if k != "summary"}
        self.transcript.record(
            "compacted", how=how, **{"pre_tokens": before, **short}, post_tokens=self.context_size()
        )

    def _before_request(self) -> None:
        """Compact if asked or due; clear old tool output if the prompt cache went cold."""
        if self._asked is not None:
            (trigger, how), self._asked = self._asked, None
            self.compact(trigger, how)
            return
        size = self.context_size()
        if size > max(self.settings.threshold, self._quiet_until):
            if not self.compact("auto"):  # not again until it has grown a tenth of the window
                self._quiet_until = self.context_size() + self.settings.window // 10
            return
        since = self.clock() - self._replied_at if self._replied_at is not None else 0.0
        cold = since > self.marks.written_ttl_s
        if cold:
            messages = list(self.messages)
            freed = compact.clear_old_results(messages) // 4
            if freed and freed * 10 >= self.context_size():
                self.say(f"the prompt cache expired: cleared {freed:,} tokens of old tool output")
                self._replace(messages, "microcompact", freed=freed)

    def _show_context(self, write: bool = True) -> None:
        if self.reporter is not None:
            size, window = self.context_size(), self.settings.window
            self.reporter.context(size, window, self.compactions, write)


def _dropped_note(block: dict[str, Any]) -> bool:
    text = str(block.get("text", ""))
    return text.startswith("[") and "earlier messages were removed" in text


def _shortened(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy to summarise that is shorter: old tool output cleared, or if there is none left,
    the older half of the exchanges dropped (the first message kept)."""
    shorter = list(messages)
    if compact.clear_old_results(shorter, keep=1):
        return shorter
    half = max(2, (len(shorter) - 1) // 2 // 2 * 2)
    return [shorter[0], *shorter[1 + half :]] if len(shorter) > 1 + half else shorter
