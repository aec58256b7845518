"""What a teammate says, delivered even through a passing failure.

`Outbox.send` sends at once; when the mailbox cannot be written (a lock held too long, a full
disk) the message waits here, in order, and `flush` sends it on a later pass with the same
message id, so it is stored once: nothing the teammate says is lost, and a message never
overtakes an earlier one.

Between `hold` and `release` it keeps what is sent, and `release` sends it then, in order,
consecutive messages to one member in one write of its inbox (separate entries): a shell
worker's answer to a message and its idle notification reach the lead in one locked write
instead of two (with 200 teammates answering a broadcast at once, each write is a turn of the
lead's inbox lock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocols.errors import LockLost, LockTimeout, UnknownMember
from protocols.inbox.mailbox import new_message_id
from teammate.trouble import Trouble, describe

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract


# failures of the surroundings, not of a message: retried after a back-off, never set aside
ENVIRONMENT_ERRORS = (OSError, LockTimeout, LockLost)

Report = Callable[[Exception, float, bool], None]  # (error, retry delay, first time)
Message = tuple[str, Any, str | None, str]  # to, body, summary, message id


class Outbox:
    def __init__(
        self, mailbox: MailboxContract, sender: str, color: str | None, say: Callable[[str], None]
    ) -> None:
        self.mailbox = mailbox
        self.sender = sender
        self.color = color
        self.say = say
        self._waiting: list[Message] = []
        self._held: list[Message] | None = None  # between `hold` and `release`
        self._trouble = Trouble()
        self._retry_at = 0.0

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def holding(self) -> bool:
        return self._held is not None

    def hold(self) -> None:
        """Keep what is sent from now on until `release`."""
        if self._held is None:
            self._held = []

    def release(self) -> None:
        """Send what was held, in order: consecutive messages to one member in one write. What
        cannot be sent now waits for `flush`, as `send` keeps it."""
        held, self._held = self._held or [], None
        if self._waiting:  # never ahead of what already waits
            self._waiting.extend(held)
            return
        while held:
            to = held[0][0]
            run = next((n for n, m in enumerate(held) if m[0] != to), len(held))
            try:
                self._deliver_run(held[:run])
            except ENVIRONMENT_ERRORS as exc:
                self._waiting.extend(held)
                self.say(f"could not send to {to} now ({describe(exc)}); it goes out when it can")
                return
            del held[:run]

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        """Send now, or keep it (behind anything already waiting) for `flush`; while held,
        keep it for `release`."""
        message = (to, body, summary, new_message_id())
        if self._held is not None:
            self._held.append(message)
            return
        if self._waiting:
            self._waiting.append(message)
            return
        try:
            self._deliver(*message)
        except ENVIRONMENT_ERRORS as exc:
            self._waiting.append(message)
            self.say(f"could not send to {to} now ({describe(exc)}); it goes out when it can")

    def flush(self, report: Report) -> None:
        """Send what earlier passes could not, when its back-off allows; a failure goes to
        `report` and is retried later, and does not keep the teammate from its work."""
        if not self._waiting or time.monotonic() < self._retry_at:
            return
        try:
            while self._waiting:
                self._deliver(*self._waiting[0])
                self._waiting.pop(0)
        except ENVIRONMENT_ERRORS as exc:
            delay, new = self._trouble.failed(exc)
            self._retry_at = time.monotonic() + delay
            report(exc, delay, new)
            return
        self._trouble.cleared()
        self._retry_at = 0.0

    def _deliver_run(self, run: list[Message]) -> None:
        """Messages to one member: one write of its inbox (one transaction on PostgreSQL)."""
        to = run[0][0]
        if len(run) == 1:
            self._deliver(*run[0])
            return
        try:
            self.mailbox.post_many(
                to,
                [(body, summary, message_id) for _, body, summary, message_id in run],
                sender=self.sender,
                color=self.color,
            )
        except UnknownMember as exc:  # a member that left: nobody to keep them for
            self.say(f"could not send to {to}: {exc}")

    def _deliver(self, to: str, body: Any, summary: str | None, message_id: str) -> None:
        try:
            self.mailbox.send(
                to,
                body,
                sender=self.sender,
                summary=summary,
                color=self.color,
                message_id=message_id,
            )
        except UnknownMember as exc:  # a member that left: nobody to keep it for
            self.say(f"could not send to {to}: {exc}")
