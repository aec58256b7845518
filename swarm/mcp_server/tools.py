"""The tools `swarm mcp` serves to every member, besides the team tools it shares with swarm's
Claude teammates (SendMessage, TaskCreate, TaskList, TaskGet, TaskUpdate: `teammate.tools.team`,
run unchanged with the session as their `TeamLink`).

- ``join`` (HTTP only): name the member this session is; the lead joins with ``lead: true``.
- ``ReadInbox``: the caller's unread messages, waiting up to ``wait_seconds`` for the first
  (woken by inotify, `protocols.inbox.mailbox.Mailbox.wait`); what it returns is marked read, by
  identity, and only once the call was not cancelled.
- ``TaskClaim``: the board's compare-and-set claim for the caller, with its reason when refused.
- ``TeamStatus``: what ``swarm status`` shows, as JSON: members and their state, the tasks in
  TaskList's format, the requests waiting for the lead.

Each is a `teammate.tools.base.Tool` (the input model, schema and validation come from the
function's signature), run in a worker thread by `swarm.mcp_server.server`.
"""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

import anyio.from_thread
from pydantic import AfterValidator, Field

from protocols.inbox.entry import format_for_model
from protocols.names import LEAD_NAME, validate_name
from protocols.tasks.model import TaskId
from protocols.tasks.task import ClaimFailure, ClaimResult, list_line
from swarm.mcp_server.session import McpSession
from swarm.views.snapshot import TeamView, snapshot
from teammate.tools.base import ToolContext, ToolError, tool

MAX_WAIT_S = 300  # a ReadInbox call waits at most this long; call it again to wait on

MemberName = Annotated[
    str,
    AfterValidator(lambda name: validate_name(name, "member name")),
    Field(description="1-64 characters: lowercase letters, digits and '-'", max_length=64),
]


def session_of(ctx: ToolContext) -> McpSession:
    """The MCP session a tool runs for."""
    link = ctx.link()
    if not isinstance(link, McpSession):
        raise ToolError("this tool belongs to swarm's MCP server")
    return link


@tool(
    "join",
    "Join the team as a member: name yourself before any other tool. The name is yours for this "
    f"session; when the session ends you leave the team. The lead joins as {LEAD_NAME!r} with "
    "lead: true.",
    kind="team",
)
def join(
    ctx: ToolContext,
    name: Annotated[MemberName, Field(description="Your name in the team")],
    lead: Annotated[
        bool, Field(description=f"Join as the team's lead (the name must be {LEAD_NAME!r})")
    ] = False,
) -> str:
    return session_of(ctx).join(name, lead)


@tool(
    "ReadInbox",
    "Read your unread messages (from teammates, the lead, the task board), marking them read. "
    "With wait_seconds it waits for the first message to arrive, returning as soon as one "
    "does: call it with a wait whenever you have nothing else to do.",
    kind="team",
)
def read_inbox(
    ctx: ToolContext,
    wait_seconds: Annotated[
        float,
        Field(
            description=f"How long to wait when no message is there yet (0 to {MAX_WAIT_S})",
            ge=0,
            le=MAX_WAIT_S,
        ),
    ] = 0,
) -> str:
    session = session_of(ctx)
    entries = session.unread(wait_seconds, cancelled=_call_cancelled)
    _call_cancelled()  # a call given up on marks nothing: its messages stay unread
    if not entries:
        waited = f" (waited {wait_seconds:g} s)" if wait_seconds else ""
        return f"No new messages{waited}."
    session.mark_read(entries)
    return format_for_model(entries)


def _call_cancelled() -> bool:
    """Raises the cancellation of the MCP call running in this worker thread, if it was
    cancelled (the client gave up, or its session ended); False otherwise."""
    with contextlib.suppress(RuntimeError):  # not in a worker thread: nothing cancels it
        anyio.from_thread.check_cancelled()
    return False


@tool(
    "TaskClaim",
    "Claim a task for yourself: it becomes yours and in_progress, unless it is taken, done, "
    "blocked by unfinished tasks, or you already hold an unfinished task.",
    kind="team",
)
def task_claim(
    ctx: ToolContext, taskId: Annotated[TaskId, Field(description="The ID of the task to claim")]
) -> str:
    session = session_of(ctx)
    result = session.board.claim(taskId, session.require_member())
    if not result.success or result.task is None:
        raise ToolError(refusal(taskId, result))
    return f"Claimed task #{taskId}.\n{list_line(result.task)}"


def refusal(task_id: str, result: ClaimResult) -> str:
    """Why a claim failed, in words, with what to do."""
    task = result.task
    if result.reason == ClaimFailure.ALREADY_CLAIMED and task is not None:
        return f"Task #{task_id} is already claimed by {task.owner}; TaskList shows free ones"
    if result.reason == ClaimFailure.ALREADY_RESOLVED:
        return f"Task #{task_id} is already completed"
    if result.reason == ClaimFailure.BLOCKED:
        blockers = ", ".join("#" + b for b in result.blocked_by)
        return f"Task #{task_id} is blocked by {blockers}, not completed yet"
    if result.reason == ClaimFailure.AGENT_BUSY:
        held = ", ".join("#" + b for b in result.busy_with)
        return (
            f"You already hold unfinished task {held}: complete it (TaskUpdate status "
            "completed) or hand it back (status pending, owner empty) before claiming another"
        )
    return f"Task #{task_id} not found"


@tool(
    "TeamStatus",
    "The team now: each member with its state (working, idle, dead...), current task and "
    "activity; the tasks by status; requests waiting for the lead; the last messages to it.",
    kind="read",
)
def team_status(ctx: ToolContext) -> str:
    session = session_of(ctx)
    session.require_member()
    return json.dumps(status_of(snapshot(session.paths)), indent=1, ensure_ascii=False)


def status_of(view: TeamView) -> dict[str, Any]:
    """What ``swarm status`` shows, for a model: members, the board, the requests waiting."""
    tasks = [t for listed in view.tasks.values() for t in listed] + view.failed
    return {
        "team": view.team,
        "members": [
            {
                "name": m.name,
                "state": m.state,
                "backend": m.backend,
                "task": m.task,
                "activity": m.activity,
            }
            for m in view.members
        ],
        "tasks": [list_line(t) for t in sorted(tasks, key=lambda t: int(t.id))],
        "requests": [
            {"id": r.id, "kind": r.kind, "teammate": r.teammate, "asks": r.summary}
            for r in view.requests
        ],
    }


MEMBER_TOOLS = (read_inbox, task_claim, team_status)
