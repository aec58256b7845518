"""How a name that is not a member now left the team, and when: for the error of a message sent
to a member that was shut down (`swarm send`, the console's ``/send``), instead of a bare "no
member named".

A member's entry is gone once it is removed, but the team's message history is kept (every
message is in the append-only record beside its inbox, which outlives the member), and it
says who left:

- the lead's history holds the member's own ``shutdown_approved`` (sent as the member, about
  itself) when it agreed to shut down, and the lead's ``teammate_terminated`` note ("NAME has
  stopped ...") when it was reaped after its process died;
- the member's own history holds the lead's ``shutdown_request`` when it was stopped without
  answering (``swarm shutdown --force``, ``swarm down``).

The latest of these, in that order of trust, is the answer; none means the name was never a
member as far as the history shows (a misspelling: the caller keeps its did-you-mean).
"""

from __future__ import annotations

from datetime import UTC, datetime

from protocols.clock import ms_from_iso, now_ms
from protocols.errors import ProtocolsError
from protocols.inbox.entry import InboxEntry
from protocols.messages.models import (
    ShutdownApproved,
    ShutdownRequest,
    StructuredMessage,
    TeammateTerminated,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store


def departure(paths: TeamPaths, name: str) -> str | None:
    """How `name` left the team, with when (``shut down at 2026-01-05 14:03:12 UTC (4m ago);
    it agreed to a shutdown request``), or None when the history shows no departure of it."""
    if name in ("*", LEAD_NAME):
        return None
    mailbox = open_store(paths).mailbox()
    try:
        lead = mailbox.peek_all(LEAD_NAME)
    except (OSError, ProtocolsError):
        lead = []
    for entry in reversed(lead):
        message = _structured(entry)
        if isinstance(message, ShutdownApproved) and entry.from_ == name == message.from_:
            return f"it shut down {_when(entry.timestamp)}, agreeing to the lead's request"
        if (
            isinstance(message, TeammateTerminated)
            and entry.from_ == LEAD_NAME
            and message.message.startswith(f"{name} has ")
        ):
            return f"it was removed {_when(entry.timestamp)}: {message.message}"
    try:
        own = mailbox.peek_all(name)
    except (OSError, ProtocolsError):
        return None
    for entry in reversed(own):
        message = _structured(entry)
        if isinstance(message, ShutdownRequest) and entry.from_ == LEAD_NAME:
            return f"it was asked to shut down {_when(entry.timestamp)} and stopped"
    return None


def _structured(entry: InboxEntry) -> StructuredMessage | None:
    try:
        return entry.structured()
    except ProtocolsError:
        return None


def _when(timestamp: str) -> str:
    """``at 2026-01-05 14:03:12 UTC (4m ago)``; ``at an unknown time`` when it does not parse."""
    ms = ms_from_iso(timestamp)
    if ms is None:
        return "at an unknown time"
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    seconds = max(0, (now_ms() - ms) // 1000)
    if seconds < 60:
        ago = f"{seconds}s"
    elif seconds < 3600:
        ago = f"{seconds // 60}m"
    elif seconds < 86400:
        ago = f"{seconds / 3600:.1f}h"
    else:
        ago = f"{seconds / 86400:.1f}d"
    return f"at {moment} ({ago} ago)"
