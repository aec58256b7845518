"""Keeps this teammate's status file (`protocols.member.status`) up to date: state, activity, usage,
its sub-agents, and its budget (every model call's usage is added to it, `teammate.budget`).

Thread-safe: a teammate's background sub-agents report their model calls (usage rolls up into
the teammate's totals) and tool calls from their own threads. A sub-agent's entry is built by a
callable under the lock, so the last write always holds its latest state (a TaskStop from the
parent's thread is never overwritten by the sub-agent's own late report)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from protocols.errors import ProtocolsError
from protocols.member.prices import PriceTable, default_prices
from protocols.member.status import (
    AgentStatus,
    McpServerStatus,
    ShellStatus,
    SubAgentStatus,
    keep_recent,
    write_status,
)
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import MemberState
from teammate.api.model import Usage
from teammate.budget import Budget


class StatusReporter:
    def __init__(self, paths: TeamPaths | None, name: str, model: str) -> None:
        self.paths = paths
        self.status = AgentStatus(name=name, model=model, pid=os.getpid())
        self.usage = Usage()
        self.budget: Budget | None = None  # an agent with a limit (`teammate.budget`)
        self.prices: PriceTable | None = None  # the budget's, or the catalogue's when first used
        self._lock = threading.RLock()
        self._written: dict[str, Any] | None = None  # the last status written, but its time

    def attach_budget(self, budget: Budget) -> None:
        """Keep `budget`'s limits and spend in the status file (and count each call in it)."""
        self.budget = budget
        self.prices = budget.prices
        budget.on_change = self._budget_changed

    def _budget_changed(self) -> None:
        with self._lock:
            self._write()

    def set(
        self,
        state: MemberState | None = None,
        activity: str | None = None,
        task: str | None = None,
        clear_task: bool = False,
        write: bool = True,
    ) -> None:
        """Change the status and write the file; with `write` false the change is only made in
        memory, for the next write (a `set()` with no change writes it: a turn's bookkeeping
        after its model request, `teammate.runtime`)."""
        with self._lock:
            self._set(state, activity, task, clear_task, write)

    def _set(
        self,
        state: MemberState | None,
        activity: str | None,
        task: str | None,
        clear_task: bool,
        write: bool = True,
    ) -> None:
        if state is not None:
            self.status.state = state
        if activity is not None:
            self.status.activity = activity[:200]
        if task is not None or clear_task:
            self.status.currentTask = task
        if write:
            self._write()

    def model_call(
        self,
        usage: Usage | None,
        subagent: Callable[[], SubAgentStatus] | None = None,
        model: str | None = None,
    ) -> None:
        """A model request was made (usage None: it failed) to `model`; `subagent` gives the
        entry of the sub-agent that made it (its usage counts here too: one write for both)."""
        with self._lock:
            self.status.requests += 1
            if usage is not None:
                self.status.turns += 1
                self.usage.add(usage)
                self.status.usage = self.usage.to_value()
                cost = self.cost_of(model or self.status.model, usage)
                if cost is not None:
                    self.status.costUsd = round((self.status.costUsd or 0.0) + cost, 6)
                if self.budget is not None:
                    self.budget.add(model, usage)
            if subagent is not None:
                self._put(subagent())
            self._write()

    def cost_of(self, model: str | None, usage: Usage) -> float | None:
        """USD of one request's `usage` on `model` (None: it has no price)."""
        if self.prices is None:
            self.prices = PriceTable(default_prices(), {})
        return self.prices.cost(model, usage.to_value())

    def shells(self, views: list[dict[str, Any]]) -> None:
        """Its background commands as they are now (`teammate.tools.shells.Shells.views`)."""
        with self._lock:
            self.status.shells = [ShellStatus.model_validate(v) for v in views]
            self._write()

    def context(self, tokens: int, window: int, compactions: int, write: bool = True) -> None:
        """How full the conversation is now, and how often it was compacted (`write` false:
        kept for the next write, as after each reply, whose tool call or end writes next)."""
        with self._lock:
            self.status.contextTokens = tokens
            self.status.contextWindow = window
            self.status.compactions = compactions
            if write:
                self._write()

    def subagent(self, entry: Callable[[], SubAgentStatus]) -> None:
        """Record a sub-agent's entry as `entry()` says now (started, a tool call, ended)."""
        with self._lock:
            self._put(entry())
            self._write()

    def _put(self, entry: SubAgentStatus) -> None:
        """`entry` in place of the one with its id (else last), then only the recent ones."""
        listed = list(self.status.subagents)
        at = next((i for i, e in enumerate(listed) if e.agentId == entry.agentId), None)
        if at is None:
            listed.append(entry)
        else:
            listed[at] = entry
        self.status.subagents = keep_recent(listed)

    def mcp_servers(self, servers: list[dict[str, Any]]) -> None:
        """Record the MCP servers' states (`teammate.mcp.client.ServerView.to_status`)."""
        with self._lock:
            self.status.mcpServers = [McpServerStatus.model_validate(s) for s in servers]
            self._write()

    def tool_call(self, name: str, tool_input: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.status.toolCalls += 1
            self.set(activity=f"running {tool_activity(name, tool_input or {})}")

    def _write(self) -> None:
        if self.budget is not None:
            self.status.budget = self.budget.status()
        # the same status again but for its time (an idle teammate answering a broadcast: idle
        # before and after) is not written: the file says since when it has been so, and each
        # write is a new file (200 teammates answering at once: 200 more)
        if self.paths is None:
            return
        shown = self.status.to_json_dict()
        shown.pop("updatedAt", None)
        if shown == self._written:
            return
        # the status file is for people watching; never stop work over it
        with contextlib.suppress(OSError, ProtocolsError):
            if self.paths.store is None:
                write_status(self.paths, self.status)
            else:  # PostgreSQL (`protocols.store.selection`)
                open_store(self.paths).write_status(self.status)
            self._written = shown


def tool_activity(name: str, tool_input: dict[str, Any]) -> str:
    """A tool call in a few words for the status line: ``Bash: make test``, ``Write
    schema.sql``, ``SendMessage to team-lead``, ``TaskUpdate #4``; else the tool's name."""
    if name == "Bash" and tool_input.get("command"):
        return f"Bash: {' '.join(str(tool_input['command']).split())}"
    if name == "SendMessage" and tool_input.get("to"):
        return f"SendMessage to {tool_input['to']}"
    if tool_input.get("taskId"):
        return f"{name} #{tool_input['taskId']}"
    target = next(
        (tool_input[k] for k in ("file_path", "pattern", "path") if tool_input.get(k)), ""
    )
    return f"{name} {target}" if target else name
