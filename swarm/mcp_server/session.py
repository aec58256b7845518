"""One MCP session of `swarm mcp`: which team it serves, whom it speaks for, and its way to the
team's files.

`McpSession` is the `TeamLink` (`teammate.brains.base`) of the team tools that swarm's Claude
teammates use (`teammate.tools.team`), so SendMessage and the Task tools run here exactly as
there, as the session's member. Over stdio the member is given on the command line and joined
before the first request; over HTTP the session starts as nobody and names itself with the
``join`` tool. `leave` ends it (`membership.leave`); every later call is refused, and a wait in
progress (`ReadInbox`) gives up within the watcher's rescan.

A member (not the lead, whose status file is `swarm lead`'s) keeps a status file as a teammate
does (`teammate.reporter`): idle while its session is open, its last tool call as its activity,
stopped once the session ended; `swarm status`, `swarm watch` and ``swarm wait --idle`` read it.
Activities are written by a thread of the session's own, in order, so that no call's answer
waits for one.

It also knows what the server was started with: the working directory (where TaskCreated and
TaskCompleted hooks are looked for, and where spawned teammates work), the spawn backend and the
model of the teammates the lead spawns.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.inbox.entry import InboxEntry
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import MemberState
from swarm.errors import SwarmError
from swarm.mcp_server import membership
from swarm.team.members import MCP_BACKEND
from swarm.team.signatures import lead_mailbox
from teammate.hooks import Hooks, project_hooks
from teammate.link import Approval, PermissionAsk, PlanVerdict, Watched
from teammate.reporter import StatusReporter
from teammate.tools.base import ToolContext, ToolError

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract, TaskBoardContract


@dataclass(frozen=True)
class ServerOptions:
    """What `swarm mcp` was started with, shared by its sessions."""

    paths: TeamPaths
    cwd: Path
    backend: str = "auto"  # where SpawnTeammate starts teammates
    teammate_model: str = "sonnet"  # their model when the call names none
    http: bool = False  # sessions name themselves with `join`


class NotJoined(ToolError):
    """A tool that needs a member, called before `join` (or after the session left)."""


@dataclass
class McpSession:
    """The member one MCP session speaks for (a `TeamLink` for the team tools)."""

    options: ServerOptions
    session_id: str
    member: str | None = None
    is_lead: bool = False
    color: str | None = None
    closed: threading.Event = field(default_factory=threading.Event)
    hooks: Hooks | None = None
    reporter: StatusReporter | None = None
    _notes: ThreadPoolExecutor | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # who it is

    @property
    def paths(self) -> TeamPaths:
        return self.options.paths

    @property
    def name(self) -> str:
        if self.closed.is_set():
            raise NotJoined("this MCP session has ended")
        if self.member is None:
            raise NotJoined(
                "this session is not a member of the team yet: call join first, with the "
                f"name to act as (or join as {LEAD_NAME} with lead: true, if you are the lead)"
            )
        return self.member

    def join(self, name: str, lead: bool = False) -> str:
        """Become member `name` (the lead with `lead`); what to tell the client."""
        with self._lock:
            if self.member is not None:
                raise ToolError(f"this session is already {self.member!r}; one member a session")
            if lead != (name == LEAD_NAME):
                raise ToolError(
                    f"lead: true goes with the lead's name, {LEAD_NAME!r}, and only with it"
                )
            team = open_store(self.paths).team_file()
            if lead:
                team.load()  # the team must exist; the lead's entry is left as it is
                self.member, self.is_lead = LEAD_NAME, True
            else:
                joined = membership.join(self.paths, name, self.session_id, self.options.cwd)
                self.member, self.color = joined.name, joined.color
                self.reporter = StatusReporter(self.paths, joined.name, MCP_BACKEND)
                self.reporter.set(MemberState.IDLE, "joined over MCP")
                self._notes = ThreadPoolExecutor(1, thread_name_prefix=f"mcp-status-{name}")
            self.hooks = project_hooks(self.options.cwd, self.paths.root)
        role = "the lead" if lead else f"a member ({self.color})"
        return f"Joined team {self.paths.team!r} as {name}, {role}."

    def leave(self) -> list[str]:
        """The session ended: the member leaves the team (released task ids)."""
        with self._lock:
            if self.closed.is_set():
                return []
            self.closed.set()
            if self.member is None or self.is_lead:
                return []
            released = membership.leave(self.paths, self.member, self.session_id)
            if self._notes is not None:
                self._notes.shutdown(wait=True)  # the activities noted so far, then stopped
            if self.reporter is not None:
                self.reporter.set(MemberState.STOPPED, "its MCP session ended")
            return released

    def require_member(self) -> str:
        """The member's name, checked to be still in the team (a tool about to act)."""
        name = self.name
        if not self.is_lead and not membership.still_member(self.paths, name, self.session_id):
            raise NotJoined(
                f"{name!r} is no longer a member of team {self.paths.team!r} (removed by the "
                "lead, swarm reap or swarm shutdown); start a new session to join again"
            )
        return name

    def require_lead(self, tool: str) -> None:
        if not self.is_lead:
            raise ToolError(
                f"{tool} is the lead's: only a session joined as {LEAD_NAME} may call it "
                f"(you are {self.name!r}); ask the lead with SendMessage to {LEAD_NAME}"
            )

    def note(self, tool: str, arguments: dict[str, Any], waiting: float = 0) -> None:
        """Say in the status file which tool the member called, or is waiting in (its
        activity)."""
        if self.reporter is None or self._notes is None or self.closed.is_set():
            return
        said = [tool]
        for key, shown in (("taskId", "#{}"), ("to", "to {}"), ("status", "{}"), ("name", "{}")):
            if isinstance(arguments.get(key), str):
                said.append(shown.format(arguments[key]))
        if waiting:
            said.append(f"(waiting up to {waiting:g} s)")
        self._notes.submit(_write_activity, self.reporter, " ".join(said))

    def context(self) -> ToolContext:
        """The context a team tool runs in, as this member."""
        who = self.member or "mcp"
        return ToolContext(cwd=self.options.cwd, agent_name=who, team=self, hooks=self.hooks)

    # the TeamLink

    @property
    def mailbox(self) -> MailboxContract:
        # the lead's entries are signed, so teammates with a verify key obey an MCP lead too
        return (
            lead_mailbox(self.paths)
            if self.member == LEAD_NAME
            else open_store(self.paths).mailbox()
        )

    @property
    def board(self) -> TaskBoardContract:
        return open_store(self.paths).task_board(
            self.mailbox
        )  # an owner change tells the new owner

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        self.mailbox.send(to, body, sender=self.name, summary=summary, color=self.color)

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        return Approval(False, "an MCP member's client decides its own permissions")

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        return PlanVerdict(False, "an MCP member has no plan mode")

    def between_turns(self) -> list[InboxEntry]:
        return []  # its client reads its inbox with ReadInbox

    def pause(self, seconds: float, why: str) -> None:
        time.sleep(seconds)

    def watch(self, call: Watched, why: str) -> bool:
        return call.wait()

    def wait_command(self, command: Watched, seconds: float, why: str) -> str:
        return "done" if command.wait(seconds) else "timeout"

    def wake(self) -> None:
        """Nothing runs in the background of an MCP member."""

    # its inbox

    def unread(
        self, wait_s: float, cancelled: Callable[[], bool] | None = None
    ) -> list[InboxEntry]:
        """The member's unread messages, waiting up to `wait_s` seconds for the first (woken by
        inotify); [] when none came, the session ended, or `cancelled()` says so (or raises)."""
        name = self.require_member()
        mailbox = self.mailbox
        found = mailbox.read_unread(name)
        if found or wait_s <= 0:
            return found

        def give_up() -> bool:
            return self.closed.is_set() or (cancelled is not None and cancelled())

        with open_store(self.paths).watcher([name]) as watcher:
            return mailbox.wait(name, wait_s, watcher, until=give_up)

    def mark_read(self, entries: list[InboxEntry]) -> None:
        if self.closed.is_set():
            raise SwarmError("the session ended before its messages could be handed over")
        self.mailbox.mark_read(self.name, entries)


def _write_activity(reporter: StatusReporter, activity: str) -> None:
    with contextlib.suppress(OSError):  # a status that cannot be written stops no call
        reporter.set(activity=activity)
