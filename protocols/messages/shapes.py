"""The shapes (`protocols.records.plain`) of the structured messages (`protocols.messages.models`),
and `typed_object`: whether a text is a structured message at all (`decode_plain`, in
`protocols.messages.decoding`, decodes one without pydantic when it is plainly one).

Each shape mirrors its model field for field (strict, as the models are: exactly the JSON type,
a `Literal` one of its values); `tests/unit/test_plain.py` holds them together. A message that
is not plain (a field of another type, a nested record that is not plain) is decoded by the
model, as `decode` always did, with the same error for a bad one.
"""

from __future__ import annotations

import json
from typing import Any

from protocols.records.plain import (
    BOOL,
    DICT,
    INT,
    LIST,
    STR,
    Field,
    Shape,
    one_of,
    optional,
)
from protocols.values import PermissionMode

OPT_STR = optional(STR)
MODE = one_of(*PermissionMode)


def _kind(name: str) -> Field:
    return Field(one_of(name), name)


HOST_PATTERN = Shape("HostPattern", host=Field(STR))
PERMISSION_RESPONSE_BODY = Shape(
    "PermissionResponseBody",
    updated_input=Field(optional(DICT), None),
    permission_updates=Field(optional(LIST), None),
)
PERMISSION_RULE = Shape("PermissionRule", toolName=Field(STR), ruleContent=Field(OPT_STR, None))
PERMISSION_UPDATE = Shape(
    "PermissionUpdate",
    type=_kind("addRules"),
    rules=Field(shape=PERMISSION_RULE, many=True),
    behavior=Field(one_of("allow", "deny", "ask")),
    destination=Field(STR, "session"),
)


def _answered_as_said(raw: dict[str, Any]) -> bool:
    """`PermissionResponse._shape`: a success carries a response, an error its error."""
    if raw["subtype"] == "success":
        return raw.get("response") is not None
    return raw.get("error") is not None


SHAPES: dict[str, Shape] = {
    shape.fields["type"].default: shape
    for shape in (
        Shape(
            "IdleNotification",
            type=_kind("idle_notification"),
            from_=Field(STR, key="from"),
            timestamp=Field(STR),
            idleReason=Field(optional(one_of("available", "interrupted", "failed")), None),
            summary=Field(OPT_STR, None),
            completedTaskId=Field(OPT_STR, None),
            completedStatus=Field(optional(one_of("resolved", "blocked", "failed")), None),
            failureReason=Field(OPT_STR, None),
        ),
        Shape(
            "ShutdownRequest",
            type=_kind("shutdown_request"),
            requestId=Field(STR),
            from_=Field(STR, key="from"),
            reason=Field(OPT_STR, None),
            timestamp=Field(STR),
        ),
        Shape(
            "ShutdownApproved",
            type=_kind("shutdown_approved"),
            requestId=Field(STR),
            from_=Field(STR, key="from"),
            timestamp=Field(STR),
            paneId=Field(OPT_STR, None),
            backendType=Field(OPT_STR, None),
        ),
        Shape(
            "ShutdownRejected",
            type=_kind("shutdown_rejected"),
            requestId=Field(STR),
            from_=Field(STR, key="from"),
            reason=Field(STR),
            timestamp=Field(STR),
        ),
        Shape(
            "PlanApprovalRequest",
            type=_kind("plan_approval_request"),
            from_=Field(STR, key="from"),
            timestamp=Field(STR),
            planFilePath=Field(STR),
            planContent=Field(STR),
            requestId=Field(STR),
        ),
        Shape(
            "PlanApprovalResponse",
            type=_kind("plan_approval_response"),
            requestId=Field(STR),
            approved=Field(BOOL),
            feedback=Field(OPT_STR, None),
            timestamp=Field(STR),
            permissionMode=Field(optional(MODE), None),
            planDigest=Field(OPT_STR, None),
        ),
        Shape(
            "PermissionRequest",
            type=_kind("permission_request"),
            request_id=Field(STR),
            agent_id=Field(STR),
            tool_name=Field(STR),
            tool_use_id=Field(STR),
            description=Field(STR),
            input=Field(DICT),
            permission_suggestions=Field(LIST, []),
        ),
        Shape(
            "PermissionResponse",
            _answered_as_said,
            {"approved": lambda message: message.subtype == "success"},
            type=_kind("permission_response"),
            request_id=Field(STR),
            subtype=Field(one_of("success", "error")),
            response=Field(shape=PERMISSION_RESPONSE_BODY, default=None),
            error=Field(OPT_STR, None),
        ),
        Shape(
            "SandboxPermissionRequest",
            type=_kind("sandbox_permission_request"),
            requestId=Field(STR),
            workerId=Field(STR),
            workerName=Field(STR),
            workerColor=Field(OPT_STR, None),
            hostPattern=Field(shape=HOST_PATTERN),
            createdAt=Field(INT),
        ),
        Shape(
            "SandboxPermissionResponse",
            type=_kind("sandbox_permission_response"),
            requestId=Field(STR),
            host=Field(STR),
            allow=Field(BOOL),
            timestamp=Field(STR),
        ),
        Shape(
            "TaskAssignment",
            type=_kind("task_assignment"),
            taskId=Field(STR),
            subject=Field(STR),
            description=Field(STR),
            assignedBy=Field(STR),
            timestamp=Field(STR),
        ),
        Shape(
            "ModeSetRequest",
            type=_kind("mode_set_request"),
            mode=Field(MODE),
            from_=Field(STR, key="from"),
        ),
        Shape(
            "TeamPermissionUpdate",
            type=_kind("team_permission_update"),
            permissionUpdate=Field(shape=PERMISSION_UPDATE),
            directoryPath=Field(STR),
            toolName=Field(STR),
        ),
        Shape("TeammateTerminated", type=_kind("teammate_terminated"), message=Field(STR)),
        Shape(
            "CompactRequest",
            type=_kind("compact_request"),
            from_=Field(STR, key="from"),
            timestamp=Field(STR),
            instructions=Field(OPT_STR, None),
        ),
    )
}


def typed_object(text: str) -> dict[str, Any] | None:
    """`text` as a JSON object with a string ``type``, as a structured message is; else None
    (a plain message). Text that does not start like an object is not parsed at all."""
    if not text.lstrip().startswith("{"):
        return None  # not a JSON object; and a failed json.loads costs an exception
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    return value
