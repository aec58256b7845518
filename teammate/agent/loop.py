"""The agent loop: model turn, tool calls, results, again, until the model ends its turn.

`AgentLoop` keeps one conversation across pieces of work (a teammate is one long session, as in
Claude Code). Each `run` adds a user message and loops: a model call (`teammate.agent.model_turns`:
retries, the team link's watch, the budget); every ``tool_use`` block run
(`teammate.agent.tool_calls`: hooks, permissions, the lead) and answered with a ``tool_result``;
messages that arrived meanwhile appended as ``<teammate-message>`` blocks; until the model ends
its turn. The conversation is compacted when it fills its window
(`teammate.agent.compacting`). There is no cap on model turns unless one is set
(``--max-turns``, ``CLAUDE_CODE_MAX_TURNS``, a definition's ``maxTurns``): budgets are the guard.

Why the model stopped decides what comes next:

- ``end_turn``, ``stop_sequence``: the turn is over (a ``Stop`` hook may send it back to work,
  with its reason, at most `MAX_STOP_BLOCKS` times for one prompt);
- ``tool_use``: the calls are run and the loop goes on;
- ``max_tokens``: the cut-off answer is kept and the model is told to go on from where it was
  cut off; a call cut off with it is never run (its input is incomplete), and the model is told
  so. `MAX_CUT_OFFS` in a row end the run (`LoopResult.stop` ``max_tokens``);
- ``pause_turn``: the request is made again as it is, so the server goes on;
- ``refusal``: the run ends (``refusal``), the answer's calls not run;
- ``model_context_window_exceeded``: as ``max_tokens``, and the conversation is compacted first.

The request goes first: a run's first request is built from what is in memory, and
what only records the turn (the transcript lines of the new prompt and the request,
`Transcript.hold`; the caller's bookkeeping, `defer`) is written once the model has the
request (`ModelRequest.on_sent`), when the call fails, when the run ends without a request, or
before an over-budget wait.

Hooks: ``UserPromptSubmit`` before a prompt is added (a block drops it), ``PreCompact`` before a
compaction, ``Stop`` (``SubagentStop`` for a sub-agent) when the model ends its turn; the tool
hooks in `teammate.agent.tool_calls`. A hook answering ``{"continue": false}`` ends the turn:
the calls after it are not run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from protocols.inbox.entry import format_for_model
from teammate.agent import compaction as compact
from teammate.agent.compacting import Compacting
from teammate.agent.loop_guard import LoopGuard, repeats_from
from teammate.agent.model_turns import LoopCancelled, ModelTurns
from teammate.agent.requests import CacheMarks, estimate
from teammate.agent.retries import RetryPolicy, retries_from
from teammate.agent.stall_guard import StallGuard, turns_from
from teammate.agent.tool_calls import ToolCalls, not_run
from teammate.agent.transcript import Transcript, add_message
from teammate.api.model import Model
from teammate.api.model_settings import ModelSettings
from teammate.hooks import HookResult, Hooks
from teammate.link import TeamLink
from teammate.mcp.search import MCP_SEARCH_TOOLS, Deferred, deferring
from teammate.permissions.policy import PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from teammate.mcp.tools import McpToolbox

__all__ = ["MAX_STOP_BLOCKS", "AgentLoop", "LoopCancelled", "LoopResult"]

MAX_STOP_BLOCKS = 3  # a Stop hook may send the agent back to work this many times a prompt
MAX_CUT_OFFS = 5  # answers cut off by max_tokens in a row before the run gives up
MAX_PAUSES = 20  # pause_turn answers in a row
CUT_OFF = (
    "Your response was cut off because it exceeded the output token limit. Continue from "
    "where you left off; split long output (a big file: write it in parts)."
)
CUT_CALL = (
    "Not run: this call was cut off by the output token limit, so its input is incomplete. "
    "Make the call again, smaller if it was large."
)
REFUSED = "[the model declined to answer this request]"


@dataclass(frozen=True)
class LoopResult:
    stop: Literal["end_turn", "max_turns", "refusal", "max_tokens"]
    text: str  # the model's last text
    turns: int


class AgentLoop(ToolCalls, Compacting, ModelTurns):
    def __init__(
        self,
        model: Model,
        tools: list[Tool],
        policy: PermissionPolicy,
        system_prompt: str,
        ctx: ToolContext,
        link: TeamLink | None = None,
        transcript: Transcript | None = None,
        reporter: StatusReporter | None = None,
        max_turns: int | None = None,
        settings: ModelSettings | None = None,
        retries: RetryPolicy | None = None,
        say: Callable[[str], None] = lambda text: None,
        cancelled: threading.Event | None = None,
        notices: Callable[[], list[str]] | None = None,
        hooks: Hooks | None = None,
        stop_event: str = "Stop",
        mcp: McpToolbox | None = None,
        state: Callable[[], list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.policy = policy
        self.system_prompt = system_prompt
        self.ctx = ctx
        self.link = link
        self.transcript = transcript or Transcript(None)
        self.reporter = reporter
        self.max_turns = max_turns  # None: no cap
        self.settings = settings or ModelSettings.of(model.name)
        self.retries = retries or RetryPolicy(retries_from())
        self.say = say
        self.cancelled = cancelled  # set by whoever stops this agent (TaskStop)
        self.notices = notices  # what its background sub-agents report, before each model turn
        self.hooks = hooks or Hooks()
        self.stop_event = stop_event  # "SubagentStop" for a sub-agent
        self.stop_payload: dict[str, Any] = {}  # a sub-agent's agent_id and agent_type
        # the MCP servers' tools, which come and go: loaded when needed (`teammate.mcp.search`);
        # a built-in of the same name wins
        self.mcp = mcp
        self.deferred = Deferred(mcp, on=deferring()) if mcp is not None else None
        if self.deferred is not None:
            ctx.mcp = self.deferred
            search = MCP_SEARCH_TOOLS if self.deferred.on else MCP_SEARCH_TOOLS[1:]
            self.tools.update({t.name: t for t in search if t.name not in self.tools})
        self.state = state  # what its owner says it must know after a compaction
        self.clock = clock
        self.messages: list[dict[str, Any]] = []
        self.last_text = ""  # the model's latest text: a stopped agent's partial result
        self.halted: str | None = None  # a hook's continue: false ends the turn (its reason)
        self.loop_guard = LoopGuard(repeats_from())  # the same call, the same result, again
        self.stall_guard = StallGuard(turns_from(), ctx.cwd)  # many turns, nothing changes
        self.work: str | None = None  # the prompt of the piece of work in progress
        self.compactions = 0
        self.marks = CacheMarks()
        self.files = compact.FilesTouched()
        self._deferred: list[Callable[[], None]] = []  # bookkeeping for after the request
        self._asked: tuple[str, str] | None = None  # a compaction asked for: (trigger, how)
        self._real = 0  # the last request's size, as the API counted it
        self._since = 0  # estimated tokens added to the conversation since
        self._estimated = 0  # the conversation's estimate
        self._fixed = estimate(system_prompt) + estimate([t.api_schema for t in tools])
        self._replied_at: float | None = None
        self._quiet_until = 0  # no automatic compaction below this size (one just failed)

    # the loop

    def run(self, prompt: str | None) -> LoopResult:
        """Add `prompt` as the user's turn (None: only what sub-agents reported, or the user
        message the conversation already ends with, as a fork child's does) and loop until the
        model ends its turn. Raises `LoopCancelled` once `cancelled` is set. What a loaded
        skill allowed, and its hooks, are taken back at the run's end."""
        self.transcript.hold()  # the prompt's lines are written once the request has left
        try:
            return self._run(prompt)
        finally:  # a loaded skill is no longer active
            self.settle()
            self.policy.end_grants()
            self.hooks.end_temporary()

    def defer(self, work: Callable[[], None]) -> None:
        """Run `work` once the next model request has been sent (or the run ends without one):
        bookkeeping that must not delay the request."""
        self._deferred.append(work)

    def settle(self) -> None:
        """Write the held transcript lines and run the deferred bookkeeping, in order."""
        self.transcript.release()
        while self._deferred:
            self._deferred.pop(0)()

    def _run(self, prompt: str | None) -> LoopResult:
        if prompt is not None:
            hooked = self.hook("UserPromptSubmit", {"prompt": prompt})
            if hooked.refused:  # the prompt is dropped
                self.say(f"prompt blocked by a UserPromptSubmit hook: {hooked.reason}")
                return LoopResult("end_turn", "", 0)
            if self._replied_at is not None:
                self.marks.idled(self.clock() - self._replied_at)
            self.work = prompt
            self.stall_guard.started()
            self._add_user([{"type": "text", "text": t} for t in [prompt, *hooked.context]])
        notices = self._notices()
        waiting = bool(self.messages) and self.messages[-1]["role"] == "user"
        if prompt is None and not notices and not waiting:
            return LoopResult("end_turn", "", 0)  # what was reported was taken meanwhile
        self._add_user(notices)
        text = ""
        stop_blocks = cut_offs = pauses = 0
        turn = 0
        while self.max_turns is None or turn < self.max_turns:
            turn += 1
            self._check_cancelled()
            reply = self._call()
            self._check_cancelled()  # stopped while the model answered: its answer is dropped
            said = "\n".join(b["text"] for b in reply.content if b.get("type") == "text").strip()
            if said:
                text = self.last_text = said
                self.say(said)
            if reply.stop_reason == "refusal":
                self._add("assistant", _without_calls(reply.content))
                return LoopResult("refusal", said, turn)
            self._add("assistant", reply.content)
            if reply.stop_reason == "pause_turn" and pauses < MAX_PAUSES:
                pauses += 1
                continue  # the next request ends with this answer: the server goes on
            pauses = 0
            uses = [b for b in reply.content if b.get("type") == "tool_use"]
            if reply.stop_reason in ("max_tokens", "model_context_window_exceeded"):
                cut_offs += 1
                if cut_offs > MAX_CUT_OFFS:
                    return LoopResult("max_tokens", text, turn)
                if reply.stop_reason == "model_context_window_exceeded":
                    self.request_compaction(trigger="auto")
                self._add_user([*self._tools(uses, cut=True), self._text(CUT_OFF)])
                continue
            cut_offs = 0
            if not uses:
                again = self._stop_hook(stop_blocks)
                if again is None:
                    return LoopResult("end_turn", text, turn)
                stop_blocks += 1
                self._add_user([self._text(again)])
                continue
            results = self._tools(uses)
            if self.halted is not None:  # a hook said continue: false
                self._add_user(results)
                self.say(f"turn stopped: {self.halted}")
                return LoopResult("end_turn", text, turn)
            arrived = self.link.between_turns() if self.link is not None else []
            if arrived:
                results.append(self._text(format_for_model(arrived)))
            stopped = self._stall_check(uses, results, bool(arrived))
            if stopped is not None:
                self._add_user([*results, self._text(stopped)])
                self.say(f"turn stopped: {self.halted}")
                return LoopResult("end_turn", text, turn)
            self._add_user([*results, *self._notices()])
        return LoopResult("max_turns", text, turn)

    def _tools(self, uses: list[dict[str, Any]], cut: bool = False) -> list[dict[str, Any]]:
        """Run the calls of one answer (`cut`: its last block was cut off, and is not run)."""
        self.halted = None
        results = []
        for block in uses:
            self._check_cancelled()
            if cut and block is uses[-1] and _ends_with(block, self.messages[-1]):
                results.append(not_run(block, CUT_CALL))
            elif self.halted is not None:
                results.append(not_run(block, f"Not run: the turn was stopped ({self.halted})."))
            else:
                results.append(self.use(block))
        return results

    def _text(self, text: str) -> dict[str, Any]:
        return {"type": "text", "text": text}

    def hook(self, event: str, payload: dict[str, Any], target: str | None = None) -> HookResult:
        """Run `event`'s hooks; their non-blocking errors go into the transcript."""
        result = self.hooks.run(event, payload, target, self.ctx.cwd, self.policy.mode)
        for error in result.errors:
            self.transcript.record("hook_error", event=event, error=error)
            self.say(f"hook error: {error}")
        return result

    def _stop_hook(self, blocks: int) -> str | None:
        """What a blocking Stop hook tells the agent to do next; None: it may stop."""
        if blocks >= MAX_STOP_BLOCKS:
            return None
        payload = {**self.stop_payload, "stop_hook_active": blocks > 0}
        hooked = self.hook(self.stop_event, payload, self.stop_payload.get("agent_type"))
        return hooked.reason if hooked.blocked and not hooked.stopped else None

    def _notices(self) -> list[dict[str, Any]]:
        return [self._text(n) for n in (self.notices() if self.notices else [])]

    def _add_user(self, content: list[dict[str, Any]]) -> None:
        self._add("user", content)

    def _add(self, role: str, content: list[dict[str, Any]]) -> None:
        """Add to the conversation, and to the transcript, which can play it back."""
        if content:
            add_message(self.messages, role, content)
            self.transcript.record("message", role=role, content=content)
            size = estimate(content)
            self._since += size
            self._estimated += size

    def restore(self, messages: list[dict[str, Any]]) -> None:
        """Carry on from `messages` (a resumed agent's, a fork child's seed)."""
        self.messages = messages
        self.transcript.record("conversation", messages=self.messages)
        self._measure_again()


def _ends_with(block: dict[str, Any], message: dict[str, Any]) -> bool:
    """Whether `block` is the last block of `message` (a cut-off answer's cut-off call)."""
    return bool(message["content"]) and message["content"][-1] is block


def _without_calls(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A refused answer as kept in the conversation: its text, never its calls (not run)."""
    kept = [b for b in content if b.get("type") in ("text", "thinking", "redacted_thinking")]
    if not any(b.get("type") == "text" and b.get("text", "").strip() for b in kept):
        kept.append({"type": "text", "text": REFUSED})
    return kept
