"""What a brain (and whatever it runs: the agent loop, its tools and sub-agents) gets from the
team, through the runtime: `TeamLink` (asking the lead for a permission or a plan's approval,
sending messages, the messages that arrived between two model turns), and the values that cross
it: a task's `Outcome`, the lead's `Approval` and `PlanVerdict`, `Watched`, `Interrupted`. The
runtime (`teammate.runtime`) implements the link; `teammate.brains.base.Brain` is what uses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from protocols.inbox.entry import InboxEntry
from protocols.paths import TeamPaths

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract, TaskBoardContract


@dataclass(frozen=True)
class Outcome:
    """What became of a piece of work.

    ``resolved``: done (a task is completed). ``blocked``: stopped without finishing, the task
    stays in progress with its owner. ``failed``: could not work (an error; said why).
    """

    status: Literal["resolved", "blocked", "failed"]
    summary: str
    report: str = ""  # longer text for the lead, e.g. the tail of a command's output
    metadata: dict[str, Any] = field(default_factory=dict)  # stored on the task
    completed_by_brain: bool = False  # the brain already marked the task completed


@dataclass(frozen=True)
class PermissionAsk:
    """One question for the lead about a tool call, as it travels from the call through the links
    (a sub-agent's, its parent's, the runtime's) to the permission request in the lead's inbox:
    the tool, its input, a line a person reads, the call's id, and the rules the lead may add."""

    tool_name: str
    tool_input: dict[str, Any]
    description: str
    tool_use_id: str | None = None
    suggestions: list[dict[str, Any]] | None = None

    def by(self, who: str) -> PermissionAsk:
        """The same question, its description saying who asks (a sub-agent, through its parent)."""
        return dataclasses.replace(self, description=f"{who}: {self.description}")


@dataclass(frozen=True)
class Approval:
    approved: bool
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    permission_updates: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class PlanVerdict:
    approved: bool
    feedback: str = ""
    permission_mode: str | None = None


class Watched(Protocol):
    """A model call in progress (`teammate.agent.model_call.PendingCall`), as a link waits
    for it."""

    @property
    def done(self) -> bool: ...

    def on_change(self, waker: Callable[[], None]) -> None:
        """Call `waker` (from another thread) when the call is sent and when it ends."""
        ...

    def poll(self) -> None:
        """The waiting thread's part of the call's progress (run it after each wake-up)."""
        ...

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: until it ends); True if it has ended."""
        ...


class Interrupted(Exception):
    """The work must stop now (an approved shutdown); raised by `TeamLink.between_turns`."""


class TeamLink(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def color(self) -> str | None: ...

    @property
    def paths(self) -> TeamPaths: ...

    @property
    def mailbox(self) -> MailboxContract: ...

    @property
    def board(self) -> TaskBoardContract: ...

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        """Ask the lead; blocks until the matching answer or the timeout (then: denied)."""
        ...

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        """Send the plan to the lead and wait for the verdict."""
        ...

    def send(self, to: str, body: Any, summary: str | None = None) -> None: ...

    def between_turns(self) -> list[InboxEntry]:
        """Plain messages that arrived while working (now marked read); handles protocol
        messages itself, and raises `Interrupted` if a shutdown was approved."""
        ...

    def pause(self, seconds: float, why: str) -> None:
        """Wait `seconds` before retrying (`why` is shown in the status), answering protocol
        messages meanwhile; raises `Interrupted` if a shutdown was approved."""
        ...

    def watch(self, call: Watched, why: str) -> bool:
        """Wait for a model call in progress, doing meanwhile what the agent does while it
        waits (a teammate answers protocol messages: a shutdown at once). True once the call
        has ended; False to abandon it (its agent was stopped). Raises `Interrupted` if a
        shutdown was approved meanwhile (the caller abandons the call)."""
        ...

    def wait_command(self, command: Watched, seconds: float, why: str) -> str:
        """Wait up to `seconds` for a command the agent runs in the foreground, doing meanwhile
        what the agent does while it waits. ``done``: it ended; ``timeout``; ``message``: a
        message arrived for the agent (the command goes to the background so that it can be
        taken up); ``stop``: the agent is being stopped. Raises `Interrupted` if a shutdown
        was approved meanwhile."""
        ...

    def wake(self) -> None:
        """Something for the brain arrived outside the inbox (a background sub-agent ended):
        an idle agent runs a pass for it soon (any thread)."""
        ...
