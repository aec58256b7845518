"""The team tools: SendMessage, TaskCreate, TaskUpdate, TaskList, TaskGet, ExitPlanMode.

Names, input fields and result texts are Claude Code's (2.1.88), so prompts written for Claude
Code's teammates work unchanged. They act through `ctx.team`, the `TeamLink` the runtime gives
the brain (its mailbox, task board and the way to ask the lead).

As Claude Code 2.1.332 shows them, TaskList and TaskGet leave out of ``blockedBy`` the blockers
that are completed (a blocker whose file is gone still shows; the task file keeps them all).
SendMessage takes 2.1.332's ``"@parent"`` (the session that started this one: for a teammate,
its lead) and ``options.priority`` with it; ``"@find"`` and ``options.session_name``, which look
up Claude Code's cloud sessions by title, are refused: a swarm team has none.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from protocols.clock import now_iso, now_ms
from protocols.errors import ProtocolsError, UnknownMember
from protocols.messages.correlation import shutdown_request_id
from protocols.messages.models import PlanApprovalRequest, PlanApprovalResponse, ShutdownRequest
from protocols.names import LEAD_NAME
from protocols.store.selection import open_store
from protocols.tasks.task import describe, list_line
from protocols.team.signing import plan_digest
from protocols.trace_context import traced_metadata
from protocols.values import PermissionMode
from protocols.values import TaskStatus as Status
from teammate.hooks import HookBlocked, before_task_completed, before_task_created
from teammate.tools.base import ToolContext, ToolError, tool

if TYPE_CHECKING:
    from protocols.tasks.model import Task


class ShutdownRequestInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["shutdown_request"]
    reason: str | None = None


class ShutdownResponseInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["shutdown_response"]
    request_id: str
    approve: bool
    reason: str | None = None


class PlanApprovalResponseInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["plan_approval_response"]
    request_id: str
    approve: bool
    feedback: str | None = None


Structured = Annotated[
    ShutdownRequestInput | ShutdownResponseInput | PlanApprovalResponseInput,
    Field(discriminator="type"),
]

PARENT = "@parent"  # Claude Code 2.1.332: the session that started this one (here: the lead)
FIND = "@find"  # Claude Code 2.1.332: sends nothing, looks up the user's sessions by title


class SendOptions(BaseModel):
    """SendMessage's ``options`` (Claude Code 2.1.332), for a message to ``"@parent"``."""

    model_config = ConfigDict(extra="forbid")
    priority: Annotated[
        Literal["now", "next", "later"] | None,
        Field(description="Accepted; the lead reads its inbox when it next looks, whatever it is"),
    ] = None
    session_name: Annotated[
        str | None, Field(description="Refused: it names a Claude Code cloud session")
    ] = None


def _result(**fields: Any) -> str:
    return json.dumps({"success": True, **fields}, ensure_ascii=False)


@tool(
    "SendMessage",
    'Send a message to a teammate\'s inbox (by name), or to every teammate with to: "*". '
    "Your plain text output is not visible to anyone: use this tool to talk to the team.",
    kind="team",
)
def send_message(
    ctx: ToolContext,
    to: Annotated[
        str,
        Field(
            description='Recipient: teammate name, "*" for broadcast to all teammates, or '
            '"@parent" for the team lead that started you'
        ),
    ],
    message: Annotated[
        str | Structured,
        Field(description="Plain text message content, or a structured protocol message"),
    ],
    summary: Annotated[
        str | None,
        Field(
            description="A 5-10 word summary shown as a preview in the UI "
            "(required when message is a string)"
        ),
    ] = None,
    options: Annotated[
        SendOptions | None, Field(description="Claude Code's send options: only with '@parent'")
    ] = None,
) -> str:
    if not to.strip():
        raise ToolError("to must not be empty")
    _check_address(to, options)
    run = ctx.subagents.find_or_revive(to) if ctx.subagents is not None else None
    if run is not None:  # one of this agent's sub-agents, by name or agent id
        if not isinstance(message, str):
            raise ToolError("a sub-agent takes plain text messages only")
        return ctx.subagents.message(run, message)  # type: ignore[union-attr]
    link = ctx.link()
    if to == PARENT:
        to = _parent(link)
    if "@" in to:
        raise ToolError(
            'to must be a bare teammate name, "*" or "@parent" — there is only one team per session'
        )
    if isinstance(message, str):
        if not summary or not summary.strip():
            raise ToolError("summary is required when message is a string")
        return _send_text(link, to, message, summary)
    if to == "*":
        raise ToolError('structured messages cannot be broadcast (to: "*")')
    if isinstance(message, ShutdownRequestInput):
        request_id = shutdown_request_id(to)
        request = ShutdownRequest(
            requestId=request_id, from_=link.name, reason=message.reason, timestamp=now_iso()
        )
        _send(link, to, request)
        return _result(
            message=f"Shutdown request sent to {to}. Request ID: {request_id}",
            request_id=request_id,
            target=to,
        )
    if isinstance(message, ShutdownResponseInput):
        raise ToolError(
            "shutdown requests are answered by the swarm runtime, not by a tool call; "
            "there is nothing to do"
        )
    if link.name != LEAD_NAME:
        raise ToolError(
            "Only the team lead can approve plans. "
            "Teammates cannot approve their own or other plans."
        )
    if message.approve:
        response = PlanApprovalResponse(
            requestId=message.request_id,
            approved=True,
            timestamp=now_iso(),
            permissionMode=PermissionMode.DEFAULT,
            planDigest=_plan_digest(link, message.request_id),
        )
    else:
        response = PlanApprovalResponse(
            requestId=message.request_id,
            approved=False,
            feedback=message.feedback or "Plan needs revision",
            timestamp=now_iso(),
        )
    _send(link, to, response)
    verdict = "approved" if message.approve else "rejected"
    return _result(message=f"Plan {verdict} for {to}.", request_id=message.request_id)


def _check_address(to: str, options: SendOptions | None) -> None:
    """Refuse what looks up Claude Code's cloud sessions (``"@find"``, ``options.session_name``)
    and ``options`` with any recipient but ``"@parent"``, as Claude Code 2.1.332 does."""
    allowed = 'send to a teammate by name, "*" for all of them, or "@parent" for your lead'
    if to == FIND:
        raise ToolError(
            f'"@find" looks up Claude Code sessions by title, and a swarm team has none: {allowed}'
        )
    if options is None:
        return
    if options.session_name is not None:
        raise ToolError(
            "options.session_name names a Claude Code cloud session, and a swarm team has "
            f"none: leave it out and {allowed}"
        )
    if to != PARENT:
        raise ToolError('options only go with to: "@parent"; leave them out to message ' + to)


def _parent(link: Any) -> str:
    """Who ``"@parent"`` is for this agent: the lead that started it (none for the lead)."""
    if link.name == LEAD_NAME:
        raise ToolError(
            'you are the team lead: no one started you, so there is no "@parent"; send to a '
            'teammate by name or "*" for all of them'
        )
    return LEAD_NAME


def _plan_digest(link: Any, request_id: str) -> str | None:
    """The digest of the plan that request `request_id` in the lead's inbox asked about (a
    teammate that checks signatures takes no approval without it); None if it is not there."""
    for entry in reversed(link.mailbox.peek_all(LEAD_NAME)):
        try:
            request = entry.structured()
        except ProtocolsError:
            continue
        if isinstance(request, PlanApprovalRequest) and request.requestId == request_id:
            return plan_digest(request.planContent)
    return None


def _send_text(link: Any, to: str, text: str, summary: str) -> str:
    if to == "*":
        entries = link.mailbox.broadcast(text, sender=link.name, summary=summary, color=link.color)
        recipients = [
            n for n in open_store(link.paths).team_file().member_names() if n != link.name
        ]
        if not entries:
            return _result(
                message="No teammates to broadcast to (you are the only team member)", recipients=[]
            )
        return _result(
            message=f"Message broadcast to {len(entries)} teammate(s): {', '.join(recipients)}",
            recipients=recipients,
        )
    _send(link, to, text, summary)
    return _result(message=f"Message sent to {to}'s inbox")


def _send(link: Any, to: str, body: Any, summary: str | None = None) -> None:
    try:
        link.mailbox.send(to, body, sender=link.name, summary=summary, color=link.color)
    except UnknownMember:
        names = ", ".join(
            n for n in open_store(link.paths).team_file().member_names() if n != link.name
        )
        raise ToolError(
            f"no teammate named {to!r} in this team; members: {names or 'none'}"
        ) from None


@tool("TaskCreate", "Create a task in the team's task list.", kind="team")
def task_create(
    ctx: ToolContext,
    subject: Annotated[str, Field(description="A brief title for the task")],
    description: Annotated[str, Field(description="What needs to be done")],
    activeForm: Annotated[
        str | None,
        Field(
            description="Present continuous form shown in spinner when in_progress "
            '(e.g., "Running tests")'
        ),
    ] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Arbitrary metadata to attach to the task")
    ] = None,
) -> str:
    link = ctx.link()
    try:  # a TaskCreated hook may refuse it
        before_task_created(ctx.hooks, subject, description, link.name, link.paths.team)
    except HookBlocked as exc:
        raise ToolError(f"Task not created: {exc}") from None
    metadata = traced_metadata(metadata, now_ms())  # the task's trace goes on from this call
    task = link.board.create(subject, description, active_form=activeForm, metadata=metadata)
    return f"Task #{task.id} created successfully: {task.subject}"


TaskStatus = Literal["pending", "in_progress", "completed", "deleted"]


@tool(
    "TaskUpdate",
    "Update a task: status, owner, subject, description, dependencies, metadata.",
    kind="team",
)
def task_update(
    ctx: ToolContext,
    taskId: Annotated[str, Field(description="The ID of the task to update")],
    subject: Annotated[str | None, Field(description="New subject for the task")] = None,
    description: Annotated[str | None, Field(description="New description for the task")] = None,
    activeForm: Annotated[
        str | None, Field(description="Present continuous form shown in spinner when in_progress")
    ] = None,
    status: Annotated[TaskStatus | None, Field(description="New status for the task")] = None,
    addBlocks: Annotated[
        list[str] | None, Field(description="Task IDs that this task blocks")
    ] = None,
    addBlockedBy: Annotated[
        list[str] | None, Field(description="Task IDs that block this task")
    ] = None,
    owner: Annotated[str | None, Field(description="New owner for the task")] = None,
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="Metadata keys to merge into the task. Set a key to null to delete it."),
    ] = None,
) -> str:
    fields = {
        key: value
        for key, value in {
            "subject": subject,
            "description": description,
            "activeForm": activeForm,
            "status": status,
            "addBlocks": addBlocks,
            "addBlockedBy": addBlockedBy,
            "owner": owner,
            "metadata": metadata,
        }.items()
        if value is not None
    }
    board = ctx.link().board
    current = board.get(taskId)
    if current is None:
        raise ToolError(f"Task #{taskId} not found")
    if status == "completed" and current.status != "completed":
        try:  # a TaskCompleted hook may refuse it: the task then stays as it is
            before_task_completed(ctx.hooks, current, ctx.link().name, ctx.link().paths.team)
        except HookBlocked as exc:
            raise ToolError(f"Task #{taskId} was not marked completed: {exc}") from None
    changes: dict[str, Any] = dict(fields)
    board.update(taskId, actor=ctx.link().name, **changes)
    text = f"Updated task #{taskId} {', '.join(fields)}"
    if status == "completed":
        text += (
            "\n\nTask completed. Call TaskList now to find your next available task or see if "
            "your work unblocked others."
        )
    return text


@tool("TaskList", "List all tasks in the team's task list.", kind="team")
def task_list(ctx: ToolContext) -> str:
    tasks = ctx.link().board.list()
    completed = {task.id for task in tasks if task.status == Status.COMPLETED}
    lines = [list_line(_open_blockers(task, completed)) for task in tasks]
    return "\n".join(lines) or "No tasks found"


@tool("TaskGet", "Retrieve a task by ID.", kind="team")
def task_get(
    ctx: ToolContext, taskId: Annotated[str, Field(description="The ID of the task to retrieve")]
) -> str:
    board = ctx.link().board
    task = board.get(taskId)
    if task is None:
        return "Task not found"
    completed = {
        blocker
        for blocker in task.blockedBy
        if (found := board.get(blocker)) is not None and found.status == Status.COMPLETED
    }
    return describe(_open_blockers(task, completed))


def _open_blockers(task: Task, completed: set[str]) -> Task:
    """`task` as TaskList and TaskGet show it: its ``blockedBy`` without the `completed`
    tasks (Claude Code 2.1.332's TaskGet, and TaskList since 2.1.88)."""
    still = [blocker for blocker in task.blockedBy if blocker not in completed]
    return task if len(still) == len(task.blockedBy) else task.updated(blockedBy=still)


@tool(
    "ExitPlanMode",
    "When you are in plan mode and have finished planning, call this with your plan to ask the "
    "team lead for approval. Once approved you may start making changes.",
    kind="team",
)
def exit_plan_mode(
    ctx: ToolContext,
    plan: Annotated[
        str | None, Field(description="The plan to present for approval (markdown)")
    ] = None,
    allowedPrompts: Annotated[
        list[dict[str, Any]] | None,
        Field(description="Prompt-based permissions needed to implement the plan"),
    ] = None,
) -> str:
    exit_plan = ctx.exit_plan_mode
    if exit_plan is None:
        raise ToolError("ExitPlanMode is not available here")
    return exit_plan(plan or "")


TEAM_TOOLS = (send_message, task_create, task_update, task_list, task_get, exit_plan_mode)
