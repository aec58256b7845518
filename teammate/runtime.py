"""The teammate's life: WORK -> IDLE -> SHUTDOWN, driven by its inbox and the task board.

Each step reads the inbox first (a live ``shutdown_request`` before anything else), answers the
other messages, then works: a task assigned to it, else the lowest claimable task on the board
(`TaskBoard.claim_next`). When a turn ends it tells the lead (``idle_notification``) and marks
itself inactive. Idle, it sleeps on inotify for its inbox and the task directory (with the
watcher's periodic rescan as a safety net); it makes no model calls and does not poll the board.

A ``shutdown_request`` sent before this teammate joined (``joinedAt``) was meant for a
predecessor of the same name: it is ignored and reported to the lead, never obeyed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocols.clock import now_iso
from protocols.correlation import is_stale
from protocols.errors import ProtocolsError, UnknownMember
from protocols.inbox import InboxEntry
from protocols.mailbox import Mailbox
from protocols.messages import (
    IdleNotification,
    ModeSetRequest,
    PermissionResponse,
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
    TaskAssignment,
    TeamPermissionUpdate,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.task import Task
from protocols.tasks import TaskBoard
from protocols.team import Member, TeamFile
from protocols.watch import InboxWatcher
from teammate.brain import Brain, Interrupted, Outcome
from teammate.instance import single_instance
from teammate.lead_requests import LeadRequests
from teammate.options import TeammateOptions
from teammate.reporter import StatusReporter
from teammate.task_worktree import work_in_place

BOARD_RESCAN_S = 5.0
# inotify wakes an idle teammate; this rescan is only the safety net for lost events
IDLE_RESCAN_S = 1.0


class TeammateError(Exception):
    """The teammate cannot run (not a member, already running); the message says why."""


class Stop(Exception):
    """Raised by the SIGTERM handler: stop after releasing what this teammate holds."""


class Teammate(LeadRequests):
    def __init__(
        self,
        options: TeammateOptions,
        brain: Brain,
        paths: TeamPaths,
        say: Callable[[str], None] = print,
        reporter: StatusReporter | None = None,
    ) -> None:
        self.options = options
        self.name = options.agent_name
        self.color = options.color
        self.brain = brain
        self.reporter = reporter or StatusReporter(None, self.name, options.model)
        self.paths = paths
        self.mailbox = Mailbox(paths)
        self.board = TaskBoard(paths, self.mailbox)
        self.team = TeamFile(paths)
        self._say = say
        self.member: Member | None = None
        self.stopped = False
        self._watcher: InboxWatcher | None = None
        self._board_seen: tuple[int, float] = (0, 0.0)
        self._inbox_seen: tuple[int, int, int] | None = None
        self._in_flight: set[str] = set()  # plain messages the brain is answering right now
        self.home = Path.cwd()  # where it works, unless a task names a worktree
        self.home_confined = False  # set from the member entry: it runs in its own worktree

    # lifecycle

    def run(self) -> int:
        """Run until a shutdown is approved or SIGTERM arrives; returns the exit code."""
        self.member = self._require_member()
        self.home_confined = bool(self.member.worktreePath)
        with single_instance(self.paths, self.name):
            self.team.update_member(self.name, pid=os.getpid(), isActive=True)
            self.reporter.set("idle", "joined the team")
            self.say(f"{self.name} joined team {self.paths.team!r} (pid {os.getpid()})")
            previous = signal.signal(signal.SIGTERM, _raise_stop)
            try:
                with InboxWatcher(
                    self.paths.inbox(self.name),
                    directories=(self.paths.tasks_dir,),
                    rescan_s=IDLE_RESCAN_S,
                ) as watcher:
                    self._watcher = watcher
                    while not self.stopped:
                        watcher.clear()
                        if not self.step():
                            watcher.wait(BOARD_RESCAN_S)
            except Stop:
                released = self.board.release_all(self.name)
                self.say(f"stopped by SIGTERM; released {[t.id for t in released]}")
            finally:
                signal.signal(signal.SIGTERM, previous)
                self._set_active(False)
                self.reporter.set("stopped", "stopped", clear_task=True)
        return 0

    def step(self) -> bool:
        """One pass: messages first, then at most one task. True if anything happened."""
        entries = self._unread()
        plain = self.handle_messages(entries)
        if self.stopped:
            return True
        outcome = self._respond(plain) if plain else None
        if self.stopped:
            return True
        task = self._next_task(force=bool(entries))
        if task is not None:
            self._work(task)
            return True
        if plain:
            self._send_idle(outcome=outcome)
        return bool(plain)

    # messages

    def _unread(self) -> list[InboxEntry]:
        """Unread entries not already being answered; the file is only re-read once it changed."""
        inbox = self.mailbox.inbox(self.name)
        signature = inbox.signature()
        if signature is not None and signature == self._inbox_seen:
            return []
        loaded = inbox.load()
        unread = [entry for entry in loaded.unread() if entry.identity not in self._in_flight]
        self._inbox_seen = None if unread else loaded.signature
        return unread

    def handle_messages(self, entries: list[InboxEntry]) -> list[InboxEntry]:
        """Handle protocol messages, a live shutdown request first; return the plain ones
        (still unread: they are marked read once the brain has answered them)."""
        decoded = [(entry, self._decode(entry)) for entry in entries]
        for entry, message in decoded:
            if isinstance(message, ShutdownRequest):
                self._on_shutdown(entry, message)
                if self.stopped:
                    return []
        plain = []
        for entry, message in decoded:
            if isinstance(message, ShutdownRequest):
                continue
            if message is None:
                self.say(f"message from {entry.from_}: {entry.text}")
                plain.append(entry)
                continue
            if isinstance(message, ModeSetRequest) and entry.from_ == LEAD_NAME:
                self._set_mode(message.mode)
            elif isinstance(message, TeamPermissionUpdate) and entry.from_ == LEAD_NAME:
                self.brain.update_permissions(
                    [message.permissionUpdate.model_dump(exclude_none=True)]
                )
                self.say(f"the lead updated permissions: {message.permissionUpdate.rules}")
            elif isinstance(message, TaskAssignment):
                self.say(f"assigned task #{message.taskId}: {message.subject}")
            elif not isinstance(message, PermissionResponse | PlanApprovalResponse):
                self.say(f"ignoring a {message.type} from {entry.from_}")
            self.mailbox.mark_read(self.name, [entry])
        return plain

    def _respond(self, plain: list[InboxEntry]) -> Outcome | None:
        """Let the brain answer plain messages; they are marked read once it has."""
        self._in_flight.update(entry.identity for entry in plain)
        self._set_active(True)
        self.reporter.set("working", f"answering {plain[-1].from_}")
        try:
            return self.brain.respond(plain, self)
        except Interrupted:
            return None
        finally:
            self._in_flight.clear()
            self.mailbox.mark_read(self.name, plain)

    def between_turns(self) -> list[InboxEntry]:
        """For the brain, between two model turns: protocol messages are handled here; the
        plain ones are returned (marked read); an approved shutdown raises `Interrupted`."""
        self._inbox_seen = None
        plain = self.handle_messages(self._unread())
        if self.stopped:
            raise Interrupted("shutdown approved")
        if plain:
            self.mailbox.mark_read(self.name, plain)
        return plain

    def _decode(self, entry: InboxEntry) -> Any:
        try:
            return entry.structured()
        except ProtocolsError as exc:
            self.say(f"malformed message from {entry.from_} (kept in the inbox archive): {exc}")
            return None

    def _on_shutdown(self, entry: InboxEntry, request: ShutdownRequest) -> None:
        self.mailbox.mark_read(self.name, [entry])
        assert self.member is not None
        if is_stale(request, self.member.joinedAt):
            note = (
                f"Ignored shutdown request {request.requestId}: it was sent before I joined "
                "(meant for an earlier teammate of my name)."
            )
            self.say(note)
            self._send(LEAD_NAME, note, summary="ignored a stale shutdown request")
            return
        accept, reason = self.brain.accept_shutdown(request)
        if not accept:
            self.say(f"refusing shutdown: {reason}")
            rejected = ShutdownRejected(
                requestId=request.requestId, from_=self.name, reason=reason, timestamp=now_iso()
            )
            self._send(LEAD_NAME, rejected)
            return
        released = self.board.release_all(self.name)
        member = self._current_member() or self.member
        approved = ShutdownApproved(
            requestId=request.requestId,
            from_=self.name,
            timestamp=now_iso(),
            paneId=member.tmuxPaneId or None,
            backendType=member.backendType or None,
        )
        self._send(LEAD_NAME, approved)
        self.say(
            f"shutting down ({request.reason or 'asked by the lead'}); released "
            f"{[t.id for t in released] or 'no tasks'}"
        )
        self.stopped = True

    # tasks

    def _next_task(self, force: bool) -> Task | None:
        """A task assigned to me, else the lowest claimable one; only when the board changed."""
        try:
            st = os.stat(self.paths.tasks_dir)
        except FileNotFoundError:
            return None
        now = time.monotonic()
        seen_mtime, seen_at = self._board_seen
        if not force and st.st_mtime_ns == seen_mtime and now - seen_at < BOARD_RESCAN_S:
            return None
        task = self._claim()
        # taking locks changes the directory's mtime too: note it after our own attempt, so
        # only someone else's change (or the periodic rescan) makes us look again
        with contextlib.suppress(FileNotFoundError):
            self._board_seen = (os.stat(self.paths.tasks_dir).st_mtime_ns, now)
        return task

    def _claim(self) -> Task | None:
        tasks = self.board.list()
        if any(t.owner == self.name and t.status == "in_progress" for t in tasks):
            return None  # still owns one it could not finish: the lead decides about it
        for task in tasks:  # assigned to me by the lead: the lowest one I can start
            if task.owner == self.name and task.status == "pending":
                claim = self.board.claim(task.id, self.name, check_busy=False)
                if claim.success:
                    return claim.task
        claim = self.board.claim_next(self.name)
        return claim.task if claim is not None and claim.success else None

    def _work(self, task: Task) -> None:
        self._set_active(True)
        self.reporter.set("working", f"#{task.id}: {task.subject}", task=task.id)
        self.say(f"working on #{task.id}: {task.subject}")
        try:
            outcome = work_in_place(self.brain, task, self, self.home, self.home_confined)
        except Interrupted:
            return
        if self.stopped:
            return
        if outcome.status == "resolved" and not outcome.completed_by_brain:
            self.board.update(task.id, actor=self.name, status="completed", **outcome.metadata)
        elif outcome.metadata and self.board.get(task.id) is not None:
            self.board.update(task.id, actor=self.name, **outcome.metadata)
        self.say(outcome.summary + (f"\n{outcome.report}" if outcome.report else ""))
        if outcome.report:
            self._send(LEAD_NAME, f"{outcome.summary}\n{outcome.report}", summary=outcome.summary)
        self._send_idle(task, outcome)

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        self._send(to, body, summary)

    # helpers

    def _send_idle(self, task: Task | None = None, outcome: Outcome | None = None) -> None:
        failed = outcome is not None and outcome.status != "resolved"
        note = IdleNotification(
            from_=self.name,
            timestamp=now_iso(),
            # a failed turn that was not a task is a failed turn; a task's failure is reported
            # in completedStatus and the teammate is available for the next one
            idleReason="failed" if failed and task is None else "available",
            summary=outcome.summary if outcome else None,
            completedTaskId=task.id if task else None,
            completedStatus=outcome.status if outcome and task else None,
            failureReason=outcome.summary if failed else None,
        )
        self._send(LEAD_NAME, note)
        self._set_active(False)
        self.reporter.set(
            "failed" if failed and task is None else "idle",
            outcome.summary if outcome else "idle",
            clear_task=True,
        )

    def _send(self, to: str, body: Any, summary: str | None = None) -> None:
        try:
            self.mailbox.send(to, body, sender=self.name, summary=summary, color=self.color)
        except UnknownMember as exc:
            self.say(f"could not send to {to}: {exc}")

    def _set_active(self, active: bool) -> None:
        with contextlib.suppress(UnknownMember, ProtocolsError):
            current = self._current_member()
            if current is not None and current.isActive is not active:
                self.team.update_member(self.name, isActive=active)

    def _set_mode(self, mode: str) -> None:
        self.brain.set_mode(mode)
        self.say(f"permission mode is now {mode}")

    def _current_member(self) -> Member | None:
        return self.team.load().member(self.name)

    def _require_member(self) -> Member:
        member = self._current_member()
        if member is None:
            raise TeammateError(
                f"{self.name!r} is not a member of team {self.paths.team!r}; "
                "add it to the team (swarm spawn does) before starting the process"
            )
        return member

    def say(self, text: str) -> None:
        self._say(f"[{time.strftime('%H:%M:%S')}] {text}")


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop()
