"""What one member said and did, for the page: its messages as one thread, and its log.

``GET /api/members/NAME/thread``: every message the member was sent (its inbox, with swarm's
record of what its reader deleted: `Mailbox.peek_all`) and every message it sent (the others'
inboxes, a broadcast once with all its recipients), oldest first, the newest `THREAD_MOST`.
``GET /api/members/NAME/log?lines=N&process=1``: the last N lines of what ``swarm logs NAME``
shows (`swarm.views.logs.ActivityLog`: its transcript and messages by time), or with
``process=1`` of ``swarm logs NAME --process`` (its output log, ``teams/<team>/logs/NAME.log``);
on a PostgreSQL team, what its process shipped to the store (`swarm.views.store_logs`), as
``swarm logs`` reads it there.

Both are read-only and may be hostile (a member writes them): they go to the page as JSON text,
each line also escaped as ``swarm logs`` prints it (``line``), and the page shows them with
``textContent``.
"""

from __future__ import annotations

import math
from typing import Any

from protocols.clock import ms_from_iso
from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME, checked_component
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.views.log_lines import LogEvent, message_text
from swarm.views.logs import ActivityLog, ProcessLog
from swarm.web.responses import BadInput

THREAD_MOST = 300  # the newest messages of a thread shown
LOG_LINES = 200  # the log lines shown unless the page asks for more
LOG_MOST = 5_000


def _member(paths: TeamPaths, name: str) -> str:
    """`name`, if it names a member of the team (the lead included)."""
    checked_component(name, "member")  # InvalidName: a 400
    names = open_store(paths).team_file().member_names()
    if name != LEAD_NAME and name not in names:
        raise BadInput(
            f"{name!r} is not a member of team {paths.team!r}; members: {', '.join(names)}"
        )
    return name


def thread(paths: TeamPaths, name: str) -> dict[str, Any]:
    """Member `name`'s messages in and out, oldest first."""
    _member(paths, name)
    mailbox = open_store(paths).mailbox()
    owners = [n for n in open_store(paths).team_file().member_names() if n != name]
    if LEAD_NAME not in owners and name != LEAD_NAME:
        owners.append(LEAD_NAME)
    shown: list[dict[str, Any]] = []
    for entry in mailbox.peek_all(name):
        shown.append(_message(entry, "in", entry.from_, [name]))
    sent: dict[tuple[str, str], dict[str, Any]] = {}
    for owner in owners:
        try:
            entries = mailbox.peek_all(owner)
        except ProtocolsError:
            continue  # one broken inbox hides none of the rest
        for entry in entries:
            if entry.from_ != name:
                continue
            key = (entry.timestamp, entry.text)
            if key in sent:  # a broadcast: one message, several recipients
                sent[key]["to"].append(owner)
            else:
                sent[key] = _message(entry, "out", name, [owner])
    shown += sent.values()
    shown.sort(key=lambda m: ms_from_iso(m["ts"]) or math.inf)  # stable: ties keep their order
    return {"member": name, "messages": shown[-THREAD_MOST:], "total": len(shown)}


def _message(entry: Any, direction: str, sender: str, to: list[str]) -> dict[str, Any]:
    try:
        structured = entry.structured()
    except ProtocolsError:
        structured = None
    return {
        "ts": entry.timestamp,
        "direction": direction,
        "from": sender,
        "to": to,
        "kind": structured.type if structured is not None else "message",
        # a plain message in full; a protocol message as `swarm logs` says it
        "text": entry.text if structured is None else message_text(entry),
        "summary": entry.summary,
    }


def member_log(paths: TeamPaths, name: str, query: dict[str, str]) -> dict[str, Any]:
    """The last lines of member `name`'s log, as ``swarm logs NAME [-n N] [--process]``."""
    _member(paths, name)
    lines = _lines(query.get("lines"))
    process = query.get("process", "") in ("1", "true", "yes")
    source: Any
    note = None
    if paths.store is not None:
        from swarm.views.store_logs import StoreActivityLog, StoreProcessLog

        source = StoreProcessLog(paths, name) if process else StoreActivityLog(paths, name)
    elif process:
        source = ProcessLog(paths, name)
    else:
        source = ActivityLog(paths, name)
    note = getattr(source, "note", None)
    events: list[LogEvent] = source.poll()
    return {
        "member": name,
        "process": process,
        "note": note,
        "total": len(events),
        "lines": [{**e.to_json(), "line": e.line()} for e in events[-lines:]] if lines else [],
    }


def _lines(given: str | None) -> int:
    if given is None or given == "":
        return LOG_LINES
    if not given.isascii() or not given.isdigit() or not 1 <= int(given) <= LOG_MOST:
        raise BadInput(f"lines={given!r}: give a number of lines from 1 to {LOG_MOST:,}")
    return int(given)
