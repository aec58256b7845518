"""The lead's side of a team: the ``team-lead`` inbox turned into events, and the protocol work
each one asks for.

`Leader.events()` reads what arrived (it wakes on inotify through `wait`; a short rescan only
backs up lost events), marks it read, and returns one `LeadEvent` per message:

- a teammate's message or idle notification: shown, and handed to the lead agent;
- a permission, sandbox or plan request: answered at once when the team's auto-approval rules
  decide it, else left for the human (it stays listed in `swarm permissions` until answered);
  the lead agent hears of it too (it may answer only when the person delegated approvals);
- ``shutdown_approved``: the pane or process is stopped, the member removed, its unfinished
  tasks returned to pending, and the lead agent told ``teammate_terminated``;
- members whose process died are reaped every few seconds with the same effects;
- on PostgreSQL, the team's history is pruned every hour (`protocols.pg.retention.Pruner`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from protocols.errors import ProtocolsError
from protocols.inbox.entry import InboxEntry
from protocols.messages.models import (
    IdleNotification,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
    TeammateTerminated,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store.selection import open_store
from protocols.watch.wakeup import InboxWatcher
from swarm.team import approvals as requests_mod
from swarm.team import members as members_mod
from swarm.team import request_text
from swarm.team.actions import send_shutdown_request
from swarm.team.approvals import Pending, describe_request, is_request
from swarm.team.lifecycle import NotRemoved, finish_shutdown
from swarm.team.signatures import lead_mailbox
from swarm.views.message_text import idle_facts
from teammate.permissions.policy import Rule, parse_rule

REAP_EVERY_S = 2.0
EventKind = Literal[
    "message", "idle", "request", "auto_answered", "terminated", "rejected", "malformed", "other"
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeadEvent:
    kind: EventKind
    member: str
    text: str  # for a person, escaped where it quotes a request; a request's details below
    color: str | None = None
    entry: InboxEntry | None = None
    request: Pending | None = None

    @property
    def for_agent(self) -> bool:
        """Whether the lead agent should hear of it (it does not decide requests itself)."""
        return self.kind in (
            "message",
            "idle",
            "terminated",
            "rejected",
            "auto_answered",
            "request",
        )


class AutoPolicy:
    """The team file's ``lead.auto_approve`` / ``auto_deny`` rules (deny wins)."""

    def __init__(self, approve: list[str], deny: list[str], cwd: Path) -> None:
        self.approve: list[Rule] = [parse_rule(r) for r in approve]
        self.deny: list[Rule] = [parse_rule(r) for r in deny]
        self.cwd = cwd

    def decide(self, pending: Pending) -> bool | None:
        """True: approve; False: deny; None: ask the human."""
        if pending.kind != "permission_request":
            return None
        if any(r.matches(pending.tool, pending.input, self.cwd) for r in self.deny):
            return False
        if any(r.matches(pending.tool, pending.input, self.cwd) for r in self.approve):
            return True
        return None


class Leader:
    def __init__(self, paths: TeamPaths, auto: AutoPolicy | None = None) -> None:
        self.paths = paths
        self.mailbox = lead_mailbox(paths)
        self.team = open_store(paths).team_file()
        self.board = open_store(paths).task_board()
        self.auto = auto
        # every inbox: what members send each other is recorded before a Claude Code reader
        # (2.1.160 and later) deletes it (`Mailbox.observe_team`)
        store = open_store(paths)
        self.watcher: Any = (
            InboxWatcher(paths.inbox(LEAD_NAME), directories=(paths.inboxes,))
            if store.kind == "files"
            else store.watcher([LEAD_NAME])  # PostgreSQL: its notifications
        )
        self._reaped_at = 0.0
        self.pruner = store.history_pruner(log.warning)  # None: files prune nothing

    def __enter__(self) -> Leader:
        self.watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.watcher.stop()

    def wait(self, timeout: float) -> bool:
        """Sleep until the lead's inbox changes (or `timeout`); True if it did."""
        return self.watcher.wait(timeout)

    def wake(self) -> None:
        """Make `wait` return now (another thread has something for the loop)."""
        self.watcher.changed.set()

    def events(self) -> list[LeadEvent]:
        """What arrived since the last call, with the protocol work done; reaps the dead."""
        self.watcher.clear()
        self.mailbox.observe_team()
        entries = self.mailbox.read_unread(LEAD_NAME)
        events = [self._event(entry) for entry in entries]
        self.mailbox.mark_read(LEAD_NAME, entries)
        if time.monotonic() - self._reaped_at > REAP_EVERY_S:
            self._reaped_at = time.monotonic()
            members_mod.reap(self.paths)  # each reaped member sends teammate_terminated
            if self.pruner is not None:
                self.pruner.maybe()
        return [e for e in events if e is not None]

    def answer(
        self,
        request_id: str,
        approve: bool,
        text: str | None = None,
        updated_input: dict[str, Any] | None = None,
        permission_mode: str | None = None,
        by: str = "swarm lead",
    ) -> Pending:
        return requests_mod.answer(
            self.paths,
            request_id,
            approve=approve,
            text=text,
            updated_input=updated_input,
            permission_mode=permission_mode,
            by=by,
        )

    def ask_shutdown(self, name: str, reason: str | None = None) -> str:
        """Send `name` a shutdown request; its answer arrives as an event. Returns the id."""
        return send_shutdown_request(self.paths, name, reason)

    def pending(self) -> list[Pending]:
        return requests_mod.pending_requests(self.paths)

    def _event(self, entry: InboxEntry) -> LeadEvent | None:
        who, color = entry.from_, entry.color
        plain, message = first_look(entry)
        if plain is not None:
            return plain
        if is_request(message):
            return self._request(entry, message)
        if isinstance(message, IdleNotification):
            return LeadEvent("idle", who, idle_text(message), color, entry)
        if isinstance(message, ShutdownApproved):
            if message.from_ != who or not self._asked_to_stop(who, message.requestId):
                text = f"ignored a shutdown_approved ({message.requestId}) that answers no "
                text += f"shutdown request of the lead's to {who}"
                return LeadEvent("malformed", who, text, color, entry)
            member = self.team.load().member(who)
            try:
                released = finish_shutdown(self.paths, member) if member is not None else []
            except NotRemoved as exc:  # stopped, still listed: `swarm down` finishes it
                return LeadEvent("terminated", who, str(exc), color, entry)
            note = TeammateTerminated(
                message=f"{who} has shut down; tasks returned to pending: "
                f"{', '.join('#' + i for i in released) or 'none'}"
            )
            return LeadEvent("terminated", who, note.message, color, entry)
        if isinstance(message, ShutdownRejected):
            return LeadEvent(
                "rejected", who, f"refused to shut down: {message.reason}", color, entry
            )
        if isinstance(message, TeammateTerminated) and who == LEAD_NAME:
            return LeadEvent("terminated", who, message.message, color, entry)
        return LeadEvent("other", who, f"{message.type}", color, entry)

    def _asked_to_stop(self, name: str, request_id: str) -> bool:
        """Did the lead send `name` the shutdown request `request_id`?"""
        return any(
            e.from_ == LEAD_NAME and isinstance(m, ShutdownRequest) and m.requestId == request_id
            for e, m in requests_mod.structured(self.mailbox.peek_all(name))
        )

    def _request(self, entry: InboxEntry, message: Any) -> LeadEvent:
        pending = describe_request(entry, message)
        who = pending.teammate
        verdict = self.auto.decide(pending) if self.auto is not None else None
        if verdict is not None:
            reason = None if verdict else "denied by the team's rules"
            try:
                self.answer(pending.id, verdict, reason, by="the team's rules")
            except requests_mod.AlreadyAnswered as exc:
                return LeadEvent("other", who, str(exc), entry.color, entry, pending)
            said = "approved" if verdict else "denied"
            text = f"{said} by the team's rules: {request_summary(pending)}"
            return LeadEvent("auto_answered", who, text, entry.color, entry, pending)
        text = f"asks: {request_summary(pending)} [{printable_line(pending.id)}]"
        if pending.agent is not None:  # the member asks for one of its sub-agents
            text = f"asks for {printable_line(pending.agent)}: {text.removeprefix('asks: ')}"
        text = "\n".join([text, *request_text.details(pending)])
        return LeadEvent("request", who, text, entry.color, entry, pending)


def first_look(entry: InboxEntry) -> tuple[LeadEvent | None, Any]:
    """What the lead's console makes of `entry` before any of the lead's work: the event of a
    malformed message, of plain text, of a request sent in another member's name (ignored);
    else (None, its structured message) for the caller to judge."""
    who, color = entry.from_, entry.color
    try:
        message = entry.structured()
    except ProtocolsError as exc:
        return LeadEvent("malformed", who, f"malformed message: {exc}", color, entry), None
    if message is None:
        return LeadEvent("message", who, entry.text, color, entry), None
    if is_request(message) and not requests_mod.genuine(entry, message):
        claimed = describe_request(entry, message).teammate
        text = f"ignored a {message.type} in the name of {claimed!r}: only {claimed!r} may"
        return LeadEvent("malformed", who, text, color, entry), None
    return None, message


def idle_text(note: IdleNotification) -> str:
    """An idle notification on the console: what became of its task (`idle_facts`), idle."""
    if note.completedTaskId:
        return f"{idle_facts(note)}; idle"
    if note.idleReason == "failed":
        return idle_facts(note)
    return f"idle{': ' + note.summary if note.summary else ''}"


def request_summary(pending: Pending) -> str:
    """``Bash: <the full command>``: the tool and the real input, escaped (never the
    description the teammate wrote, which may lie; see `swarm.team.request_text`)."""
    return request_text.ask_line(pending)


def agent_entries(events: list[LeadEvent]) -> list[InboxEntry]:
    """The events the lead agent hears of, as inbox entries (rendered as ``<teammate-message>``
    blocks): messages and idle notifications as sent, the rest as one line."""
    return [
        InboxEntry.model_validate(
            {
                "from": e.member,
                "text": e.entry.text
                if e.entry is not None and e.kind in ("message", "idle")
                else e.text,
                "timestamp": e.entry.timestamp if e.entry is not None else "",
                "color": e.color,
            }
        )
        for e in events
        if e.for_agent
    ]
