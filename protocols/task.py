"""One task of the board (spec section 5): the `Task` record and the outcome of a claim.

Key order follows Claude Code: ``id, subject, description, activeForm?, status, blocks,
blockedBy, metadata?`` at creation; ``owner`` is added later, so it goes at the end.
Anything swarm needs to keep on a task goes inside ``metadata`` (Claude Code drops unknown keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field

from protocols.records import Record

TaskStatus = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed")
TASK_FILE = re.compile(r"^(\d+)\.json$")


class Task(Record):
    """One task file. Frozen: change a task with `updated` (or `TaskBoard.update`)."""

    model_config = ConfigDict(frozen=True)

    id: str
    subject: str
    description: str
    activeForm: str | None = None
    status: TaskStatus = "pending"
    blocks: list[str] = Field(default_factory=list)
    blockedBy: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    owner: str | None = None  # added after creation, so it goes at the end

    @property
    def internal(self) -> bool:
        return bool((self.metadata or {}).get("_internal"))

    @property
    def unfinished(self) -> bool:
        return self.status != "completed"


class ClaimFailure(StrEnum):
    TASK_NOT_FOUND = "task_not_found"
    ALREADY_CLAIMED = "already_claimed"
    ALREADY_RESOLVED = "already_resolved"
    BLOCKED = "blocked"
    AGENT_BUSY = "agent_busy"


@dataclass
class ClaimResult:
    success: bool
    task: Task | None = None
    reason: ClaimFailure | None = None
    blocked_by: list[str] = field(default_factory=list)
    busy_with: list[str] = field(default_factory=list)


def list_line(task: Task) -> str:
    """Claude Code's TaskList line: ``#<id> [<status>] <subject>[ (<owner>)][ [blocked by #a]]``."""
    owner = f" ({task.owner})" if task.owner else ""
    blockers = ", ".join("#" + b for b in task.blockedBy)
    blocked = f" [blocked by {blockers}]" if blockers else ""
    return f"#{task.id} [{task.status}] {task.subject}{owner}{blocked}"


def describe(task: Task) -> str:
    """Claude Code's TaskGet text."""
    lines = [f"Task #{task.id}: {task.subject}", f"Status: {task.status}"]
    lines.append(f"Description: {task.description}")
    if task.blockedBy:
        lines.append(f"Blocked by: {', '.join('#' + b for b in task.blockedBy)}")
    if task.blocks:
        lines.append(f"Blocks: {', '.join('#' + b for b in task.blocks)}")
    return "\n".join(lines)
