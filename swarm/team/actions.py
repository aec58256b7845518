"""What the lead does by hand, one call each: add a task, list the board, ask a member to shut
down (sending a message is `swarm.team.sending`, which loads no models). The `swarm` commands and
the ``/task``, ``/tasks`` and ``/shutdown`` lines of `swarm lead`'s console call these same
functions, so both check and do the same things. Adding a task runs the TaskCreated hooks,
completing one the TaskCompleted hooks, of the directory the command runs in
(`teammate.agent.hooks.project_hooks`); a hook that blocks refuses the change with its reason
(`HookBlocked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store import open_store
from protocols.task import list_line
from swarm.errors import SwarmError

if TYPE_CHECKING:  # adding a task builds no model: `swarm task add` loads no pydantic
    from protocols.store import AnyMailbox
    from protocols.task_model import Task


def add_task(
    paths: TeamPaths,
    subject: str,
    description: str = "",
    command: str | None = None,
    blocked_by: Sequence[str] = (),
    worktree: str | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """Add a task (blocked from the moment it exists when `blocked_by` names tasks); `command`
    is what a shell worker runs, `worktree` the git worktree it is worked in, `owner` the
    member it is for (told with a ``task_assignment``). Returns its file as written."""
    if worktree is not None:
        from teammate.agent.worktree import flatten_slug

        flatten_slug(worktree)  # refuse a bad name now, not when a teammate claims it
    if owner is not None:
        open_store(paths).team_file().require_entry(owner)  # a misspelt owner creates nothing
    metadata = {k: v for k, v in (("command", command), ("worktree", worktree)) if v}
    from teammate.agent.hooks import before_task_created, project_hooks  # not for `swarm send`

    hooks = project_hooks(Path.cwd(), paths.root)
    before_task_created(hooks, subject, description, LEAD_NAME, paths.team)
    board = open_store(paths).task_board(_lead_mailbox(paths) if owner else None)
    return board.create_file(
        subject, description, metadata=metadata or None, blocked_by=blocked_by, owner=owner
    )


def update_task(paths: TeamPaths, task_id: str, changes: dict[str, Any]) -> Task | None:
    """Change a task as the lead (None: it was deleted). Completing it runs the TaskCompleted
    hooks first: one that blocks leaves the task as it was and raises `HookBlocked`."""
    board = open_store(paths).task_board(_lead_mailbox(paths))
    current = board.require(task_id)
    if changes.get("status") == "completed" and current.status != "completed":
        from teammate.agent.hooks import before_task_completed, project_hooks

        before_task_completed(project_hooks(Path.cwd(), paths.root), current, LEAD_NAME, paths.team)
    return board.update(task_id, actor=LEAD_NAME, **changes)


def task_lines(paths: TeamPaths) -> list[str]:
    """The board in Claude Code's TaskList format, one escaped line per task."""
    return [printable_line(list_line(task)) for task in open_store(paths).task_board().list()]


def send_shutdown_request(paths: TeamPaths, name: str, reason: str | None = None) -> str:
    """Ask teammate `name` to shut down (the answer comes to the lead's inbox); the request id."""
    if name == LEAD_NAME:
        raise SwarmError(f"{name!r} is the lead, not a teammate, in team {paths.team!r}")
    open_store(paths).team_file().require_entry(name)  # an unknown name: did you mean...
    from protocols.correlation import shutdown_request_id
    from protocols.messages import ShutdownRequest

    request = ShutdownRequest(
        requestId=shutdown_request_id(name), from_=LEAD_NAME, reason=reason, timestamp=now_iso()
    )
    _lead_mailbox(paths).send(name, request, sender=LEAD_NAME)
    return request.requestId


def _lead_mailbox(paths: TeamPaths) -> AnyMailbox:
    """The lead's mailbox, signing when the lead has a key (loaded only when a message goes)."""
    from swarm.team.signatures import lead_mailbox

    return lead_mailbox(paths)
