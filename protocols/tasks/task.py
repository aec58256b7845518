"""One task of the board (spec section 5): the names of task files, the outcome of a claim, and
Claude Code's texts of a task. The `Task` model itself is `protocols.tasks.model`, loaded by
whoever reads tasks: a ``swarm task add`` writes one without loading pydantic.

Key order follows Claude Code: ``id, subject, description, activeForm?, status, blocks,
blockedBy, metadata?`` at creation; ``owner`` is added later, so it goes at the end.
Anything swarm needs to keep on a task goes inside ``metadata`` (Claude Code drops unknown keys).

Ids are decimal strings (``"7"``), in ``id``, ``blocks`` and ``blockedBy`` alike: a task file
holding anything else (``"../../x"``) is invalid and skipped, as Claude Code skips invalid files,
so no id read from a file can name another path.

A task whose worker failed (or was denied) carries ``metadata.failed`` = ``{reason, by, at}``:
it stays unfinished, so what it blocks stays blocked, but no idle worker claims it again and it
keeps no worker busy, until someone retries it (`TaskBoard.retry`). ``metadata.failedBy`` lists
every member that failed it: none of them takes it again by itself after a retry (assigning it
to one by name still gives it to that one).

Who may take a task (`may_take`): ``metadata.for`` lists labels, any of which a member must
answer to: ``shell`` (a shell worker), ``claude`` (a teammate that thinks with a model,
scripted or not), its name, or its agent type. Without ``for``, a task with a ``command`` is for
shell workers (the command is their work) and any other task for anyone.

A task's state, one word everywhere (`TaskState`, `state_of`): ``pending`` (waiting to be
taken), ``blocked`` (pending, waiting for other tasks), ``in_progress``, ``failed`` (waiting for
a retry) and ``completed``. The file keeps Claude Code's three statuses; ``blocked`` and
``failed`` are read from the dependencies and ``metadata.failed``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.tasks.model import Task

STATUSES: tuple[str, ...] = tuple(TaskStatus)
TASK_FILE = re.compile(r"^(\d{1,18})\.json$")
ID_PATTERN = r"^[0-9]{1,18}$"
FAILED = "failed"  # the metadata key of a failed task
FAILED_BY = "failedBy"  # the metadata key listing the members that failed the task
FOR = "for"  # the metadata key listing who may take the task (`may_take`)
SHELL = "shell"  # the label of a shell worker
CLAUDE = "claude"  # the label of a teammate that thinks with a model (Claude, or scripted)
LABEL_KINDS = (SHELL, CLAUDE)


class TaskState(StrEnum):
    """A task's state as a person reads it (module doc): the file's status, and whether it
    waits for other tasks or for a retry."""

    PENDING = "pending"
    BLOCKED = "blocked"
    IN_PROGRESS = "in_progress"
    FAILED = "failed"
    COMPLETED = "completed"


def state_of(status: str, failed: bool, waiting: bool = False) -> TaskState:
    """The state of a task with this status, failed or not, waiting for blockers or not."""
    if status == TaskStatus.COMPLETED:
        return TaskState.COMPLETED
    if failed:
        return TaskState.FAILED
    if status == TaskStatus.IN_PROGRESS:
        return TaskState.IN_PROGRESS
    return TaskState.BLOCKED if waiting else TaskState.PENDING


def states(tasks: Iterable[TaskLike]) -> dict[str, TaskState]:
    """The state of each of `tasks` (a whole board: a blocker not among them counts as done)."""
    listed = list(tasks)
    unfinished = {t.id for t in listed if t.unfinished}
    return {
        t.id: state_of(t.status, t.failed, any(b in unfinished for b in t.blockedBy))
        for t in listed
    }


def takers(metadata: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """Who may take a task with this metadata: the labels of ``for`` (a label or a list of
    them), ``("shell",)`` for a task with a command and no ``for``, None for anyone."""
    meta = metadata or {}
    given = meta.get(FOR)
    if isinstance(given, str) and given:
        return (given,)
    if isinstance(given, list) and given:
        return tuple(str(label) for label in given if isinstance(label, str) and label)
    if meta.get("command"):
        return (SHELL,)
    return None


def may_take(metadata: Mapping[str, Any] | None, name: str, labels: Collection[str]) -> bool:
    """Whether member `name`, answering to `labels` (its kind, its agent type), may take a task
    with this metadata by itself: it is one the task is for, and it has not failed it before."""
    meta = metadata or {}
    failed_by = meta.get(FAILED_BY)
    if isinstance(failed_by, list) and name in failed_by:
        return False
    wanted = takers(meta)
    return wanted is None or name in wanted or any(label in wanted for label in labels)


def failed_by(metadata: Mapping[str, Any] | None, name: str) -> list[str]:
    """``failedBy`` once `name` has failed the task too (each name once, in order)."""
    before = (metadata or {}).get(FAILED_BY)
    names = [n for n in before if isinstance(n, str)] if isinstance(before, list) else []
    return names if name in names else [*names, name]


def for_text(metadata: Mapping[str, Any] | None) -> str:
    """``for shell`` / ``for alice, reviewer``: who may take it (empty: anyone)."""
    wanted = takers(metadata)
    return f"for {', '.join(wanted)}" if wanted else ""


class ClaimFailure(StrEnum):
    TASK_NOT_FOUND = "task_not_found"
    ALREADY_CLAIMED = "already_claimed"
    ALREADY_RESOLVED = "already_resolved"
    BLOCKED = "blocked"
    AGENT_BUSY = "agent_busy"
    NOT_FOR_AGENT = "not_for_agent"  # the task is for others, or the agent failed it before


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
    """What a view reads of a task: a `Task` model, or a `protocols.tasks.summary.TaskRow`."""

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
    """Claude Code's TaskGet text (a failed task's status: ``failed: <why>``)."""
    status = f"{FAILED}: {task.failure}" if task.failed else task.status
    lines = [f"Task #{task.id}: {task.subject}", f"Status: {status}"]
    lines.append(f"Description: {task.description}")
    if task.blockedBy:
        lines.append(f"Blocked by: {', '.join('#' + b for b in task.blockedBy)}")
    if task.blocks:
        lines.append(f"Blocks: {', '.join('#' + b for b in task.blocks)}")
    return "\n".join(lines)
