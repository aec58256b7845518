"""One task of the board (spec section 5): the names of task files, the outcome of a claim, and
Claude Code's texts of a task. The `Task` model itself is `protocols.task_model`, loaded by
whoever reads tasks: a ``swarm task add`` writes one without loading pydantic.

Key order follows Claude Code: ``id, subject, description, activeForm?, status, blocks,
blockedBy, metadata?`` at creation; ``owner`` is added later, so it goes at the end.
Anything swarm needs to keep on a task goes inside ``metadata`` (Claude Code drops unknown keys).

Ids are decimal strings (``"7"``), in ``id``, ``blocks`` and ``blockedBy`` alike: a task file
holding anything else (``"../../x"``) is invalid and skipped, as Claude Code skips invalid files,
so no id read from a file can name another path.

A task whose worker failed (or was denied) carries ``metadata.failed`` = ``{reason, by, at}``:
it stays unfinished, so what it blocks stays blocked, but no idle worker claims it again and it
keeps no worker busy, until someone retries it (`TaskBoard.retry`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.task_model import Task

STATUSES: tuple[str, ...] = tuple(TaskStatus)
TASK_FILE = re.compile(r"^(\d{1,18})\.json$")
ID_PATTERN = r"^[0-9]{1,18}$"
FAILED = "failed"  # the metadata key of a failed task


class ClaimFailure(StrEnum):
    TASK_NOT_FOUND = "task_not_found"
    ALREADY_CLAIMED = "already_claimed"
    ALREADY_RESOLVED = "already_resolved"
    BLOCKED = "blocked"
    AGENT_BUSY = "agent_busy"


class ClaimResult(NamedTuple):
    success: bool
    task: Task | None = None
    reason: ClaimFailure | None = None
    blocked_by: Sequence[str] = ()
    busy_with: Sequence[str] = ()
    # the claim's fencing token on a store that fences (PostgreSQL): changes by the claimer pass
    # it back, and are refused once the task was claimed again; None on the file board
    epoch: int | None = None


class TaskLike(Protocol):
    """What a view reads of a task: a `Task` model, or a `protocols.task_summary.TaskRow`."""

    @property
    def id(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def owner(self) -> str | None: ...
    @property
    def blockedBy(self) -> list[str]: ...
    @property
    def internal(self) -> bool: ...
    @property
    def unfinished(self) -> bool: ...
    @property
    def failed(self) -> bool: ...
    @property
    def failure(self) -> str: ...
    def to_json_dict(self) -> dict[str, Any]: ...


def is_internal(metadata: Mapping[str, Any] | None) -> bool:
    """``metadata._internal``: a task hidden from listings."""
    return bool((metadata or {}).get("_internal"))


def failure_of(status: str, metadata: Mapping[str, Any] | None) -> str:
    """Why a task with this status and metadata failed; empty when it did not (an unfinished
    task whose ``metadata.failed`` is set failed)."""
    mark = (metadata or {}).get(FAILED) if status != TaskStatus.COMPLETED else None
    if not mark:
        return ""
    if isinstance(mark, dict):
        return str(mark.get("reason") or "failed")
    return str(mark)


def list_line(task: TaskLike) -> str:
    """Claude Code's TaskList line: ``#<id> [<status>] <subject>[ (<owner>)][ [blocked by #a]]``;
    a failed task shows ``[failed]`` for its status."""
    owner = f" ({task.owner})" if task.owner else ""
    blocked_by = task.blockedBy  # (most have none: `swarm status` lists 10,000 tasks)
    blocked = f" [blocked by {', '.join('#' + b for b in blocked_by)}]" if blocked_by else ""
    status = FAILED if task.failed else task.status
    return f"#{task.id} [{status}] {task.subject}{owner}{blocked}"


def describe(task: Task) -> str:
    """Claude Code's TaskGet text."""
    status = f"{task.status} (failed: {task.failure})" if task.failed else task.status
    lines = [f"Task #{task.id}: {task.subject}", f"Status: {status}"]
    lines.append(f"Description: {task.description}")
    if task.blockedBy:
        lines.append(f"Blocked by: {', '.join('#' + b for b in task.blockedBy)}")
    if task.blocks:
        lines.append(f"Blocks: {', '.join('#' + b for b in task.blocks)}")
    return "\n".join(lines)
