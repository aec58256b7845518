"""A teammate's status file: what it is doing and what it has cost, for `swarm status`/`watch`.

``teams/<team>/agents/<name>.status.json``, written atomically by the teammate whenever its
state changes or a model call returns, and only read by everyone else. Claude Code has no such
file; it is swarm's own, kept out of the way of Claude Code's files.

``subagents`` lists the sub-agents the member runs in its own process (its running ones and the last
`FINISHED_KEPT` finished ones, `keep_recent`), each with its own activity and usage; those tokens
are already counted in the member's own ``usage``. ``budget`` (a member with a limit only) gives its
limits and its spend, and whether it stopped over them. ``mcpServers`` lists its MCP servers (name,
state ``pending``/``connected``/``failed``/``closed``, the error, how many tools). ``costUsd`` is
what its model requests cost, each priced as it was made (its tier, its hour-long cache writes:
`protocols.member.prices`); ``contextTokens`` of ``contextWindow`` is how full its conversation is,
and ``compactions`` how often it was compacted; ``shells`` lists its commands running in the
background and the last ones that ended. A file without a key, or with an entry this version cannot
read, still parses (the entry is left out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from protocols.clock import now_iso
from protocols.fs import safefs
from protocols.fs.jsonio import Durability, write_json
from protocols.member.status_keys import LABEL_MARK, USAGE_KEYS, subagent_label, zero_usage
from protocols.paths import TeamPaths
from protocols.records.base import Record
from protocols.values import MemberState

__all__ = ["LABEL_MARK", "USAGE_KEYS", "subagent_label", "zero_usage"]  # and the models below

SUBAGENT_STATES = ("running", "completed", "failed", "killed")
FINISHED_KEPT = 5  # finished sub-agents a status file keeps (every running one is kept)


class SubAgentStatus(Record):
    """One sub-agent of a member: what it is, what it is doing, what it has used."""

    agentId: str
    agentType: str
    name: str | None = None  # the name it was given at launch, if any
    description: str = ""
    state: str = "running"  # one of SUBAGENT_STATES
    activity: str = ""  # its last tool call, in a few words
    model: str | None = None
    usage: dict[str, int] = Field(default_factory=zero_usage)
    toolUses: int = 0
    requests: int = 0  # model calls made
    turns: int = 0  # model calls that were answered
    color: str | None = None  # its definition's colour
    costUsd: float | None = None  # priced per request as it was made (None: not priced)
    startedAt: str = Field(default_factory=now_iso)
    endedAt: str | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    def label(self, member: str) -> str:
        """``alice \u203a Explore``, or ``alice \u203a <name>`` when it was given a name."""
        return subagent_label(member, self.name or self.agentType)


def keep_recent(
    entries: list[SubAgentStatus], finished: int = FINISHED_KEPT
) -> list[SubAgentStatus]:
    """Every running entry and the last `finished` finished ones (by when they ended), in the
    order they started."""
    done = sorted((e for e in entries if not e.running), key=lambda e: e.endedAt or "")
    kept = {id(e) for e in done[len(done) - finished :]} if finished > 0 else set()
    return [e for e in entries if e.running or id(e) in kept]


class McpServerStatus(Record):
    """One MCP server of a member; a running sub-agent's own (inline) server is named
    ``<agentType>@<agentId>/<server>`` and left out once the sub-agent ends."""

    name: str
    state: str = "pending"
    error: str | None = None
    tools: int = 0
    transport: str = "stdio"


class ShellStatus(Record):
    """A command of a member that runs, or ran, in the background (`teammate.tools.shells`):
    ``kind`` ``bash`` or ``monitor``; ``state`` running, completed, failed or killed."""

    id: str
    kind: str = "bash"
    command: str = ""
    description: str = ""
    owner: str = ""
    state: str = "running"
    exitCode: int | None = None
    startedAt: str = ""
    endedAt: str | None = None
    outputFile: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"


class BudgetStatus(Record):
    """A member's limits (`protocols.member.budget`) and what it has spent against them: USD priced
    per model call (`protocols.member.prices`) and tokens, its sub-agents' included. ``over``: it
    has stopped making model requests until a limit is raised (``reason`` says which)."""

    maxCostUsd: float | None = None
    maxTokens: int | None = None
    maxSeconds: float | None = None
    costUsd: float = 0.0
    tokens: int = 0
    seconds: float = 0.0  # how long it has run (its time limit counts this)
    over: bool = False
    reason: str | None = None


class AgentStatus(Record):
    name: str
    model: str
    state: MemberState = MemberState.STARTING
    activity: str = ""  # one line: what it is doing right now
    currentTask: str | None = None
    requests: int = 0  # model calls made
    turns: int = 0  # model calls that were answered
    toolCalls: int = 0
    usage: dict[str, int] = Field(default_factory=zero_usage)
    pid: int | None = None
    updatedAt: str = Field(default_factory=now_iso)
    subagents: list[SubAgentStatus] = Field(default_factory=list)
    mcpServers: list[McpServerStatus] = Field(default_factory=list)
    budget: BudgetStatus | None = None  # only for a member with a limit
    costUsd: float | None = None  # priced per request as it was made (None: not priced)
    contextTokens: int | None = None  # the size of its conversation now (tokens, about)
    contextWindow: int | None = None  # the window it is compacted in
    compactions: int = 0  # how often its conversation was compacted
    shells: list[ShellStatus] = Field(default_factory=list)  # its background commands

    @field_validator("budget", mode="before")
    @classmethod
    def _readable_budget(cls, value: Any) -> Any:
        """A budget this version cannot read is left out (not the whole file)."""
        try:
            return None if value is None else BudgetStatus.model_validate(value)
        except ValidationError:
            return None

    @field_validator("subagents", mode="before")
    @classmethod
    def _readable_subagents(cls, value: Any) -> Any:
        """Leave out an entry that does not parse (not the whole file); no list: none."""
        if not isinstance(value, list):
            return []
        kept = []
        for item in value:
            try:
                kept.append(SubAgentStatus.model_validate(item))
            except ValidationError:
                continue
        return kept

    @field_validator("shells", mode="before")
    @classmethod
    def _readable_shells(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return []
        kept = []
        for item in value:
            try:
                kept.append(ShellStatus.model_validate(item))
            except ValidationError:
                continue
        return kept

    @field_validator("mcpServers", mode="before")
    @classmethod
    def _readable_servers(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return []
        kept = []
        for item in value:
            try:
                kept.append(McpServerStatus.model_validate(item))
            except ValidationError:
                continue
        return kept


def write_status(
    paths: TeamPaths, status: AgentStatus, durability: Durability | None = "process"
) -> None:
    """Replace the status file (atomic; no fsync by default: it is rewritten often)."""
    status.updatedAt = now_iso()
    target = paths.agent_status(status.name)
    try:
        safefs.makedir_in(target.parent)
    except FileNotFoundError:
        return  # the team is gone (a Claude Code lead session ended): never make it again
    write_json(target, status.to_json_dict(), durability)


def read_status(paths: TeamPaths, name: str) -> AgentStatus | None:
    """The status file of `name`; None if there is none or it cannot be read."""
    return _read(paths.agent_status(name))


def _read(path: Path) -> AgentStatus | None:
    try:
        value: Any = json.loads(safefs.read_text(path))
    except (OSError, ValueError):  # a link (LinkRefused) is an OSError too
        return None
    return status_of(value)


def status_of(value: Any) -> AgentStatus | None:
    """A decoded status file as its model; None if it is not one."""
    try:
        return AgentStatus.from_json_dict(value)
    except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
