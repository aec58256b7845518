"""The interface between the teammate runtime and whatever does the thinking.

The runtime (`teammate.runtime`) owns the lifecycle: inbox, shutdown, claiming, reporting. A
`Brain` only decides: how to work on a claimed task, how to answer plain messages, and whether
to accept a shutdown request. The offline `ShellBrain` runs commands; `ClaudeBrain` runs an
agent loop over a model.

What a brain needs from the team it gets through a `TeamLink` (`teammate.link`), which the
runtime implements: asking the lead (permission, plan approval), sending messages, and, between
two model turns, the messages that arrived meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from protocols.inbox.entry import InboxEntry
from protocols.messages.models import ShutdownRequest
from protocols.tasks.model import Task
from teammate.link import Outcome, TeamLink

if TYPE_CHECKING:
    pass


class Brain(Protocol):
    def work(self, task: Task, link: TeamLink) -> Outcome:
        """Do the task; ask the lead through `link` for anything that needs approval."""
        ...

    def respond(self, entries: list[InboxEntry], link: TeamLink) -> Outcome | None:
        """Answer plain messages (the spawn prompt is the first); None: nothing to report."""
        ...

    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        """Whether to stop now; the reason is sent with a refusal."""
        ...

    def set_mode(self, mode: str) -> None:
        """The lead changed this teammate's permission mode."""
        ...

    def update_permissions(self, updates: list[dict[str, Any]]) -> None:
        """The lead added permission rules (``addRules`` / ``setMode`` updates)."""
        ...

    def notices_waiting(self) -> bool:
        """Whether the brain has something to take up without a message (a background
        sub-agent's notification): the runtime then calls `respond` with no entries."""
        ...

    def move_to(self, cwd: Path, confined: bool) -> None:
        """Work in `cwd` from now on (a task's worktree, and back); `confined` keeps file tools
        inside it."""
        ...

    def quick_answers(self) -> bool:
        """True if `respond` only sends messages, at once (no model request, no question to the
        lead, nothing it waits for): the runtime then holds what it sends until the turn ends
        and writes it with the turn's idle notification (one write of the lead's inbox)."""
        ...

    def defer(self, work: Callable[[], None]) -> bool:
        """Run `work` (the runtime's bookkeeping for a turn that starts) once this brain's first
        model request has been sent, so it does not delay it; False: the brain makes no such
        request (the runtime runs `work` itself, at once)."""
        ...

    def before_idle(self, link: TeamLink) -> Outcome | None:
        """About to go idle: run the TeammateIdle hooks, and work on while one blocks (bounded);
        the outcome of that extra work, if any."""
        ...

    def compact(self, instructions: str, link: TeamLink, now: bool) -> str:
        """The lead asked for a compaction of the conversation (`instructions` for its summary):
        `now` (the teammate is idle: a model call of its own) or before the next model request
        (it is in the middle of a turn). What to say of it."""
        ...

    def stop(self) -> None:
        """The teammate is stopping: end whatever the brain runs in the background."""
        ...
