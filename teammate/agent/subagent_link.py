"""How a sub-agent reaches the world through its parent: `SubAgentLink` (its `TeamLink`: asks
go up the parent's path, labelled, messages for it are the ones queued with SendMessage) and
`SubAgentReporter` (its usage, counted for it and rolled up into its parent's status)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso
from protocols.inbox.entry import InboxEntry
from protocols.member.status import SubAgentStatus
from protocols.paths import TeamPaths
from teammate.agent.subagent_run import SubAgentRun
from teammate.api.model import Usage
from teammate.link import Approval, PermissionAsk, PlanVerdict, TeamLink, Watched
from teammate.reporter import StatusReporter, tool_activity
from teammate.tools.base import ToolError

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract, TaskBoardContract
    from teammate.agent.subagents import SubAgents

WATCH_S = 0.25  # how soon a stopped sub-agent abandons its model call


class SubAgentLink:
    """The sub-agent's `TeamLink`: asks go up the parent's path, labelled; messages for it are
    the ones queued with SendMessage; everything about the team is the parent's."""

    def __init__(self, agents: SubAgents, run: SubAgentRun, label: str) -> None:
        self._agents = agents
        self._run = run
        self.name = label
        self.color = None

    def _parent(self) -> TeamLink:
        link = self._agents.parent.link
        if link is None:
            raise ToolError("this sub-agent's parent has no team to ask")
        return link

    @property
    def paths(self) -> TeamPaths:
        return self._parent().paths

    @property
    def mailbox(self) -> MailboxContract:
        return self._parent().mailbox

    @property
    def board(self) -> TaskBoardContract:
        return self._parent().board

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        return self._parent().ask_permission(ask.by(self.name))

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        return self._parent().ask_plan_approval(plan, plan_file)

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        self._parent().send(to, body, summary)

    def between_turns(self) -> list[InboxEntry]:
        parent = self._agents.parent.name
        return [
            InboxEntry.model_validate({"from": parent, "text": text, "timestamp": now_iso()})
            for text in self._agents.take_pending(self._run)
        ]

    def pause(self, seconds: float, why: str) -> None:
        deadline = time.monotonic() + seconds
        while not self._run.cancel.wait(max(0.0, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return

    def watch(self, call: Watched, why: str) -> bool:
        """Wait for the call; False (abandon it) once the sub-agent is stopped."""
        while not call.wait(WATCH_S):
            if self._run.cancel.is_set():
                return False
        return True

    def wait_command(self, command: Watched, seconds: float, why: str) -> str:
        """Wait for the command; ``stop`` once the sub-agent is stopped."""
        deadline = time.monotonic() + seconds
        while not command.wait(min(WATCH_S, max(0.0, deadline - time.monotonic()))):
            if self._run.cancel.is_set():
                return "stop"
            if time.monotonic() >= deadline:
                return "timeout"
        return "done"

    def wake(self) -> None:
        """A sub-agent runs no sub-agents of its own: nothing to wake."""


class SubAgentReporter(StatusReporter):
    """A sub-agent's usage, counted for it and rolled up into its parent's status, where its
    entry (`SubAgentRun.status_entry`) is rewritten with each model and tool call. The parent's
    tool calls do not count the sub-agent's."""

    def __init__(self, run: SubAgentRun, parent: StatusReporter | None) -> None:
        super().__init__(None, run.agent_id, "")
        self._run = run
        self._parent = parent
        self.budget = parent.budget if parent is not None else None  # the parent's pays

    def model_call(
        self,
        usage: Usage | None,
        subagent: Callable[[], SubAgentStatus] | None = None,
        model: str | None = None,
    ) -> None:
        with self._lock:
            self.status.requests += 1
            if usage is not None:
                self.status.turns += 1
                self.usage.add(usage)
        self._run.requests += 1
        if usage is not None:
            self._run.turns += 1
            self._run.usage.add(usage)
        if self._parent is not None:
            self._parent.model_call(usage, self._run.status_entry, model)

    def tool_call(self, name: str, tool_input: dict[str, Any] | None = None) -> None:
        self._run.tool_uses += 1
        self._run.activity = tool_activity(name, tool_input or {})[:200]
        if self._parent is not None:
            self._parent.subagent(self._run.status_entry)
