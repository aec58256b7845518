"""A protocol message as a person reads it, the same in `swarm status`, `swarm watch` and
`swarm inbox`: ``<type>: <key facts>`` (``idle_notification: completed #3``,
``permission_request: Bash: rm -rf build``), never the raw JSON a teammate wrote.

A permission request is shown by what it would act on (`request_text.target`), not by the
summary its sender wrote about it. The facts are raw text: callers escape them
(`protocols.printable`) as they print.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocols.errors import ProtocolsError
from protocols.printable import printable_line
from swarm.team.request_text import target

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry


def idle_facts(m: Any) -> str:
    """What an ``idle_notification`` says of its task, in the words the board uses for task
    states: ``completed #3``, or ``failed #3: why`` (Claude Code's ``blocked``, a turn that
    ended before its task did, leaves the task failed on the board too); else why it is
    idle."""
    why = f": {m.failureReason}" if m.failureReason else ""
    if m.completedTaskId:
        word = IDLE_WORDS.get(m.completedStatus or "resolved", str(m.completedStatus))
        return f"{word.format(id=m.completedTaskId)}{why}"
    if m.idleReason == "failed":
        return f"failed{why or ': no reason given'}"
    return f"{m.idleReason or 'idle'}{': ' + m.summary if m.summary else ''}{why}"


# an idle_notification's completedStatus (Claude Code's words) in the board's words
IDLE_WORDS = {
    "resolved": "completed #{id}",
    "blocked": "failed #{id}",
    "failed": "failed #{id}",
}


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


_FACTS: dict[str, Callable[[Any], str]] = {
    "idle_notification": idle_facts,
    "shutdown_request": lambda m: m.reason or "",
    "shutdown_approved": lambda m: "",
    "shutdown_rejected": lambda m: m.reason,
    "plan_approval_request": lambda m: _clip(m.planContent),
    "plan_approval_response": lambda m: "approved" if m.approved else f"rejected: {m.feedback}",
    "permission_request": lambda m: (
        f"{m.tool_name}: {printable_line(target(m.tool_name, m.input))}"
    ),
    "permission_response": lambda m: "approved" if m.approved else f"denied: {m.error}",
    "sandbox_permission_request": lambda m: f"network {m.hostPattern.host}",
    "sandbox_permission_response": lambda m: f"{m.host} {'allowed' if m.allow else 'denied'}",
    "task_assignment": lambda m: f"#{m.taskId} {m.subject}",
    "teammate_terminated": lambda m: m.message,
    "mode_set_request": lambda m: m.mode,
    "team_permission_update": lambda m: m.toolName,
    "compact_request": lambda m: _clip(m.instructions or ""),
}


def facts(message: Any) -> str:
    """The key facts of a structured message (``completed #3``); may be empty."""
    return str(_FACTS.get(message.type, lambda m: "")(message) or "").strip().strip(":").strip()


def describe(message: Any) -> str:
    """A structured message as ``<type>: <key facts>``, e.g. ``idle_notification: completed #3
    (resolved)``."""
    said = facts(message)
    return f"{message.type}: {said}" if said else message.type


def entry_text(entry: InboxEntry) -> str:
    """What an inbox entry says, for `swarm inbox`: a plain message's text; a protocol message
    as ``[<type>] <key facts>``; one whose JSON is a known type with invalid fields as
    ``[invalid] <its text>``."""
    try:
        message = entry.structured()
    except ProtocolsError:
        return f"[invalid] {entry.text}"
    if message is None:
        return entry.text
    return f"[{message.type}] {facts(message)}".rstrip()
