"""What a teammate does with the protocol messages in its inbox (`MessageControl`), and from whom
it takes them: a ``shutdown_request``, ``mode_set_request``, ``team_permission_update`` or
``compact_request`` counts only from the lead (the entry's sender and the message's own
``from``, and the lead's signature when the teammate checks signatures: `teammate.lead_check`);
one from anybody else is reported to the lead and ignored. A live shutdown request is handled
before anything else; one sent before this teammate joined was meant for a predecessor of the
same name and is ignored and reported. A message whose handling fails is set aside (marked read,
reported), never retried forever. Plain messages are handed back for the brain.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso
from protocols.errors import ProtocolsError
from protocols.inbox.entry import InboxEntry
from protocols.messages.correlation import is_stale
from protocols.messages.models import (
    CompactRequest,
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
from teammate.outbox import ENVIRONMENT_ERRORS
from teammate.trouble import describe

if TYPE_CHECKING:
    from teammate.runtime import Teammate


class MessageControl:
    """The protocol messages of one teammate's inbox, handled for it (`t`): its shutdown, its
    mode, its permissions, a compaction, and refusing what only the lead may ask."""

    def __init__(self, teammate: Teammate) -> None:
        self.t = teammate

    def handle_messages(self, entries: list[InboxEntry]) -> list[InboxEntry]:
        """Handle protocol messages, a live shutdown request first; return the plain ones
        (still unread: they are marked read once the brain has answered them). A message whose
        handling fails is set aside (marked read and reported), never retried forever."""
        decoded = [(e, self.decode(e)) for e in map(self.t.lead_check.checked, entries)]
        for entry, message in decoded:
            if isinstance(message, ShutdownRequest) and not entry.unverified:
                self.guarded(entry, functools.partial(self.on_shutdown, entry, message))
                if self.t.stopped:
                    return []
        plain = []
        for entry, message in decoded:
            if entry.unverified:  # not obeyed; a model sees it, marked verified="false"
                self.guarded(entry, functools.partial(self.on_forged, entry, message))
                plain.append(entry)
                continue
            if isinstance(message, ShutdownRequest):
                continue
            if message is None:
                self.t.say(f"message from {entry.from_}: {entry.text}")
                plain.append(entry)
                continue
            self.guarded(entry, functools.partial(self.on_protocol, entry, message))
        return plain

    def guarded(self, entry: InboxEntry, handle: Callable[[], None]) -> None:
        try:
            handle()
        except ENVIRONMENT_ERRORS:
            raise  # not the message's fault: the loop backs off and tries it again
        except Exception as exc:  # one bad message must not stop the teammate
            problem = describe(exc)
            self.t.say(
                f"set aside a message from {entry.from_} that could not be handled: {problem}"
            )
            self.t.mailbox.mark_read(self.t.name, [entry])
            self.t.tell_lead(
                f"{self.t.name} set aside a message from {entry.from_} that it could not handle "
                f"({problem}); it stays in its inbox archive",
                "set aside a message",
            )

    def decode(self, entry: InboxEntry) -> Any:
        try:
            return entry.structured()
        except ProtocolsError as exc:
            self.t.say(f"malformed message from {entry.from_} (kept in the inbox archive): {exc}")
            return None

    def on_protocol(self, entry: InboxEntry, message: Any) -> None:
        from_lead = self.from_lead(entry, message)
        if isinstance(message, ModeSetRequest | TeamPermissionUpdate | CompactRequest) and (
            not from_lead
        ):
            self.refuse(entry, message)
        elif isinstance(message, CompactRequest):
            self.t.compact_when_it_can(entry, message.instructions or "")
            return  # marked read once done: a crash before that leaves it to be done again
        elif isinstance(message, ModeSetRequest):
            self.t.set_mode(message.mode)
        elif isinstance(message, TeamPermissionUpdate):
            self.t.brain.update_permissions(
                [message.permissionUpdate.model_dump(exclude_none=True)]
            )
            self.t.say(f"the lead updated permissions: {message.permissionUpdate.rules}")
        elif isinstance(message, TaskAssignment):
            self.t.say(f"assigned task #{message.taskId}: {message.subject}")
        elif not isinstance(message, PermissionResponse | PlanApprovalResponse):
            self.t.say(f"ignoring a {message.type} from {entry.from_}")
        self.t.mailbox.mark_read(self.t.name, [entry])

    def from_lead(self, entry: InboxEntry, message: Any) -> bool:
        """Sent by the lead: the entry's sender, and the message's own ``from`` when it has one;
        and signed by the lead when this teammate checks signatures."""
        inner = getattr(message, "from_", None)
        trusted = self.t.lead_check.trusted(entry)
        return entry.from_ == LEAD_NAME and inner in (None, LEAD_NAME) and trusted

    def refuse(self, entry: InboxEntry, message: Any) -> None:
        """A request only the lead may make, from someone else: reported, not obeyed."""
        if self.t.lead_check.unsigned_lead(entry):
            note = (
                f"Ignored a {message.type} as {entry.from_} that does not carry the lead's "
                "signature (lead_sig): somebody else wrote it into my inbox."
            )
            summary = f"ignored an unsigned {message.type}"
        else:
            note = f"Ignored a {message.type} from {entry.from_}: only {LEAD_NAME} may send me one."
            summary = f"ignored a {message.type} from {entry.from_}"
        self.t.say(note)
        self.t.tell_lead(note, summary)

    def on_forged(self, entry: InboxEntry, message: Any) -> None:
        """A forged entry: said once; a protocol message in it is reported to the lead."""
        if not self.t.lead_check.first_report(entry):
            return
        if message is None:
            self.t.say(
                f"unverified message as {entry.from_} (not signed by the lead): {entry.text}"
            )
        elif isinstance(message, ShutdownRequest) and self.stale(message):
            self.ignore_stale(message)  # what it is, whatever its signature: from before
        else:
            self.refuse(entry, message)

    def set_aside_forged(self, entry: InboxEntry, message: Any) -> None:
        """A forged answer that came while waiting for the lead: reported and marked read; the
        request goes on waiting for the lead's own answer."""
        self.on_forged(entry, message)
        self.t.mailbox.mark_read(self.t.name, [entry])

    def answer_shutdown(self, entry: InboxEntry, request: ShutdownRequest) -> bool:
        """A shutdown request that came while waiting for the lead: True if it stops us."""
        self.on_shutdown(entry, request)
        return self.t.stopped

    def on_shutdown(self, entry: InboxEntry, request: ShutdownRequest) -> None:
        from_lead = self.from_lead(entry, request)  # before the mark: a read id verifies no more
        self.t.mailbox.mark_read(self.t.name, [entry])
        assert self.t.member is not None
        if not from_lead:
            self.refuse(entry, request)
            return
        if self.stale(request):
            self.ignore_stale(request)
            return
        accept, reason = self.t.brain.accept_shutdown(request)
        if not accept:
            self.t.say(f"refusing shutdown: {reason}")
            rejected = ShutdownRejected(
                requestId=request.requestId, from_=self.t.name, reason=reason, timestamp=now_iso()
            )
            self.t.send_message(LEAD_NAME, rejected)
            return
        released = self.t.board.release_all(self.t.name)
        member = self.t.current_member() or self.t.member
        approved = ShutdownApproved(
            requestId=request.requestId,
            from_=self.t.name,
            timestamp=now_iso(),
            paneId=member.tmuxPaneId or None,
            backendType=member.backendType or None,
        )
        self.t.send_message(LEAD_NAME, approved)
        self.t.say(
            f"shutting down ({request.reason or 'asked by the lead'}); released "
            f"{[t.id for t in released] or 'no tasks'}"
        )
        self.t.stopped = True

    def stale(self, request: ShutdownRequest) -> bool:
        return self.t.member is not None and is_stale(request, self.t.member.joinedAt)

    def ignore_stale(self, request: ShutdownRequest) -> None:
        note = (
            f"Ignored shutdown request {request.requestId}: it was sent before I joined "
            "(meant for an earlier teammate of my name)."
        )
        self.t.say(note)
        self.t.send_message(LEAD_NAME, note, summary="ignored a stale shutdown request")
