"""The MCP servers of one agent (a teammate, one of its sub-agents, the lead agent): which it
sees, which it owns, which it needs, and how their troubles are reported.

An agent sees every configured (shared) server's tools, narrowed by its definition's ``tools``
list when it has one, and the tools of the servers its definition defines inline, which it owns:
they start with it and are closed (and dropped from the status file) when it ends
(`AgentServers.close`), and start again if it is resumed. Its
``requiredMcpServers`` must be connected before its first model request: `require` waits up to
30 s for them (only them: the others keep connecting meanwhile) and says what is missing.

`Reporting` is the one listener per process: each change goes to the status file and the
transcript, and a failure to the lead, once per server.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from teammate.config.definitions import AgentDefinition
from teammate.mcp.client import McpManager, ServerView
from teammate.mcp.config import ServerConfig, definition_servers
from teammate.mcp.tools import McpToolbox

REQUIRED_WAIT_S = 30.0


@dataclass
class AgentServers:
    manager: McpManager
    toolbox: McpToolbox
    owned: list[ServerConfig] = field(default_factory=list)
    required: dict[str, str] = field(default_factory=dict)  # name -> key in the manager

    def require(self, timeout: float = REQUIRED_WAIT_S) -> str | None:
        """Wait for the required servers; None when all are connected, else why not."""
        if not self.required:
            return None
        problems = self.manager.wait(self.required.values(), timeout)
        missing = [f"{problem}" for problem in problems.values() if problem]
        if not missing:
            return None
        return "required MCP server unavailable: " + "; ".join(missing)

    def open(self) -> None:
        """Start the servers this agent owns again (a resumed sub-agent; no-op if running)."""
        self.manager.start(self.owned)

    def close(self) -> None:
        """Stop the servers this agent owns (shared ones stay for the others)."""
        if self.owned:
            self.manager.stop([s.key for s in self.owned])


def servers_for(
    manager: McpManager,
    configured: Mapping[str, ServerConfig],
    agent: AgentDefinition,
    owner: str | None,
    listed: Iterable[str] | None,
) -> AgentServers:
    """Start the servers `agent` defines inline (owned by `owner`; None: the process's main
    agent, whose inline servers are as shared as the configured ones) and say which it sees."""
    origin = f"{agent.source}: agent {agent.name}"
    _, owned = definition_servers(agent.mcp_servers, configured, owner or "", origin)
    if owner is None:
        owned = [dataclasses.replace(s, owner=None) for s in owned]
    manager.start(owned)
    keys = {s.name: s.key for s in owned}
    required = {name: keys.get(name, name) for name in agent.required_mcp_servers}
    toolbox = McpToolbox(
        manager,
        listed=None if agent.tools is None else listed,
        owned=[s.key for s in owned if s.owner is not None],
    )
    return AgentServers(manager, toolbox, owned if owner is not None else [], required)


class Reporting:
    """Where an MCP server's state goes: `status` (every server's entry), `record` (one line of
    the transcript), `say` (the log) and `tell_lead` (a failure, once per server)."""

    def __init__(
        self,
        manager: McpManager,
        status: Callable[[list[dict[str, object]]], None] | None,
        record: Callable[[ServerView], None] | None,
        say: Callable[[str], None],
        tell_lead: Callable[[str], None] | None,
    ) -> None:
        self.manager = manager
        self.status = status
        self.record = record
        self.say = say
        self.tell_lead = tell_lead
        self._told: set[str] = set()
        self._lock = threading.Lock()
        manager.listen(self)

    def __call__(self, view: ServerView) -> None:
        if self.status is not None:
            self.status([v.to_status() for v in self.manager.views()])
        if self.record is not None:
            self.record(view)
        if view.state == "connected":
            self.say(f"MCP server {view.key} connected ({len(view.tools)} tools)")
        if view.state != "failed":
            return
        text = f"MCP server {view.key} failed: {view.error}; its tools are unavailable"
        self.say(text)
        with self._lock:
            first = view.key not in self._told
            self._told.add(view.key)
        if first and self.tell_lead is not None:
            self.tell_lead(text)
