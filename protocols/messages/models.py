"""Structured protocol messages (spec section 4): models, encode and decode.

A structured message travels as compact JSON inside an inbox entry's ``text``, fields in the
spec's order, keys without a value left out. `decode` turns a ``text`` back into a model:

- text that is not a JSON object, or a JSON object whose ``type`` is unknown, is a *plain*
  message: `decode` returns None;
- a known ``type`` with invalid fields raises `MessageValidationError` naming the type and the
  fields, so the caller can report it and keep the entry (never crash, never lose it).

Unknown extra keys on a known type are kept and re-encoded after the known ones.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from protocols.errors import MessageValidationError
from protocols.fs.jsonio import dumps_compact
from protocols.messages.shapes import typed_object
from protocols.values import PermissionMode as Mode

# a mode's text ("acceptEdits"), in these otherwise strict messages, read as the enum
PermissionMode = Annotated[Mode, Field(strict=False)]


class _Message(BaseModel):
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, frozen=True, strict=True, defer_build=True
    )

    def encode(self) -> str:
        """Compact JSON for an inbox entry's ``text``."""
        return dumps_compact(self.to_json_dict())

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class IdleNotification(_Message):
    type: Literal["idle_notification"] = "idle_notification"
    from_: str = Field(alias="from")
    timestamp: str
    idleReason: Literal["available", "interrupted", "failed"] | None = None
    summary: str | None = None
    completedTaskId: str | None = None
    completedStatus: Literal["resolved", "blocked", "failed"] | None = None
    failureReason: str | None = None


class ShutdownRequest(_Message):
    type: Literal["shutdown_request"] = "shutdown_request"
    requestId: str
    from_: str = Field(alias="from")
    reason: str | None = None
    timestamp: str


class ShutdownApproved(_Message):
    type: Literal["shutdown_approved"] = "shutdown_approved"
    requestId: str
    from_: str = Field(alias="from")
    timestamp: str
    paneId: str | None = None
    backendType: str | None = None


class ShutdownRejected(_Message):
    type: Literal["shutdown_rejected"] = "shutdown_rejected"
    requestId: str
    from_: str = Field(alias="from")
    reason: str
    timestamp: str


class PlanApprovalRequest(_Message):
    type: Literal["plan_approval_request"] = "plan_approval_request"
    from_: str = Field(alias="from")
    timestamp: str
    planFilePath: str
    planContent: str
    requestId: str


class PlanApprovalResponse(_Message):
    """Approve: ``approved`` true, ``permissionMode``; reject: ``approved`` false, ``feedback``.
    ``planDigest`` (Claude Code 2.1.323+): `protocols.team.signing.plan_digest` of the plan
    approved, which a teammate that checks signatures requires on an approval."""

    type: Literal["plan_approval_response"] = "plan_approval_response"
    requestId: str
    approved: bool
    feedback: str | None = None
    timestamp: str
    permissionMode: PermissionMode | None = None
    planDigest: str | None = None


class PermissionRequest(_Message):
    type: Literal["permission_request"] = "permission_request"
    request_id: str
    agent_id: str  # the worker's *name*, as Claude Code writes it
    tool_name: str
    tool_use_id: str
    description: str
    input: dict[str, Any]
    permission_suggestions: list[Any] = Field(default_factory=list)


class PermissionResponseBody(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True, defer_build=True)
    updated_input: dict[str, Any] | None = None
    permission_updates: list[Any] | None = None


class PermissionResponse(_Message):
    """Success: ``subtype`` "success" and a ``response``; error: ``subtype`` "error", ``error``."""

    type: Literal["permission_response"] = "permission_response"
    request_id: str
    subtype: Literal["success", "error"]
    response: PermissionResponseBody | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> PermissionResponse:
        if self.subtype == "success" and self.response is None:
            raise ValueError("a 'success' permission_response needs a 'response' object")
        if self.subtype == "error" and self.error is None:
            raise ValueError("an 'error' permission_response needs an 'error' string")
        return self

    @property
    def approved(self) -> bool:
        return self.subtype == "success"


class HostPattern(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True, defer_build=True)
    host: str


class SandboxPermissionRequest(_Message):
    type: Literal["sandbox_permission_request"] = "sandbox_permission_request"
    requestId: str
    workerId: str
    workerName: str
    workerColor: str | None = None
    hostPattern: HostPattern
    createdAt: int


class SandboxPermissionResponse(_Message):
    type: Literal["sandbox_permission_response"] = "sandbox_permission_response"
    requestId: str
    host: str
    allow: bool
    timestamp: str


class TaskAssignment(_Message):
    type: Literal["task_assignment"] = "task_assignment"
    taskId: str
    subject: str
    description: str
    assignedBy: str
    timestamp: str


class ModeSetRequest(_Message):
    type: Literal["mode_set_request"] = "mode_set_request"
    mode: PermissionMode
    from_: str = Field(alias="from")


class PermissionRule(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True, defer_build=True)
    toolName: str
    ruleContent: str | None = None


class PermissionUpdate(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True, defer_build=True)
    type: Literal["addRules"] = "addRules"
    rules: list[PermissionRule]
    behavior: Literal["allow", "deny", "ask"]
    destination: str = "session"


class TeamPermissionUpdate(_Message):
    type: Literal["team_permission_update"] = "team_permission_update"
    permissionUpdate: PermissionUpdate
    directoryPath: str
    toolName: str


class CompactRequest(_Message):
    """swarm's own (Claude Code has no such message): the lead asks a teammate to compact its
    conversation now (`swarm compact NAME`), with `instructions` for its summary. Only the
    lead may send it."""

    type: Literal["compact_request"] = "compact_request"
    from_: str = Field(alias="from")
    timestamp: str
    instructions: str | None = None


class TeammateTerminated(_Message):
    type: Literal["teammate_terminated"] = "teammate_terminated"
    message: str


MESSAGE_CLASSES: tuple[type[_Message], ...] = (
    IdleNotification,
    ShutdownRequest,
    ShutdownApproved,
    ShutdownRejected,
    PlanApprovalRequest,
    PlanApprovalResponse,
    PermissionRequest,
    PermissionResponse,
    SandboxPermissionRequest,
    SandboxPermissionResponse,
    TaskAssignment,
    ModeSetRequest,
    TeamPermissionUpdate,
    TeammateTerminated,
    CompactRequest,
)
MESSAGE_TYPES: frozenset[str] = frozenset(
    cls.model_fields["type"].default for cls in MESSAGE_CLASSES
)

StructuredMessage = Annotated[
    IdleNotification
    | ShutdownRequest
    | ShutdownApproved
    | ShutdownRejected
    | PlanApprovalRequest
    | PlanApprovalResponse
    | PermissionRequest
    | PermissionResponse
    | SandboxPermissionRequest
    | SandboxPermissionResponse
    | TaskAssignment
    | ModeSetRequest
    | TeamPermissionUpdate
    | TeammateTerminated
    | CompactRequest,
    Field(discriminator="type"),
]


@functools.cache
def _adapter() -> TypeAdapter[StructuredMessage]:
    """Built when first used: a command that never decodes a protocol message never pays."""
    return TypeAdapter(StructuredMessage)


def decode(text: str) -> StructuredMessage | None:
    """The structured message in `text`, or None if `text` is a plain message.

    Raises `MessageValidationError` for a known ``type`` with invalid fields.
    """
    value = typed_object(text)
    if value is None or value["type"] not in MESSAGE_TYPES:
        return None
    return from_dict(value)


def from_dict(value: dict[str, Any]) -> StructuredMessage:
    """Validate a decoded JSON object as a structured message (its ``type`` must be known)."""
    try:
        return _adapter().validate_python(value)
    except ValidationError as exc:
        raise MessageValidationError(
            f"invalid {value.get('type')!r} message: {_describe(exc)}"
        ) from None


def encode(message: StructuredMessage) -> str:
    return message.encode()


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(p) for p in error["loc"][1:]) or "(message)"
        parts.append(f"{location}: {error['msg']}")
    return "; ".join(parts)
