"""The lead's tools in `swarm mcp`, for a session joined as ``team-lead`` only; every other
session gets a tool error naming who may call them. Each calls the library the ``swarm``
commands call, so it checks and does what they do:

- ``ListRequests``: the permission, sandbox and plan requests waiting for an answer
  (`swarm.team.approvals.pending_requests`, as ``swarm permissions``);
- ``AnswerRequest``: approve or deny one (`swarm.team.approvals.answer`, as ``swarm approve`` /
  ``swarm deny``: exactly one answer wins);
- ``SpawnTeammate``: start a teammate process (`swarm.lead.tools.spawn_teammate`, what the lead
  agent's Agent tool does, with the server's backend and teammate model), here or on a host;
- ``ShutdownTeammate``: the shutdown protocol (`swarm.team.lifecycle.request_shutdown`, as
  ``swarm shutdown``).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from protocols.names import checked_component, validate_name
from protocols.values import PermissionMode
from swarm.lead.tools import LeadLink, spawn_teammate
from swarm.mcp_server.tools import MemberName, session_of
from swarm.team.approvals import answer, answer_question, pending_requests
from swarm.team.lifecycle import request_shutdown
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolContext, ToolError, tool

SHUTDOWN_WAIT_MAX_S = 120

HostName = Annotated[
    str, AfterValidator(lambda name: validate_name(name, "host name")), Field(max_length=64)
]

Existing = Annotated[
    str, AfterValidator(lambda name: checked_component(name, "member name")), Field(max_length=128)
]


@tool(
    "ListRequests",
    "The requests waiting for the lead's answer: teammates' permission requests (a tool call "
    "and its input), sandbox host requests and plans sent for approval. Lead only.",
    kind="read",
)
def list_requests(ctx: ToolContext) -> str:
    session = session_of(ctx)
    session.require_lead("ListRequests")
    found = [p.to_json() for p in pending_requests(session.paths)]
    return json.dumps(found, indent=2, ensure_ascii=False) if found else "No pending requests."


@tool(
    "AnswerRequest",
    "Approve or deny one pending request by its id (from ListRequests). An approved plan lets "
    "the teammate start; a denial's text tells it why. A teammate's questions "
    "(AskUserQuestion) are answered with `answers`, one per question in order (an option's "
    "number or label, or your own words). Lead only.",
    kind="team",
)
def answer_request(
    ctx: ToolContext,
    id: Annotated[
        str, Field(description="The request id, e.g. perm-1763...-abc1234", max_length=200)
    ],
    approve: Annotated[bool, Field(description="true to approve, false to deny")],
    text: Annotated[
        str | None, Field(description="Feedback for the teammate, or why it was denied")
    ] = None,
    answers: Annotated[
        list[str] | None, Field(description="For a teammate's questions: one answer each")
    ] = None,
) -> str:
    session = session_of(ctx)
    session.require_lead("AnswerRequest")
    if answers is not None and approve:
        _, given = answer_question(session.paths, id, answers, by=f"{session.name} over MCP")
        return f"Answered {id}: {json.dumps(given, ensure_ascii=False)}"
    done = answer(session.paths, id, approve=approve, text=text, by=f"{session.name} over MCP")
    return f"{'Approved' if approve else 'Denied'} {done.kind} {id} from {done.teammate}."


@tool(
    "SpawnTeammate",
    "Start a teammate: a separate agent process that gets `prompt` as its first message, then "
    "works the task board and answers messages. model 'shell' is an offline worker that runs "
    "the shell commands of tasks; a Claude model (sonnet, opus, haiku, a model id) runs an "
    "agent. Lead only.",
    kind="team",
)
def spawn(
    ctx: ToolContext,
    name: Annotated[MemberName, Field(description="The teammate's name")],
    prompt: Annotated[str, Field(description="Its first message: what to do")],
    model: Annotated[
        str | None,
        Field(description="shell, sonnet, opus, haiku or a model id (default: the server's)"),
    ] = None,
    agent_type: Annotated[
        str | None, Field(description="An agent definition (default general-purpose)")
    ] = None,
    mode: Annotated[
        PermissionMode | None,
        Field(description='Its permission mode ("plan": it sends you a plan first)'),
    ] = None,
    isolation: Annotated[
        Literal["worktree"] | None, Field(description="worktree: work in its own git worktree")
    ] = None,
    host: Annotated[
        HostName | None,
        Field(
            description="On a team in PostgreSQL: the host (`swarm host serve`) it runs on "
            "(default: this server's machine)"
        ),
    ] = None,
) -> str:
    session = session_of(ctx)
    session.require_lead("SpawnTeammate")
    options = session.options
    link = LeadLink(
        options.paths, options.cwd, backend=options.backend, model=options.teammate_model
    )
    call = AgentCall(
        description=f"spawn {name}",
        prompt=prompt,
        subagent_type=agent_type,
        model=model,
        name=name,
        mode=mode,
        isolation=isolation,
        host=host,
    )
    return spawn_teammate(link, call)


@tool(
    "ShutdownTeammate",
    "Ask a teammate to shut down and wait for its answer; once it stops it is removed and its "
    "unfinished tasks go back to the board. force stops it even if it refuses or does not "
    "answer (and removes a member that is an MCP session). Lead only.",
    kind="team",
)
def shutdown(
    ctx: ToolContext,
    name: Annotated[Existing, Field(description="The teammate to stop")],
    reason: Annotated[str | None, Field(description="Told to the teammate")] = None,
    force: Annotated[bool, Field(description="Stop it whatever it answers")] = False,
    wait_seconds: Annotated[
        float,
        Field(description="How long to wait for its answer", ge=0, le=SHUTDOWN_WAIT_MAX_S),
    ] = 30,
) -> str:
    session = session_of(ctx)
    session.require_lead("ShutdownTeammate")
    result = request_shutdown(session.paths, name, reason, wait_seconds, force)
    if not result.stopped:
        why = f"{result.outcome}: {result.reason}"
        raise ToolError(f"{name} did not stop: {why} (force: true stops it anyway)")
    released = ", ".join("#" + t for t in result.released) or "none"
    return f"{name}: {result.outcome}; stopped and removed. Tasks returned to pending: {released}"


LEAD_TOOLS = (list_requests, answer_request, spawn, shutdown)
