"""The one small interface between the teammate runtime and whatever does the thinking.

The runtime (`teammate.runtime`) owns the lifecycle: inbox, shutdown, claiming, reporting.
A brain only decides: how to work on a claimed task, what to say to a plain message, and
whether to accept a shutdown request. The offline `ShellBrain` runs commands; the Claude brain
(a later issue) will call a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from protocols.inbox import InboxEntry
from protocols.messages import ShutdownRequest
from protocols.task import Task


@dataclass(frozen=True)
class Outcome:
    """What became of a task: ``resolved`` (completed) or ``failed`` (left in progress)."""

    status: Literal["resolved", "failed"]
    summary: str
    report: str = ""  # longer text for the lead, e.g. the tail of a command's output
    metadata: dict[str, Any] = field(default_factory=dict)  # stored on the task


@dataclass(frozen=True)
class Approval:
    approved: bool
    reason: str = ""
    updated_input: dict[str, Any] | None = None


# asks the lead for permission to use a tool: (tool name, tool input, description) -> answer
AskLead = Callable[[str, dict[str, Any], str], Approval]


class Brain(Protocol):
    def work(self, task: Task, ask: AskLead) -> Outcome:
        """Do the task; use `ask` for anything that needs the lead's approval."""
        ...

    def reply_to(self, entry: InboxEntry) -> str | None:
        """The answer to a plain message (None: no answer)."""
        ...

    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        """Whether to stop now; the reason is sent with a refusal."""
        ...
