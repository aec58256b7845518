"""The tool half of the agent loop: one ``tool_use`` block checked, asked about, run and answered.

`ToolCalls` is the base of `teammate.agent.loop.AgentLoop`, which owns the attributes it uses.
A call goes through, in order: the tool's input check; the ``PreToolUse`` hooks (a block or a
``deny`` is the call's error result; ``ask`` asks even where the rules allow; ``allow`` skips
asking but never overrides the policy's deny); the permission policy (``auto`` mode: a small
model judges what the rules leave open); the lead, when the answer is "ask"; the tool; the
``PostToolUse`` hooks (a block adds its reason to the result). Any failure is an ``is_error``
result the model reads, never a crash of the agent.

A tool may make a model request of its own (`tool_request`, the tool context's `model_call`:
WebFetch's reader, WebSearch's search): on the agent's connection, recorded in its transcript
and counted in its usage and budget like the loop's own requests.
"""

from __future__ import annotations

import json
import traceback
from typing import TYPE_CHECKING, Any

from protocols.errors import Error
from protocols.values import PermissionMode
from teammate.agent.loop_guard import LoopGuard, question
from teammate.agent.stall_guard import StallGuard, calls_of
from teammate.agent.transcript import Transcript
from teammate.api.model import Model, ModelError, ModelReply, ModelRequest
from teammate.hooks import HookResult
from teammate.link import PermissionAsk, TeamLink
from teammate.permissions.auto import JUDGE_MODEL, judge
from teammate.permissions.policy import Decision, PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.telemetry.spans import permission_span, tool_span
from teammate.tools.base import Tool, ToolContext, ToolError, ToolOutput, text_of

if TYPE_CHECKING:
    from teammate.mcp.search import Deferred

PREVIEW_CHARS = 2_000  # of a tool result, in its transcript record (the message holds it all)
# the old names Claude Code still takes for a tool
ALIASES = {"KillShell": "TaskStop", "KillBash": "TaskStop", "Task": "Agent"}


class ToolCalls:
    model: Model
    tools: dict[str, Tool]
    policy: PermissionPolicy
    ctx: ToolContext
    link: TeamLink | None
    transcript: Transcript
    reporter: StatusReporter | None
    deferred: Deferred | None
    halted: str | None
    loop_guard: LoopGuard
    stall_guard: StallGuard

    if TYPE_CHECKING:  # what the loop that has this base provides

        def hook(
            self, event: str, payload: dict[str, Any], target: str | None = None
        ) -> HookResult: ...

    def use(self, block: dict[str, Any]) -> dict[str, Any]:
        """Run one ``tool_use`` block; its ``tool_result`` block."""
        name, tool_input, use_id = block.get("name", ""), block.get("input") or {}, block["id"]
        self.transcript.record("tool_call", id=use_id, name=name, input=tool_input)
        if self.reporter:
            self.reporter.tool_call(name, tool_input)
        self.ctx.tool_use_id = use_id
        self.ctx.model_call = self.tool_request
        output: ToolOutput
        try:
            with tool_span(name, use_id):
                output = self._run_tool(name, tool_input, use_id)
            error = False
        except Error as exc:  # refused on purpose (a ToolError, or any package's error)
            output, error = str(exc), True
        except Exception as exc:  # a tool must never crash the teammate
            self.transcript.record("tool_crash", id=use_id, traceback=traceback.format_exc())
            output, error = f"{name} failed: {type(exc).__name__}: {exc}", True
        output = capped(output, self.ctx.output_limit)
        shown = output if isinstance(output, str) else text_of(output)
        stopped = self._loop_check(name, tool_input, use_id, shown, error)
        if stopped is not None:
            output = shown = f"{shown}\n\n{stopped}"
            error = True
        self.transcript.record(
            "tool_result",
            id=use_id,
            is_error=error,
            content=shown[:PREVIEW_CHARS],
            chars=len(shown),
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use_id, "content": output}
        if error:
            result["is_error"] = True
        return result

    def tool_request(self, request: ModelRequest, variant: str | None = None) -> ModelReply:
        """A tool's own model request, to the agent's model or to `variant` (module doc)."""
        model = self.model.variant(variant)
        use_id = self.ctx.tool_use_id
        try:
            reply = model.complete(request)
        except ModelError as exc:
            self.transcript.record("tool_request", id=use_id, model=model.name, error=str(exc))
            if self.reporter:
                self.reporter.model_call(None)
            raise
        usage = reply.usage.to_value()
        self.transcript.record("tool_request", id=use_id, model=model.name, usage=usage)
        if self.reporter:
            self.reporter.model_call(reply.usage, model=model.name)
        return reply

    def all_tools(self) -> dict[str, Tool]:
        """The tools a request offers: the built-in ones, then the MCP tools loaded (every one
        available now where loading is off; a built-in wins a clash)."""
        if self.deferred is None:
            return self.tools
        found = dict(self.tools)
        for extra in self.deferred.offered():
            found.setdefault(extra.name, extra)
        return found

    def _run_tool(self, name: str, tool_input: dict[str, Any], use_id: str) -> ToolOutput:
        name = ALIASES.get(name, name) if name not in self.tools else name
        tool = self.tools.get(name)
        if tool is None and self.deferred is not None:  # an MCP tool, loaded now if it was not
            tool = self.deferred.find(name)
        if tool is None:
            raise ToolError(f"No such tool available: {name}")
        tool.validate(tool_input)
        call = {"tool_name": name, "tool_input": tool_input, "tool_use_id": use_id}
        hooked = self.hook("PreToolUse", call, name)
        if hooked.stopped:  # continue: false: no more calls, the turn ends after this one
            self.halted = f"a PreToolUse hook said continue: false: {hooked.reason}"
        if hooked.refused or hooked.decision == "deny":
            raise ToolError(f"{name} was blocked by a PreToolUse hook: {hooked.reason}")
        decision = self.policy.decide(name, tool.kind, tool_input)
        behavior: str = decision.behavior
        if behavior != "deny" and hooked.decision is not None:  # a hook never overrides a deny
            behavior = hooked.decision
        elif decision.by_mode and self.policy.mode == PermissionMode.AUTO:
            decision = self._judge(name, tool_input, decision)
            behavior = decision.behavior
        if behavior == "allow" and self._leaves_sandbox(name, tool_input):
            behavior = "ask"  # a command outside the sandbox always needs the lead's yes
        if behavior == "deny":
            raise ToolError(f"Permission to use {name} was denied: {decision.reason}")
        if behavior == "ask":
            tool_input = self._ask(name, tool_input, use_id)
        output = tool.run(self.ctx, tool_input)
        after = self.hook("PostToolUse", {**call, "tool_response": output}, name)
        if after.stopped:
            self.halted = f"a PostToolUse hook said continue: false: {after.reason}"
        if not after.blocked:
            return output
        note = f"PostToolUse hook: {after.reason}"
        if isinstance(output, str):
            return f"{output}\n\n{note}"
        return [*output, {"type": "text", "text": note}]

    def _loop_check(
        self, name: str, tool_input: dict[str, Any], use_id: str, shown: str, error: bool
    ) -> str | None:
        """`teammate.agent.loop_guard`: at the repeat that makes a loop, ask the lead; what to
        tell the model when the lead stopped it (None: go on)."""
        digest, count = self.loop_guard.saw(name, tool_input, shown, error)
        if not self.loop_guard.looping(name, tool_input, count) or self.link is None:
            return None
        reason = self._lead_stops(name, tool_input, use_id, question(name, count))
        if reason is None:
            self.loop_guard.forgive(digest)
            return None
        self.halted = f"the lead stopped a loop of {name}: {reason}"
        return (
            f"The lead stopped this: {name} gave the same result {count} times with the same "
            f"input. Their reason: {reason}"
        )

    def _stall_check(
        self, uses: list[dict[str, Any]], results: list[dict[str, Any]], heard: bool
    ) -> str | None:
        """`teammate.agent.stall_guard`: after a turn's calls, at the turn that makes a stall,
        ask the lead; what to tell the model when the lead stopped it (None: go on)."""
        if not self.stall_guard.turn(calls_of(uses, results), heard) or self.link is None:
            return None
        last = uses[-1]
        name, tool_input = str(last.get("name", "")), last.get("input") or {}
        question_text = self.stall_guard.question()
        reason = self._lead_stops(name, tool_input, str(last.get("id", "")), question_text)
        if reason is None:
            self.stall_guard.forgive()
            return None
        quiet = self.stall_guard.quiet
        self.halted = f"the lead stopped it after {quiet} turns without progress"
        return (
            f"The lead stopped this: {quiet} turns in a row changed no file, sent no message "
            f"and moved no task. Their reason: {reason}"
        )

    def _lead_stops(
        self, name: str, tool_input: dict[str, Any], use_id: str, asked: str
    ) -> str | None:
        """Ask the lead whether this agent goes on (a guard tripped: `asked` says which, about
        the call `name` with `tool_input`); None if it may, else the lead's reason to stop."""
        assert self.link is not None
        with permission_span(name):
            answer = self.link.ask_permission(PermissionAsk(name, tool_input, asked, use_id))
        return None if answer.approved else answer.reason or "no reason given"

    def _leaves_sandbox(self, name: str, tool_input: dict[str, Any]) -> bool:
        """A Bash call that asks to run outside this agent's sandbox."""
        shells = self.ctx.shells
        wants = name == "Bash" and tool_input.get("dangerouslyDisableSandbox") is True
        return wants and shells is not None and shells.sandbox is not None

    def _ask(self, name: str, tool_input: dict[str, Any], use_id: str) -> dict[str, Any]:
        """Ask the lead; the input to run with (an approval may change it)."""
        if self.link is None:
            raise ToolError(f"{name} needs approval and there is no lead to ask")
        with permission_span(name):
            ask = PermissionAsk(
                name,
                tool_input,
                describe_call(name, tool_input),
                use_id,
                self.policy.suggestions(name, tool_input),
            )
            answer = self.link.ask_permission(ask)
        if not answer.approved:
            raise ToolError(
                f"Permission to use {name} was denied by team-lead: "
                f"{answer.reason or 'no reason given'}"
            )
        if answer.permission_updates:
            self.policy.apply_updates(answer.permission_updates)
        return answer.updated_input or tool_input

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


def not_run(block: dict[str, Any], why: str) -> dict[str, Any]:
    """The error result of a call that was not run, saying why."""
    return {"type": "tool_result", "tool_use_id": block["id"], "content": why, "is_error": True}


def describe_call(name: str, tool_input: dict[str, Any]) -> str:
    """One line for the lead: what this tool call would do."""
    if name == "Bash":
        command = str(tool_input.get("command", ""))
        described = tool_input.get("description")
        return f"{described}: {command}" if described else f"Run: {command}"
    if "file_path" in tool_input:
        return f"{name} {tool_input['file_path']}"
    return f"{name} {json.dumps(tool_input, ensure_ascii=False)[:200]}"


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters truncated] ...\n{text[-half:]}"


def capped(output: ToolOutput, limit: int) -> ToolOutput:
    """`output` within `limit` characters of text (an image or a document block is kept)."""
    if isinstance(output, str):
        return cap(output, limit)
    return [
        {**b, "text": cap(str(b.get("text", "")), limit)} if b.get("type") == "text" else b
        for b in output
    ]
