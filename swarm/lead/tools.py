"""The lead agent's own tools: TeamCreate, TeamDelete, AnswerPermission, and its side of the
one Agent tool (`teammate.tools.agents`): `spawn_teammate`, which the lead sets as
`ToolContext.spawn_teammate` so that an Agent call with a `name` starts a teammate process. With
Claude Code's names, inputs and result texts.

They act through `ctx.team`, a `LeadLink`: the team's files plus how to spawn (backend,
working directory, the lead's model). Teammates never get these, so a teammate cannot spawn
teammates.

`LeadLink` also owns the hand-over of teammates' messages from the console thread to the lead
agent's thread: the messages waiting for the agent and whether a turn is running, both under
one lock, so a message is never lost between a hand-over and a take.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, create_model

from protocols.inbox.entry import InboxEntry
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import ModelKind, PermissionMode
from swarm.backends.base import SpawnBackend
from swarm.hosts.placement import choose_host
from swarm.team.approvals import answer
from swarm.team.host_requests import spawn_on_host
from swarm.team.lifecycle import spawn_member
from swarm.team.resume import clear_dead, crashed
from swarm.team.signatures import lead_mailbox
from swarm.team.stopping import delete_team
from teammate.config.definitions import load_agent
from teammate.link import Approval, PermissionAsk, PlanVerdict, Watched
from teammate.options import MemberSpec
from teammate.tools.agents import AgentCall, agent, task_output, task_stop
from teammate.tools.base import Tool, ToolContext, ToolError, ToolOutput, tool

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract, TaskBoardContract


@dataclass
class LeadLink:
    """What the lead agent's tools act on (it is also the agent loop's `TeamLink`)."""

    paths: TeamPaths
    cwd: Path
    backend: str = "auto"
    model: str = "sonnet"
    spawner: SpawnBackend | None = None  # replaces the backend `backend` names (unit tests)
    delegated_approvals: bool = False  # may the agent answer permission requests itself?
    hosts: tuple[str, ...] = ()  # a PostgreSQL team's hosts its teammates go to (none: here)
    name: str = LEAD_NAME
    color: str | None = None
    on_wake: Callable[[], None] = field(default=lambda: None, repr=False, compare=False)
    # the hand-over (console thread -> agent thread): `_lock` guards `_arrived` and `_busy`
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )
    _arrived: list[InboxEntry] = field(default_factory=list, init=False, repr=False, compare=False)
    _busy: bool = field(default=False, init=False, repr=False, compare=False)

    @property
    def mailbox(self) -> MailboxContract:
        return lead_mailbox(self.paths)

    @property
    def board(self) -> TaskBoardContract:
        return open_store(self.paths).task_board(lead_mailbox(self.paths))

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        return Approval(False, "the lead agent has no one to ask; its tools never need it")

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        return PlanVerdict(True)

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        self.mailbox.send(to, body, sender=self.name, summary=summary)

    # the hand-over of teammates' messages

    @property
    def busy(self) -> bool:
        """Is a turn running (between `begin_turn` and `end_turn`)?"""
        with self._lock:
            return self._busy

    def deliver(self, entries: list[InboxEntry]) -> bool:
        """Keep teammates' messages for the agent (any thread). True if a turn is running: it
        takes them between its model calls, or `end_turn` reports them. False: no turn is, so
        the caller must wake the agent to take them (`between_turns`) in a turn of their own."""
        with self._lock:
            self._arrived.extend(entries)
            return self._busy

    def begin_turn(self) -> None:
        """The agent's thread starts a turn: messages delivered from now on are its to take."""
        with self._lock:
            self._busy = True

    def end_turn(self) -> bool:
        """The agent's thread ends its turn. True if messages wait that it did not take
        (delivered after its last take): the caller must wake the agent for them."""
        with self._lock:
            self._busy = False
            return bool(self._arrived)

    def between_turns(self) -> list[InboxEntry]:
        """Take every message delivered so far, oldest first (the agent's thread)."""
        with self._lock:
            taken, self._arrived = self._arrived, []
        return taken

    def pause(self, seconds: float, why: str) -> None:
        """Wait before the agent loop retries a failing model call (the console, on its own
        thread, keeps showing what arrives meanwhile)."""
        time.sleep(seconds)

    def watch(self, call: Watched, why: str) -> bool:
        """Wait for the lead agent's model call (the console shows what arrives meanwhile)."""
        return call.wait()

    def wait_command(self, command: Watched, seconds: float, why: str) -> str:
        """Wait for the lead agent's command; teammates' messages for it end the wait."""
        deadline = time.monotonic() + seconds
        while not command.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            with self._lock:
                if self._arrived:
                    return "message"
            if time.monotonic() >= deadline:
                return "timeout"
        return "done"

    def wake(self) -> None:
        """A background sub-agent ended: the lead agent takes up its notification (any
        thread)."""
        self.on_wake()


def _link(ctx: ToolContext) -> LeadLink:
    link = ctx.link()
    if not isinstance(link, LeadLink):
        raise ToolError("only the lead agent has this tool")
    return link


@tool("TeamCreate", "Create the team this session leads (if it does not exist yet).", kind="team")
def team_create(
    ctx: ToolContext,
    team_name: Annotated[str, Field(description="Name for the new team")],
    description: Annotated[str | None, Field(description="Team description/purpose")] = None,
    agent_type: Annotated[str | None, Field(description="Type/role of the team lead")] = None,
) -> str:
    link = _link(ctx)
    if team_name != link.paths.team:
        raise ToolError(
            f"this session leads team {link.paths.team!r}; start `swarm lead --team "
            f"{team_name}` to lead another"
        )
    team = open_store(link.paths).team_file()
    if not link.paths.config.exists():
        team.create(description=description or "", cwd=link.cwd)
    return json.dumps(
        {
            "team_name": team_name,
            "team_file_path": str(link.paths.config),
            "lead_agent_id": f"{LEAD_NAME}@{team_name}",
        }
    )


@tool(
    "TeamDelete",
    "Delete the team's files once every teammate has shut down.",
    kind="team",
)
def team_delete(ctx: ToolContext) -> str:
    link = _link(ctx)
    delete_team(link.paths, force=False)
    return f"Cleaned up directories and worktrees for team {link.paths.team!r}."


LEAD_AGENT_DESCRIPTION = (
    "With a `name`: spawn a teammate, a separate agent process with its own pane that works on "
    '`prompt` and takes further instructions through SendMessage (`mode: "plan"` makes it send '
    "you a plan first). Without one: run a sub-agent in this session that answers you (in the "
    "background with `run_in_background`; you are told when it finishes)."
)


def spawn_teammate(link: LeadLink, call: AgentCall) -> str:
    """The lead's Agent call with a `name`: a teammate process (`ToolContext.spawn_teammate`),
    here, or on a host (the call's `host`, else the lead's hosts: `swarm.hosts.placement`).
    A Claude teammate of that name whose last instance crashed here carries on with its
    conversation (`swarm.team.resume`); a dead entry of that name is reaped first."""
    if not call.name:
        raise ToolError("give the teammate a `name` to address it by")
    if call.team_name and call.team_name != link.paths.team:
        raise ToolError(f"this session leads team {link.paths.team!r}, not {call.team_name!r}")
    agent_type = call.subagent_type or "general-purpose"
    definition = load_agent(agent_type, project_dir=link.cwd)  # an unknown type is refused
    # the call's model, the definition's, the lead's
    model = call.model or definition.model or link.model
    host = _host(link, call)
    if host is not None and "worktree" in (call.isolation, definition.isolation):
        raise ToolError(
            "isolation: worktree is not available for a teammate on a host: its worktree would "
            "be on that machine, where this lead can neither merge nor remove it"
        )
    shell = ModelKind.of(model) == ModelKind.SHELL
    resume = host is None and not shell and crashed(link.paths, call.name)
    earlier = open_store(link.paths).team_file().load().member(call.name) is not None
    if not resume:
        clear_dead(link.paths, call.name)
    spec = MemberSpec(
        model=model,
        agent_type=agent_type,
        plan_mode_required=call.mode == PermissionMode.PLAN,
        permission_mode=call.mode if call.mode != PermissionMode.PLAN else None,
        backend=link.backend,
        cwd=str(link.cwd),
        worktree=call.name if call.isolation == "worktree" else None,
        resume=resume,
    )
    if host is not None:
        spawn_on_host(link.paths, host, call.name, call.prompt, spec)
    else:
        spawn_member(link.paths, call.name, call.prompt, spec, backend=link.spawner)
    note = ""
    if resume:
        note = (
            "\nIts earlier instance had stopped without shutting down: it carries on with that "
            "conversation, and your prompt is its next message."
        )
    elif host is not None and earlier:
        note = (
            "\nIts earlier instance had stopped; on a host it starts afresh (carrying on a "
            "conversation is not available there): tell it what it needs to know."
        )
    where = f"host: {host}\n" if host is not None else ""
    return (
        f"Spawned successfully.\nagent_id: {call.name}@{link.paths.team}\nname: {call.name}\n"
        f"team_name: {link.paths.team}\n{where}"
        f"The agent is now running and will receive instructions via mailbox.{note}"
    )


def _host(link: LeadLink, call: AgentCall) -> str | None:
    """The host the teammate goes to: the call's, else the lead's choice of its hosts (None:
    it runs here)."""
    if call.host is None:
        return choose_host(link.paths, link.hosts) if link.hosts else None
    if open_store(link.paths).kind != "postgresql":
        raise ToolError(
            f"`host` is for a team on PostgreSQL, whose teammates may run on other machines; "
            f"team {link.paths.team!r} is in files, so its teammates run here: leave `host` out"
        )
    return call.host


@tool(
    "AnswerPermission",
    "Approve or deny a teammate's pending permission or plan request (only when the human "
    "has delegated approvals to you).",
    kind="team",
)
def answer_permission(
    ctx: ToolContext,
    request_id: Annotated[str, Field(description="The request id, e.g. perm-1763...-abc1234")],
    approve: Annotated[bool, Field(description="true to approve, false to deny")],
    reason: Annotated[str | None, Field(description="Why (sent to the teammate)")] = None,
) -> str:
    link = _link(ctx)
    if not link.delegated_approvals:
        raise ToolError(
            "the human answers permission requests in this session; they see every request"
        )
    done = answer(link.paths, request_id, approve=approve, text=reason, by="the lead agent")
    return f"{'Approved' if approve else 'Denied'} {done.kind} {request_id} from {done.teammate}."


def _lead_agent(ctx: ToolContext, host: str | None = None, **inputs: Any) -> ToolOutput:
    """The lead's Agent: the one Agent tool, with swarm's `host` for a spawned teammate."""
    if host is None or ctx.spawn_teammate is None:
        return agent.function(ctx, **inputs)
    if not inputs.get("name"):
        raise ToolError("`host` places a teammate: give it a `name` too (a sub-agent runs here)")
    spawn = ctx.spawn_teammate
    placed = dataclasses.replace(
        ctx, spawn_teammate=lambda c: spawn(dataclasses.replace(c, host=host))
    )
    return agent.function(placed, **inputs)


HOST_FIELD = Field(
    description="swarm: the host (`swarm host serve`) a teammate runs on, on a team in "
    "PostgreSQL (default: the lead's --host choice, else here)"
)
# one Agent tool for every agent; the lead's says that a `name` makes a teammate, and takes a host
LEAD_AGENT = Tool(
    agent.name,
    LEAD_AGENT_DESCRIPTION,
    agent.kind,
    create_model(
        "AgentInput", __base__=agent.input_model, host=(Annotated[str | None, HOST_FIELD], None)
    ),
    _lead_agent,
)
LEAD_TOOLS = (team_create, team_delete, LEAD_AGENT, answer_permission, task_output, task_stop)
