"""What the lead does by hand, one call each: add a task, list the board, ask a member to shut
down (sending a message is `swarm.team.sending`, which loads no models). The `swarm` commands and
the ``/task``, ``/tasks`` and ``/shutdown`` lines of `swarm lead`'s console call these same
functions, so both check and do the same things. Adding a task runs the TaskCreated hooks,
completing one the TaskCompleted hooks, of the directory the command runs in
(`teammate.hooks.project_hooks`); a hook that blocks refuses the change with its reason
(`HookBlocked`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso, now_ms
from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME, did_you_mean, validate_name
from protocols.paths import TeamPaths
from protocols.printable import printable, printable_line
from protocols.store.selection import open_store
from protocols.tasks.task import (
    CLAUDE,
    FAILED_BY,
    FOR,
    SHELL,
    TaskLike,
    TaskState,
    for_text,
    list_line,
)
from protocols.trace_context import telemetry_enabled, traced_metadata
from swarm.errors import SwarmError

FAILURE_LINES = 10  # of a failed task's output, shown by `swarm task show`

if TYPE_CHECKING:  # adding a task builds no model: `swarm task add` loads no pydantic
    from protocols.store.contract import MailboxContract
    from protocols.tasks.model import Task


def add_task(
    paths: TeamPaths,
    subject: str,
    description: str = "",
    command: str | None = None,
    blocked_by: Sequence[str] = (),
    worktree: str | None = None,
    owner: str | None = None,
    takers: Sequence[str] = (),
    cwd: Path | None = None,
    marks: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Add a task (blocked from the moment it exists when `blocked_by` names tasks); `command`
    is what a shell worker runs (in `cwd`, when given), `worktree` the git worktree it is
    worked in, `owner` the member it is assigned to (told with a ``task_assignment``),
    `takers` who may take it (``metadata.for``: `protocols.tasks.task.may_take`), `marks` more
    metadata (a scheduled task's firing: `swarm.schedule.firing`). Returns its file as
    written."""
    if worktree is not None:
        from teammate.agent.worktree import flatten_slug

        flatten_slug(worktree)  # refuse a bad name now, not when a teammate claims it
    if owner is not None:
        open_store(paths).team_file().require_entry(owner)  # a misspelt owner creates nothing
    for label in takers:
        validate_label(label)
    given = (("command", command), ("worktree", worktree), ("cwd", str(cwd) if cwd else None))
    metadata: dict[str, Any] = {k: v for k, v in given if v}
    if takers:
        metadata[FOR] = list(dict.fromkeys(takers))
    metadata.update(marks or {})
    from teammate.hooks import before_task_created, project_hooks  # not for `swarm send`

    hooks = project_hooks(Path.cwd(), paths.root)
    before_task_created(hooks, subject, description, LEAD_NAME, paths.team)
    board = open_store(paths).task_board(_lead_mailbox(paths) if owner else None)
    if telemetry_enabled():  # the task's trace starts here (docs/telemetry.md)
        from teammate.telemetry import tracing

        attributes = {"swarm.team": paths.team, "swarm.task.subject": subject}
        with tracing.span("swarm task add", attributes=attributes, service="swarm") as span:
            traced = traced_metadata(metadata, now_ms())
            created = board.create_file(
                subject, description, metadata=traced, blocked_by=blocked_by, owner=owner
            )
            span.set_attribute("swarm.task.id", str(created["id"]))
        tracing.flush()
        return created
    return board.create_file(
        subject, description, metadata=metadata or None, blocked_by=blocked_by, owner=owner
    )


def validate_label(label: str) -> None:
    """A ``for`` label is a kind (shell, claude, scripted), a member name or an agent type:
    something a name could be (`protocols.names.validate_name`)."""
    try:
        validate_name(label, "member or agent type")
    except ProtocolsError as exc:
        raise SwarmError(
            f"--for {label!r}: {exc}; give shell, claude, a member's name or an agent type"
        ) from None


def unknown_takers(paths: TeamPaths, labels: Sequence[str]) -> list[str]:
    """A warning for each label that names no kind, no member and no agent type the team has
    now (the task waits until one joins), with a did-you-mean."""
    if not labels:
        return []  # (no team model loaded: `swarm task add` loads no pydantic)
    known = {SHELL, CLAUDE, "scripted"}
    for entry in open_store(paths).team_file().load().members:
        known.add(entry.name)
        if entry.agentType:
            known.add(entry.agentType)
    return [
        f"no member or agent type {label!r} in team {paths.team!r} yet"
        f"{did_you_mean(label, sorted(known))}: the task waits until one joins"
        for label in labels
        if label not in known
    ]


def update_task(paths: TeamPaths, task_id: str, changes: dict[str, Any]) -> Task | None:
    """Change a task as the lead (None: it was deleted). Completing it runs the TaskCompleted
    hooks first: one that blocks leaves the task as it was and raises `HookBlocked`."""
    board = open_store(paths).task_board(_lead_mailbox(paths))
    current = board.require(task_id)
    if changes.get("status") == "completed" and current.status != "completed":
        from teammate.hooks import before_task_completed, project_hooks

        before_task_completed(project_hooks(Path.cwd(), paths.root), current, LEAD_NAME, paths.team)
    return board.update(task_id, actor=LEAD_NAME, **changes)


def task_lines(paths: TeamPaths, tasks: Sequence[TaskLike] | None = None) -> list[str]:
    """The board (or `tasks` of it) in Claude Code's TaskList format, one escaped line per
    task."""
    listed = open_store(paths).task_board().list() if tasks is None else tasks
    return [printable_line(list_line(task)) for task in listed]


def show_lines(task: Task, state: TaskState) -> list[str]:
    """`swarm task show`: the task, escaped, with its state in the one vocabulary (a failed
    task says why, and its output's last lines), who may take it, where its command runs."""
    meta = dict(task.metadata or {})
    status = f"{state}: {task.failure}" if task.failed else str(state)
    lines = [
        f"Task #{printable_line(task.id)}: {printable_line(task.subject)}",
        f"Status: {printable_line(status)}",
        f"Description: {_block(task.description)}",
    ]
    if task.owner:
        lines.append(f"Owner: {printable_line(task.owner)}")
    if task.blockedBy:
        lines.append(f"Blocked by: {', '.join('#' + b for b in task.blockedBy)}")
    if who := for_text(meta):
        lines.append(f"Who may take it: {printable_line(who.removeprefix('for '))}")
    if meta.get("command"):
        lines.append(f"Command: {_block(str(meta['command']))}")
    if meta.get("cwd"):
        lines.append(f"Runs in: {printable_line(str(meta['cwd']))}")
    if failed := failed_by_of(task):
        lines.append(f"Failed by: {printable_line(', '.join(failed))}")
    tail = meta.get("outputTail") if task.failed else None
    if isinstance(tail, str) and tail.strip():
        lines.append("Output (last lines):")
        lines += [
            "  " + printable_line(line) for line in tail.strip().splitlines()[-FAILURE_LINES:]
        ]
    shown = {"command", "cwd", FOR, FAILED_BY, "outputTail"}
    rest = {k: v for k, v in meta.items() if k not in shown}
    if rest:
        lines.append(f"Metadata: {printable_line(json.dumps(rest, ensure_ascii=False))}")
    return lines


def failed_by_of(task: TaskLike | Task) -> list[str]:
    """The members that failed `task` (``metadata.failedBy``)."""
    given = (getattr(task, "metadata", None) or {}).get(FAILED_BY)
    return [n for n in given if isinstance(n, str)] if isinstance(given, list) else []


def _block(text: str) -> str:
    """Multi-line text, escaped, its further lines indented (none passes for a field)."""
    return printable(text).replace("\n", "\n  ")


def send_shutdown_request(paths: TeamPaths, name: str, reason: str | None = None) -> str:
    """Ask teammate `name` to shut down (the answer comes to the lead's inbox); the request id."""
    if name == LEAD_NAME:
        raise SwarmError(f"{name!r} is the lead, not a teammate, in team {paths.team!r}")
    open_store(paths).team_file().require_entry(name)  # an unknown name: did you mean...
    from protocols.messages.correlation import shutdown_request_id
    from protocols.messages.models import ShutdownRequest

    request = ShutdownRequest(
        requestId=shutdown_request_id(name), from_=LEAD_NAME, reason=reason, timestamp=now_iso()
    )
    _lead_mailbox(paths).send(name, request, sender=LEAD_NAME)
    return request.requestId


def _lead_mailbox(paths: TeamPaths) -> MailboxContract:
    """The lead's mailbox, signing when the lead has a key (loaded only when a message goes)."""
    from swarm.team.signatures import lead_mailbox

    return lead_mailbox(paths)
