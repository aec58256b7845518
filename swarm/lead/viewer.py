"""`swarm lead` while another `swarm lead` leads the team: the lead's inbox seen, not led.

A team has one lead console at a time: `swarm lead` holds the lead's instance lock
(`teammate.instance.instance_lock` on ``team-lead``: a kernel lock, gone with its process, so a
lead killed with kill -9 leaves nothing locked) for as long as it runs. A second one finds the
lock held and becomes a `LeadView` instead of a `Leader`: it reads the lead's history
(`Mailbox.peek_recent`, the record beside the inbox: no lock, no write), shows each message once
as it arrives, and does none of the lead's work. It marks nothing read (the lead's console would
miss what it marked), answers no request, stops no member and reaps none; `answer` refuses. Its
console says so, refuses the commands that would change the team, and says when the leading
console has gone (its pid, from the lock file, is no longer alive), and how to lead then.
"""

from __future__ import annotations

from typing import Any

from protocols.inbox.entry import InboxEntry
from protocols.inbox.reading import entry_of
from protocols.messages.models import IdleNotification, ShutdownApproved, ShutdownRejected
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.printable import printable_line
from swarm.errors import SwarmError
from swarm.lead.inbox import Leader, LeadEvent, first_look, idle_text, request_summary
from swarm.team import request_text
from swarm.team.approvals import Pending, describe_request, is_request
from swarm.views.message_text import describe

REPLAYED = 20  # messages shown from before the viewer started
WINDOW = 200  # the newest messages looked at on each wake-up (more: the whole history)


class LeadView(Leader):
    """The lead's inbox as `Leader` shows it, read only; `holder` is the leading console's pid
    as its lock file says it."""

    def __init__(self, paths: TeamPaths, holder: str) -> None:
        super().__init__(paths, None)
        self.holder = holder
        self.shown: set[str] = set()
        self.started = False
        self.gone = False  # the leading console was seen gone (and that was said)

    @property
    def why(self) -> str:
        """Why this console only watches, for the person."""
        return printable_line(f"`swarm lead` pid {self.holder} leads team {self.paths.team!r}")

    def events(self) -> list[LeadEvent]:
        """What reached the lead since the last call (the last `REPLAYED` at the first call),
        read from its history without a lock; nothing marked, answered or reaped."""
        self.watcher.clear()
        first, self.started = not self.started, True
        recent = self.mailbox.peek_recent(LEAD_NAME, REPLAYED if first else WINDOW)
        fresh = [e for e in recent if e.identity not in self.shown]
        if not first and len(fresh) == len(recent) == WINDOW:  # more came: read it all
            history = self.mailbox.peek_plain(LEAD_NAME)
            fresh = [e for e in history if e.identity not in self.shown]
        self.shown.update(e.identity for e in fresh)
        entries = [_model(e) for e in fresh]
        waiting = {p.id for p in self.pending()} if entries else set()
        events = [_seen(e, waiting) for e in entries if e is not None]
        if not self.gone and not _alive(self.holder):
            self.gone = True
            said = (
                f"the leading `swarm lead` (pid {self.holder}) has quit: /quit here and run "
                "`swarm lead` again to lead the team"
            )
            events.append(LeadEvent("other", "swarm", printable_line(said)))
        return events

    def answer(self, request_id: str, approve: bool, *args: Any, **kwargs: Any) -> Pending:
        raise SwarmError(f"{self.why}; `swarm approve` or `swarm deny` answers from any terminal")

    def ask_shutdown(self, name: str, reason: str | None = None) -> str:
        raise SwarmError(self.why)


def _model(entry: Any) -> InboxEntry | None:
    """`entry` (read without the model, maybe) as an `InboxEntry`; None if it is not one."""
    if isinstance(entry, InboxEntry):
        return entry
    try:
        return entry_of(entry.raw)
    except (TypeError, ValueError):
        return None


def _seen(entry: InboxEntry, waiting: set[str]) -> LeadEvent:
    """`entry` as the lead's console shows it, with none of the lead's work done."""
    who, color = entry.from_, entry.color
    plain, message = first_look(entry)
    if plain is not None:
        return plain
    if is_request(message):
        pending = describe_request(entry, message)
        still = pending.id in waiting
        said = "asks" if still else "asked (answered since)"
        text = f"{said}: {request_summary(pending)} [{printable_line(pending.id)}]"
        text = "\n".join([text, *request_text.details(pending)])
        return LeadEvent("request" if still else "other", who, text, color, entry, pending)
    if isinstance(message, IdleNotification):
        return LeadEvent("idle", who, idle_text(message), color, entry)
    if isinstance(message, ShutdownApproved):
        return LeadEvent("other", who, "agreed to shut down", color, entry)
    if isinstance(message, ShutdownRejected):
        return LeadEvent("rejected", who, f"refused to shut down: {message.reason}", color, entry)
    return LeadEvent("other", who, describe(message), color, entry)


def _alive(pid: str) -> bool:
    """Whether the process `pid` (text from a lock file) runs; True when it says no pid."""
    return not pid.isdigit() or pid_alive(int(pid))
