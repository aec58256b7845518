"""Asking the lead and waiting for its answer: the permission and plan-approval protocols.

`LeadRequests` is held by the `Teammate` runtime, which passes a brain's `TeamLink` requests to
it. Only answers from ``team-lead`` that match the outstanding request id count (and, when the
teammate checks the lead's signatures, only signed ones: a forged answer is set aside and the
request goes on waiting; an approved plan must echo its ``planDigest``, else it counts as
rejected, as in Claude Code);
after ``--permission-timeout`` seconds without one the request counts as not approved. A live
``shutdown_request`` that arrives while waiting is answered at once, and if it is approved the
wait ends with `Interrupted`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso
from protocols.inbox.entry import InboxEntry
from protocols.inbox.permissions import request_permission
from protocols.messages.correlation import is_stale, plan_approval_request_id
from protocols.messages.models import (
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ShutdownRequest,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.team.signing import plan_digest
from protocols.values import MemberState
from teammate.link import Approval, Interrupted, PermissionAsk, PlanVerdict
from teammate.reporter import StatusReporter

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract


# Claude Code's words for an approval that does not name the plan it approves
PLAN_DIGEST_MISMATCH = (
    "The team lead's answer did not match this plan request, so it was not used. Call "
    "ExitPlanMode again to resubmit your plan for approval."
)


class LeadRequests:
    """Asks the lead on behalf of one teammate, which lends it what it needs: its name, paths,
    mailbox, status reporter and output, how to send (`Teammate`'s outbox), how to answer a
    shutdown request that arrives meanwhile (True: the teammate stops), its inbox watcher and
    when it joined (a shutdown request from before then is stale)."""

    def __init__(
        self,
        *,
        name: str,
        color: str | None,
        paths: TeamPaths,
        mailbox: MailboxContract,
        reporter: StatusReporter,
        say: Callable[[str], None],
        send: Callable[[str, Any], None],
        answer_shutdown: Callable[[InboxEntry, ShutdownRequest], bool],
        watcher: Callable[[], Any],  # the store's: InboxWatcher or PgWatcher
        joined_at: Callable[[], int],
        timeout_s: float,
        trusted: Callable[[InboxEntry], bool] = lambda entry: True,
        set_aside: Callable[[InboxEntry, Any], None] | None = None,
        checks_signatures: bool = False,
    ) -> None:
        self.name = name
        self.color = color
        self.paths = paths
        self.mailbox = mailbox
        self.reporter = reporter
        self.say = say
        self.send = send
        self.answer_shutdown = answer_shutdown
        self.watcher = watcher
        self.joined_at = joined_at
        self.timeout_s = timeout_s
        self.trusted = trusted
        self.set_aside = set_aside
        self.checks_signatures = checks_signatures

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        """The permission protocol: ask the lead and wait for its answer to this request."""
        description = ask.description
        request = request_permission(
            self.mailbox,
            worker=self.name,
            tool_name=ask.tool_name,
            tool_use_id=ask.tool_use_id or f"toolu_swarm_{secrets.token_hex(8)}",
            description=description,
            input=ask.tool_input,
            color=self.color,
            suggestions=ask.suggestions or [],
        )
        self.say(f"asked the lead for permission ({request.request_id}): {description}")
        self.reporter.set(MemberState.WAITING, f"waiting for permission: {description}")

        def answers(message: Any) -> bool:
            return (
                isinstance(message, PermissionResponse) and message.request_id == request.request_id
            )

        found = self._await_lead(answers)
        self.reporter.set(MemberState.WORKING, f"permission answered: {description}")
        if found is None:
            return Approval(False, self._no_answer("permission request"))
        message = found
        body = message.response
        self.say(f"permission {'granted' if message.approved else 'denied'}")
        return Approval(
            message.approved,
            message.error or "",
            body.updated_input if body is not None else None,
            list(body.permission_updates or []) if body is not None else [],
        )

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        """The plan approval protocol: send the plan to the lead and wait for the verdict."""
        request = PlanApprovalRequest(
            from_=self.name,
            timestamp=now_iso(),
            planFilePath=plan_file,
            planContent=plan,
            requestId=plan_approval_request_id(self.name, self.paths.team),
        )
        self.send(LEAD_NAME, request)
        self.say(f"sent my plan to the lead for approval ({request.requestId})")
        self.reporter.set(MemberState.WAITING, "waiting for plan approval")

        def answers(message: Any) -> bool:
            return (
                isinstance(message, PlanApprovalResponse) and message.requestId == request.requestId
            )

        found = self._await_lead(answers)
        self.reporter.set(MemberState.WORKING, "plan answered")
        if found is None:
            return PlanVerdict(False, self._no_answer("plan approval request"))
        if self.checks_signatures and found.approved and found.planDigest != plan_digest(plan):
            self.say(f"plan approval {found.requestId} does not carry my plan's digest")
            return PlanVerdict(False, PLAN_DIGEST_MISMATCH)
        self.say(f"plan {'approved' if found.approved else 'rejected'}")
        return PlanVerdict(found.approved, found.feedback or "", found.permissionMode)

    def _await_lead(self, answers: Callable[[Any], bool]) -> Any | None:
        """Wait for the lead's answer (only messages from the lead count); None after the
        timeout. A live shutdown request is answered at once; if approved, `Interrupted`."""
        joined = self.joined_at()
        deadline = time.monotonic() + self.timeout_s

        def wanted(message: Any) -> bool:
            if isinstance(message, ShutdownRequest):
                return not is_stale(message, joined)
            return answers(message)

        while (left := deadline - time.monotonic()) > 0:
            found = self.mailbox.await_message(
                self.name, wanted, left, self.watcher(), mark=False, sender=LEAD_NAME
            )
            if found is None:
                continue
            entry, message = found
            if isinstance(message, ShutdownRequest):
                if self.answer_shutdown(entry, message):
                    raise Interrupted("shutdown approved while waiting for the lead")
                continue
            if not self.trusted(entry):  # a forged answer: the request goes on waiting
                if self.set_aside is not None:
                    self.set_aside(entry, message)
                else:
                    self.mailbox.mark_read(self.name, [entry])
                continue
            self.mailbox.mark_read(self.name, [entry])
            return message
        return None

    def _no_answer(self, what: str) -> str:
        return (
            f"no answer from {LEAD_NAME} to the {what} within "
            f"{self.timeout_s:g} s; it was not approved"
        )
