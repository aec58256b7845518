"""The agent loop: model turn, tool calls, results, again, until the model ends its turn.

`AgentLoop` keeps one conversation across pieces of work (a teammate is one long session, as in
Claude Code). Each `run` adds a user message and loops: a model call; every ``tool_use`` block
checked against the permission policy (asking the lead when it says "ask"), run, and answered
with a ``tool_result`` (an exception is an ``is_error`` result, never a crash); messages that
arrived meanwhile appended as ``<teammate-message>`` blocks; until ``end_turn`` or `max_turns`.

Requests mark the stable prefix for prompt caching (the tools and the system prompt) and the
end of the conversation so far, so turn N reads everything turn N-1 sent from the cache.

The request goes first (issue 19): a run's first request is built from what is in memory (the
tools' schemas are made once), and what only records the turn waits until it has been sent:
the transcript lines of the new prompt and the request (`Transcript.hold`), and the caller's
bookkeeping handed to `defer` (a teammate's status file and ``isActive``). They are written as
soon as the model has the request (`ModelRequest.on_sent`), or when the call fails, when the
run ends without a request, or before an over-budget wait. Nothing the agent acknowledges
depends on them: a teammate marks a message read only after the run that answers it.
Retries: the SDK retries 429/529/5xx twice, quickly; on top of that a bounded number of slower
retries for an overloaded API, waited out through the team link (`TeamLink.pause`), which keeps
answering the inbox, so a teammate whose model is failing still obeys a shutdown at once.
A conversation that grows too long is trimmed (old tool output first, then
the oldest exchanges), never retried as it is. Before each request the agent's budget
(`teammate.budget`, on its reporter: a sub-agent shares its parent's) may hold it while it is
over its limits.

Hooks (`teammate.agent.hooks`, optional): ``UserPromptSubmit`` before a prompt is added (a block
drops it), ``PreToolUse`` before the permission decision (a block or ``deny`` is the tool's
error result; ``ask`` asks even where the rules allow; ``allow`` skips asking but never
overrides a deny of the policy), ``PostToolUse`` after a tool ran (a block adds its reason to
the result), and ``Stop`` (``SubagentStop`` for a sub-agent) when the model ends its turn (a
block sends it back to work with the reason, at most `MAX_STOP_BLOCKS` times for one prompt,
however many tool calls it makes in between; ``stop_hook_active`` is then true). A hook
answering ``{"continue": false}`` ends the turn: the calls after it are not run.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from protocols.errors import Error
from protocols.inbox_entry import format_for_model
from protocols.values import PermissionMode
from teammate.agent.hooks import HookResult, Hooks
from teammate.agent.model import Model, ModelError, ModelReply, ModelRequest
from teammate.agent.transcript import Transcript, add_message
from teammate.brains.base import TeamLink
from teammate.permissions.auto import JUDGE_MODEL, judge
from teammate.permissions.policy import Decision, PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.tools.base import Tool, ToolContext, ToolError

CACHE = {"type": "ephemeral"}
DEFAULT_MAX_TURNS = 100
DEFAULT_CONTEXT_TOKENS = 150_000
MAX_STOP_BLOCKS = 3  # a Stop hook may send the agent back to work this many times a prompt
TRIMMED = "[output removed to keep the conversation within the context window]"


class LoopCancelled(Exception):
    """The loop's `cancelled` event was set: it stopped at a boundary (before a model call or
    a tool call). Not an `Error`: nothing went wrong, someone stopped it."""


@dataclass(frozen=True)
class LoopResult:
    stop: Literal["end_turn", "max_turns"]
    text: str  # the model's last text
    turns: int


class AgentLoop:
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
        max_turns: int = DEFAULT_MAX_TURNS,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        overload_retries: int = 3,
        retry_delay_s: float = 10.0,
        say: Callable[[str], None] = lambda text: None,
        cancelled: threading.Event | None = None,
        notices: Callable[[], list[str]] | None = None,
        thinking_budget: int | None = None,
        hooks: Hooks | None = None,
        stop_event: str = "Stop",
        extra_tools: Callable[[], list[Tool]] | None = None,
    ) -> None:
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.policy = policy
        self.system_prompt = system_prompt
        self.ctx = ctx
        self.link = link
        self.transcript = transcript or Transcript(None)
        self.reporter = reporter
        self.max_turns = max_turns
        self.context_tokens = context_tokens
        self.overload_retries = overload_retries
        self.retry_delay_s = retry_delay_s
        self.say = say
        self.cancelled = cancelled  # set by whoever stops this agent (TaskStop)
        self.notices = notices  # what its background sub-agents report, before each model turn
        self.thinking_budget = thinking_budget  # extended thinking (an agent's effort)
        self.hooks = hooks or Hooks()
        self.stop_event = stop_event  # "SubagentStop" for a sub-agent
        self.stop_payload: dict[str, Any] = {}  # a sub-agent's agent_id and agent_type
        # tools that come and go (MCP servers' tools), asked for before each request; a
        # built-in of the same name wins
        self.extra_tools = extra_tools
        self.messages: list[dict[str, Any]] = []
        self.last_text = ""  # the model's latest text: a stopped agent's partial result
        self.halted: str | None = None  # a hook's continue: false ends the turn (its reason)
        self._deferred: list[Callable[[], None]] = []  # bookkeeping for after the request

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
            self._add_user([{"type": "text", "text": t} for t in [prompt, *hooked.context]])
        notices = self._notices()
        waiting = bool(self.messages) and self.messages[-1]["role"] == "user"
        if prompt is None and not notices and not waiting:
            return LoopResult("end_turn", "", 0)  # what was reported was taken meanwhile
        self._add_user(notices)
        text = ""
        stop_blocks = 0
        for turn in range(1, self.max_turns + 1):
            self._check_cancelled()
            reply = self._call()
            self._check_cancelled()  # stopped while the model answered: its answer is dropped
            self._add("assistant", reply.content)
            said = "\n".join(b["text"] for b in reply.content if b.get("type") == "text").strip()
            if said:
                text = self.last_text = said
                self.say(said)
            uses = [b for b in reply.content if b.get("type") == "tool_use"]
            if not uses:
                again = self._stop_hook(stop_blocks)
                if again is None:
                    return LoopResult("end_turn", text, turn)
                stop_blocks += 1
                self._add_user([{"type": "text", "text": again}])
                continue
            results: list[dict[str, Any]] = []
            self.halted = None
            for block in uses:
                self._check_cancelled()
                results.append(self._use(block) if self.halted is None else _halted(block))
            if self.halted is not None:  # a hook said continue: false
                self._add_user(results)
                self.say(f"stopped by a hook: {self.halted}")
                return LoopResult("end_turn", text, turn)
            arrived = self.link.between_turns() if self.link is not None else []
            if arrived:
                results.append({"type": "text", "text": format_for_model(arrived)})
            self._add_user([*results, *self._notices()])
        return LoopResult("max_turns", text, self.max_turns)

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
        return [{"type": "text", "text": n} for n in (self.notices() if self.notices else [])]

    def _check_cancelled(self) -> None:
        if self.cancelled is not None and self.cancelled.is_set():
            raise LoopCancelled("stopped")

    def _add_user(self, content: list[dict[str, Any]]) -> None:
        self._add("user", content)

    def _add(self, role: str, content: list[dict[str, Any]]) -> None:
        """Add to the conversation, and to the transcript, which can play it back."""
        if content:
            add_message(self.messages, role, content)
            self.transcript.record("message", role=role, content=content)

    def restore(self, messages: list[dict[str, Any]]) -> None:
        """Carry on from `messages` (a resumed agent's, a fork child's seed)."""
        self.messages = messages
        self._record_conversation()

    def _record_conversation(self) -> None:
        self.transcript.record("conversation", messages=self.messages)

    # model calls

    def request(self) -> ModelRequest:
        """The next request: tools and system marked for caching, and the conversation's end.
        It shares the conversation's blocks (only the marked ones are copies): a model must not
        change it, nor keep it past the call (`ScriptedModel` keeps a deep copy)."""
        tools = [t.api_schema for t in self.all_tools().values()]
        if tools:
            tools[-1] = {**tools[-1], "cache_control": CACHE}
        system = [{"type": "text", "text": self.system_prompt, "cache_control": CACHE}]
        messages = list(self.messages)
        if messages and messages[-1]["content"]:
            last = messages[-1]
            marked = {**last["content"][-1], "cache_control": CACHE}
            messages[-1] = {**last, "content": [*last["content"][:-1], marked]}
        return ModelRequest(
            system=system,
            tools=tools,
            messages=messages,
            thinking_budget=self.thinking_budget,
            on_sent=self.settle,
        )

    def _prepared(self) -> tuple[ModelRequest, int]:
        request = self.request()
        return request, estimate_tokens(request)

    def _call(self) -> ModelReply:
        retries = 0
        trims = 0
        request, size = self._prepared()
        if size > self.context_tokens and self._trim(self.context_tokens):
            request, size = self._prepared()
        while True:
            if self._pass_budget():
                request, size = self._prepared()  # after a wait: the tools may have changed
            self.transcript.record("request", messages=len(request.messages), tokens=size)
            try:
                reply = self.model.complete(request)
            except ModelError as exc:
                self.settle()
                self.transcript.record("error", error=str(exc), status=exc.status)
                if self.reporter:
                    self.reporter.model_call(None)
                if exc.context_too_long and trims < 3:
                    trims += 1
                    # the API's limit is lower than our estimate thought: aim well under it,
                    # and keep to that from now on
                    self.context_tokens = min(self.context_tokens, int(size * 0.6))
                    if self._trim(self.context_tokens):
                        request, size = self._prepared()
                        continue
                if exc.retryable and retries < self.overload_retries:
                    retries += 1
                    delay = self.retry_delay_s * 2 ** (retries - 1)
                    self.say(f"model API unavailable ({exc}); retrying in {delay:g} s")
                    self._wait(delay, "model unavailable")
                    request, size = self._prepared()
                    continue
                raise
            self.settle()  # a model that does not call on_sent
            self.transcript.record(
                "response",
                content=reply.content,
                stop_reason=reply.stop_reason,
                usage=reply.usage.to_value(),
            )
            if self.reporter:
                self.reporter.model_call(reply.usage, model=self.model.name)
            return reply

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

    def _trim(self, budget: int) -> bool:
        """Shrink the conversation under `budget` tokens: old tool output first, then the
        oldest exchanges, then the newest tool output. False if nothing could be removed."""
        changed = False

        def fits() -> bool:
            return estimate_tokens(self.request()) <= budget

        for message in self.messages[1:-1]:
            if fits():
                break
            changed |= _blank_results(message)
        dropped = 0
        while not fits() and len(self.messages) > 3:
            del self.messages[1:3]  # an assistant turn and the user turn answering it
            dropped += 2
        if dropped:
            note = f"[{dropped} earlier messages were removed to fit the context window]"
            self.messages[0]["content"].append({"type": "text", "text": note})
            changed = True
        if not fits() and self.messages:
            changed |= _blank_results(self.messages[-1])
        self.transcript.record("trimmed", budget=budget, dropped=dropped, changed=changed)
        if changed:
            self._record_conversation()
        self.say(f"trimmed the conversation to fit {budget} tokens ({dropped} messages dropped)")
        return changed

    # tools

    def _use(self, block: dict[str, Any]) -> dict[str, Any]:
        name, tool_input, use_id = block.get("name", ""), block.get("input") or {}, block["id"]
        self.transcript.record("tool_call", id=use_id, name=name, input=tool_input)
        if self.reporter:
            self.reporter.tool_call(name, tool_input)
        self.ctx.tool_use_id = use_id
        try:
            text = self._run_tool(name, tool_input, use_id)
            error = False
        except Error as exc:  # refused on purpose (a ToolError, or any package's error)
            text, error = str(exc), True
        except Exception as exc:  # a tool must never crash the teammate
            self.transcript.record("tool_crash", id=use_id, traceback=traceback.format_exc())
            text, error = f"{name} failed: {type(exc).__name__}: {exc}", True
        text = cap(text, self.ctx.output_limit)
        self.transcript.record("tool_result", id=use_id, is_error=error, content=text)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use_id, "content": text}
        if error:
            result["is_error"] = True
        return result

    def all_tools(self) -> dict[str, Tool]:
        """The built-in tools, then the extra tools available now (a built-in wins a clash)."""
        if self.extra_tools is None:
            return self.tools
        found = dict(self.tools)
        for extra in self.extra_tools():
            found.setdefault(extra.name, extra)
        return found

    def _run_tool(self, name: str, tool_input: dict[str, Any], use_id: str) -> str:
        tool = self.tools.get(name) or self.all_tools().get(name)
        if tool is None:
            raise ToolError(f"No such tool available: {name}")
        tool.validate(tool_input)
        call = {"tool_name": name, "tool_input": tool_input, "tool_use_id": use_id}
        hooked = self.hook("PreToolUse", call, name)
        if hooked.stopped:  # continue: false: no more calls, the turn ends after this one
            self.halted = hooked.reason
        if hooked.refused or hooked.decision == "deny":
            raise ToolError(f"{name} was blocked by a PreToolUse hook: {hooked.reason}")
        decision = self.policy.decide(name, tool.kind, tool_input)
        behavior: str = decision.behavior
        if behavior != "deny" and hooked.decision is not None:  # a hook never overrides a deny
            behavior = hooked.decision
        elif decision.by_mode and self.policy.mode == PermissionMode.AUTO:
            decision = self._judge(name, tool_input, decision)
            behavior = decision.behavior
        if behavior == "deny":
            raise ToolError(f"Permission to use {name} was denied: {decision.reason}")
        if behavior == "ask":
            if self.link is None:
                raise ToolError(f"{name} needs approval and there is no lead to ask")
            answer = self.link.ask_permission(
                name,
                tool_input,
                describe_call(name, tool_input),
                use_id,
                self.policy.suggestions(name, tool_input),
            )
            if not answer.approved:
                raise ToolError(
                    f"Permission to use {name} was denied by {'team-lead'}: "
                    f"{answer.reason or 'no reason given'}"
                )
            if answer.permission_updates:
                self.policy.apply_updates(answer.permission_updates)
            if answer.updated_input:
                tool_input = answer.updated_input
        output = tool.run(self.ctx, tool_input)
        after = self.hook("PostToolUse", {**call, "tool_response": output}, name)
        if after.stopped:
            self.halted = after.reason
        return f"{output}\n\nPostToolUse hook: {after.reason}" if after.blocked else output

    def _judge(self, name: str, tool_input: dict[str, Any], asked: Decision) -> Decision:
        """``auto`` mode: a small model decides a call the rules leave open (an ask stays an
        ask, to the lead, when it cannot say)."""
        rules = {b: [str(r) for r in self.policy.rules(b)] for b in ("allow", "deny", "ask")}
        verdict = judge(self.model.variant(JUDGE_MODEL), name, tool_input, rules, self.ctx.cwd)
        self.transcript.record(
            "auto_mode", tool=name, decision=verdict.behavior, reason=verdict.reason
        )
        if self.reporter:
            self.reporter.model_call(verdict.usage, model=JUDGE_MODEL)
        if verdict.behavior == "ask":
            return asked
        return Decision("allow" if verdict.behavior == "allow" else "deny", verdict.reason)


def _halted(block: dict[str, Any]) -> dict[str, Any]:
    """The result of a call not run because a hook stopped the turn."""
    text = "Not run: a hook stopped this turn."
    return {"type": "tool_result", "tool_use_id": block["id"], "content": text, "is_error": True}


def _blank_results(message: dict[str, Any]) -> bool:
    changed = False
    for block in message["content"]:
        if block.get("type") == "tool_result" and block.get("content") != TRIMMED:
            block["content"] = TRIMMED
            changed = True
    return changed


def describe_call(name: str, tool_input: dict[str, Any]) -> str:
    """One line for the lead: what this tool call would do."""
    if name == "Bash":
        command = str(tool_input.get("command", ""))
        described = tool_input.get("description")
        return f"{described}: {command}" if described else f"Run: {command}"
    if "file_path" in tool_input:
        return f"{name} {tool_input['file_path']}"
    return f"{name} {json.dumps(tool_input, ensure_ascii=False)[:200]}"


def estimate_tokens(request: ModelRequest) -> int:
    """About 4 characters a token: good enough to decide when to trim."""
    size = len(json.dumps(request.tools)) + len(json.dumps(request.system))
    return (size + len(json.dumps(request.messages, ensure_ascii=False))) // 4


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters truncated] ...\n{text[-half:]}"
