"""A sub-agent's run (`SubAgentRun`: what it is, how far it got, what it cost) and what is
said about it: the text of its launch, its synchronous result and its notification, and the
ids and permission modes sub-agents get (`teammate.agent.subagents` runs them)."""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from protocols.clock import now_iso
from protocols.member.status import SubAgentStatus
from protocols.values import PermissionMode
from teammate.agent.loop import AgentLoop
from teammate.agent.worktree import Worktree
from teammate.api.model import Usage
from teammate.config.definitions import AgentDefinition

if TYPE_CHECKING:
    from teammate.mcp.agent import AgentServers

MAX_TURNS_MARKER = "[max turns reached]"
NO_VERDICT = "[no VERDICT line: the verifier did not decide; treat this as not verified]"
SUBAGENT_DEFAULT_MODE = PermissionMode.ACCEPT_EDITS
# how far each mode lets an agent go: a sub-agent gets the narrower of its own and its parent's
_REACH = {"plan": 0, "dontAsk": 1, "default": 2, "auto": 2, "acceptEdits": 3}
_REACH_MAX = 4  # bypassPermissions


def narrower(mode: str, parent: str) -> str:
    """The mode that allows less. ``bubble`` is the parent's own mode, asking the parent's
    approver (where every swarm sub-agent's asks go anyway), as fork children do."""
    if mode == "bubble":
        return parent
    reach = _REACH.get(mode, _REACH_MAX)
    return mode if reach <= _REACH.get(parent, _REACH_MAX) else parent


AGENT_ID = re.compile(r"a[0-9a-f]{16}")  # what `new_agent_id` makes, and nothing else


def new_agent_id() -> str:
    return "a" + secrets.token_hex(8)


@dataclass
class SubAgentRun:
    agent_id: str
    agent_type: str
    description: str
    prompt: str
    name: str | None
    tool_use_id: str
    output_file: Path | None
    loop: AgentLoop
    background: bool
    status: str = "running"  # running | completed | failed | killed
    result: str = ""
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    notified: bool = True  # a foreground run is never notified
    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    pending: list[str] = field(default_factory=list)  # messages for its next loop boundary
    usage: Usage = field(default_factory=Usage)
    tool_uses: int = 0
    generation: int = 0  # which play of it this is (a resume is the next)
    thread: threading.Thread | None = None
    worktree: Worktree | None = None  # its own git worktree (isolation: worktree)
    servers: AgentServers | None = None  # its MCP servers (inline ones closed when it ends)
    color: str | None = None  # its definition's colour
    activity: str = ""  # its last tool call, in a few words
    requests: int = 0  # model calls made
    turns: int = 0  # model calls answered
    started_at: str = field(default_factory=now_iso)
    ended_at: str | None = None

    def status_entry(self) -> SubAgentStatus:
        """Its entry in the parent's status file, as it stands now."""
        return SubAgentStatus(
            agentId=self.agent_id,
            agentType=self.agent_type,
            name=self.name,
            description=self.description[:200],
            state=self.status,
            activity=self.activity,
            model=getattr(self.loop.model, "name", None) if self.loop is not None else None,
            usage=self.usage.to_value(),
            toolUses=self.tool_uses,
            requests=self.requests,
            turns=self.turns,
            color=self.color,
            startedAt=self.started_at,
            endedAt=self.ended_at,
        )

    @property
    def duration_ms(self) -> int:
        return int(((self.ended or time.monotonic()) - self.started) * 1000)

    @property
    def total_tokens(self) -> int:
        return self.usage.prompt_tokens + self.usage.output_tokens

    def usage_text(self) -> str:
        return (
            f"total_tokens: {self.total_tokens}\ntool_uses: {self.tool_uses}\n"
            f"duration_ms: {self.duration_ms}"
        )


def subagent_prompt(definition: AgentDefinition, cwd: Path, context: str = "") -> str:
    return (
        f"{definition.system_prompt.strip()}\n\n"
        "You are a sub-agent: the agent that started you reads your final answer, nobody "
        "else does. Finish the task you were given, then answer with what you found or did, "
        "concisely, with file paths where they matter.\n"
        f"Working directory: {cwd}" + (f"\n\n{context}" if context else "")
    )


def launched_text(run: SubAgentRun) -> str:
    return (
        "Async agent launched successfully.\n"
        f"agentId: {run.agent_id} (use SendMessage with to: '{run.agent_id}' to give it more "
        "to do)\n"
        "The agent works in the background; you will be told when it finishes (a "
        "<task-notification>). Do not guess its result meanwhile: go on with other work.\n"
        + (
            f"output_file: {run.output_file}\n"
            "To check on it before then, Read the output file or call TaskOutput."
            if run.output_file
            else "Call TaskOutput to check on it before then."
        )
        + (
            f"\nIt works in its own git worktree: {run.worktree.path} (branch "
            f"{run.worktree.branch}); kept if it changes anything, removed if not."
            if run.worktree is not None
            else ""
        )
    )


def completed_text(run: SubAgentRun) -> str:
    head = run.result if run.status == "completed" else f"[{run.status}] {run.result}"
    return (
        f"{head}\n\nagentId: {run.agent_id} (use SendMessage with to: '{run.agent_id}' to "
        f"continue this agent)\n<usage>{run.usage_text()}</usage>"
    )


def notification_text(run: SubAgentRun) -> str:
    verb = {"completed": "completed", "failed": "failed", "killed": "was stopped"}[run.status]
    return (
        "<task-notification>\n"
        f"<task-id>{run.agent_id}</task-id>\n"
        f"<tool-use-id>{run.tool_use_id}</tool-use-id>\n"
        f"<output-file>{run.output_file or ''}</output-file>\n"
        f"<status>{run.status}</status>\n"
        f'<summary>Agent "{run.description}" {verb}</summary>\n'
        f"<result>{run.result}</result>\n"
        f"<usage>{run.usage_text()}</usage>\n"
        "</task-notification>"
    )
