"""Requests waiting for the lead: listing them and answering them.

A request is pending while no answer to it exists: ``permission_request``,
``sandbox_permission_request`` and ``plan_approval_request`` messages in the ``team-lead`` inbox
(live or archived) whose id has no response in the requester's inbox, and the legacy files in
``permissions/pending``. Answering sends the response the protocol asks for (or resolves the
legacy file) and marks the lead's copy of the request read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocols.clock import ms_from_iso, now_iso
from protocols.correlation import request_id_of
from protocols.errors import ProtocolsError
from protocols.inbox import InboxEntry
from protocols.mailbox import Mailbox
from protocols.messages import (
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    SandboxPermissionRequest,
    SandboxPermissionResponse,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.permissions import PermissionStore, permission_response

REQUEST_TYPES = (PermissionRequest, SandboxPermissionRequest, PlanApprovalRequest)
RESPONSE_TYPES = (PermissionResponse, SandboxPermissionResponse, PlanApprovalResponse)


class RequestNotFound(ProtocolsError):
    """No pending request has that id."""


@dataclass(frozen=True)
class Pending:
    id: str
    kind: str  # permission_request | sandbox_permission_request | plan_approval_request | file
    teammate: str
    tool: str
    input: dict[str, Any]
    description: str
    created_ms: int | None
    message: Any = None  # the structured request, or the legacy file record
    entry: InboxEntry | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "teammate": self.teammate,
            "tool": self.tool,
            "input": self.input,
            "description": self.description,
            "createdAt": self.created_ms,
        }


def describe_request(entry: InboxEntry, message: Any) -> Pending:
    created = ms_from_iso(entry.timestamp)
    if isinstance(message, PermissionRequest):
        return Pending(
            message.request_id,
            message.type,
            message.agent_id,
            message.tool_name,
            message.input,
            message.description,
            created,
            message,
            entry,
        )
    if isinstance(message, SandboxPermissionRequest):
        host = message.hostPattern.host
        return Pending(
            message.requestId,
            message.type,
            message.workerName,
            "network",
            {"host": host},
            f"connect to {host}",
            message.createdAt,
            message,
            entry,
        )
    return Pending(
        message.requestId,
        message.type,
        message.from_,
        "ExitPlanMode",
        {"planFilePath": message.planFilePath},
        message.planContent,
        created,
        message,
        entry,
    )


def _structured(entries: list[InboxEntry]) -> list[tuple[InboxEntry, Any]]:
    result = []
    for entry in entries:
        try:
            message = entry.structured()
        except ProtocolsError:
            continue
        if message is not None:
            result.append((entry, message))
    return result


def pending_requests(paths: TeamPaths, lead: list[InboxEntry] | None = None) -> list[Pending]:
    """Requests to the lead with no answer from the lead yet, oldest first. Reads only (no
    locks, no writes); `lead` is the lead's archive + inbox when the caller already has it."""
    mailbox = Mailbox(paths)
    lead = mailbox.peek_all(LEAD_NAME) if lead is None else lead
    asked = [(e, m) for e, m in _structured(lead) if isinstance(m, REQUEST_TYPES)]
    answered: set[str] = set()
    members = set(mailbox.team.member_names())
    for name in {describe_request(e, m).teammate for e, m in asked} & members:
        theirs = mailbox.peek_all(name)
        answered |= {  # only the lead's answers count, as they do for the teammate
            request_id_of(m)
            for e, m in _structured(theirs)
            if isinstance(m, RESPONSE_TYPES) and e.from_ == LEAD_NAME
        }
    found: dict[str, Pending] = {}
    for entry, message in asked:
        pending = describe_request(entry, message)
        if pending.id not in answered:
            found.setdefault(pending.id, pending)
    for record in PermissionStore(paths).pending():
        found.setdefault(
            record.id,
            Pending(
                record.id,
                "file",
                record.workerName,
                record.toolName,
                record.input,
                record.description,
                record.createdAt,
                record,
            ),
        )
    return sorted(found.values(), key=lambda p: p.created_ms or 0)


def answer(
    paths: TeamPaths,
    request_id: str,
    *,
    approve: bool,
    text: str | None = None,
    updated_input: dict[str, Any] | None = None,
    permission_mode: str | None = None,
) -> Pending:
    """Approve or deny the pending request `request_id`; `text` is feedback or the reason.
    An approved plan switches the teammate to `permission_mode` (None: the mode it was
    started with)."""
    pending = next((p for p in pending_requests(paths) if p.id == request_id), None)
    if pending is None:
        raise RequestNotFound(
            f"no pending request {request_id!r}; `swarm permissions` lists the ones waiting"
        )
    mailbox = Mailbox(paths)
    message = pending.message
    if pending.kind == "file":
        PermissionStore(paths).resolve(
            request_id,
            approved=approve,
            resolved_by=LEAD_NAME,
            feedback=text,
            updated_input=updated_input,
        )
        return pending
    if isinstance(message, PermissionRequest):
        response: Any = permission_response(
            request_id,
            approved=approve,
            updated_input=updated_input,
            error=text or "Permission denied by the lead",
        )
    elif isinstance(message, SandboxPermissionRequest):
        response = SandboxPermissionResponse(
            requestId=request_id, host=message.hostPattern.host, allow=approve, timestamp=now_iso()
        )
    elif approve:
        response = PlanApprovalResponse(
            requestId=request_id,
            approved=True,
            timestamp=now_iso(),
            permissionMode=permission_mode,
        )
    else:
        response = PlanApprovalResponse(
            requestId=request_id,
            approved=False,
            timestamp=now_iso(),
            feedback=text or "Plan rejected by the lead",
        )
    mailbox.send(pending.teammate, response, sender=LEAD_NAME)
    if pending.entry is not None:
        mailbox.mark_read(LEAD_NAME, [pending.entry])
    return pending
