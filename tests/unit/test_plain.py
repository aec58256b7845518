"""The shapes (`protocols.*.shape`, generated from the models by `protocols.shape_gen`, and the
rule `protocols.messages.shapes` adds) against their pydantic models:
the same fields, keys, required ones and defaults; and, for JSON generated around what the
files hold (keys dropped, values of other types, unknown keys, nulls), a shape takes a value
only when its model takes it unchanged: the same field values, the same `to_json_dict` and
`model_dump`. A shape that takes less than it could only costs speed; one that took more would
show what the model would not, and fails here."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticUndefined

from protocols.inbox import shape as inbox_shape
from protocols.inbox.entry import InboxEntry
from protocols.member import shape as member_shape
from protocols.member.status import AgentStatus, BudgetStatus, McpServerStatus, SubAgentStatus
from protocols.messages import models as messages
from protocols.messages.decoding import decode_plain
from protocols.messages.shapes import SHAPES
from protocols.records.base import Record
from protocols.records.plain import Plain, Shape
from protocols.tasks import shape as task_shape
from protocols.tasks.model import Task
from protocols.team import shape as team_shape
from protocols.team.model import Member, TeamConfig

NOW = "2026-11-27T10:00:00.000Z"
RECORDS: list[tuple[Shape, type[Record], dict[str, Any]]] = [
    (
        task_shape.TASK,
        Task,
        {
            "id": "12",
            "subject": "s",
            "description": "",
            "status": "in_progress",
            "blocks": ["13"],
            "blockedBy": ["3", "4"],
            "metadata": {"failed": {"reason": "r"}},
            "owner": "alice",
        },
    ),
    (
        team_shape.MEMBER,
        Member,
        {
            "agentId": "alice@t",
            "name": "alice",
            "agentType": "general-purpose",
            "model": "sonnet",
            "color": "blue",
            "planModeRequired": False,
            "joinedAt": 1,
            "tmuxPaneId": "%1",
            "cwd": "/w",
            "subscriptions": [],
            "backendType": "tmux",
            "isActive": True,
            "pid": 42,
        },
    ),
    (
        team_shape.TEAM_CONFIG,
        TeamConfig,
        {
            "name": "t",
            "description": "d",
            "createdAt": 1,
            "leadAgentId": "team-lead@t",
            "leadSessionId": "s",
            "members": [{"agentId": "a@t", "name": "a", "joinedAt": 2, "color": None}],
        },
    ),
    (
        member_shape.AGENT_STATUS,
        AgentStatus,
        {
            "name": "alice",
            "model": "claude-sonnet-5-5",
            "state": "working",
            "activity": "Bash",
            "requests": 3,
            "turns": 2,
            "toolCalls": 1,
            "usage": {"input_tokens": 5, "output_tokens": 2},
            "pid": 9,
            "updatedAt": NOW,
            "subagents": [
                {"agentId": "a1", "agentType": "Explore", "name": None, "usage": {}, "x": None}
            ],
            "mcpServers": [{"name": "fs", "state": "failed", "error": "boom", "tools": 0}],
            "budget": {"maxCostUsd": 1.5, "costUsd": 0.25, "over": False, "reason": None},
        },
    ),
    (member_shape.SUBAGENT_STATUS, SubAgentStatus, {"agentId": "a", "agentType": "Explore"}),
    (member_shape.MCP_SERVER_STATUS, McpServerStatus, {"name": "fs", "tools": 3}),
    (member_shape.BUDGET_STATUS, BudgetStatus, {"maxTokens": 10, "tokens": 4, "over": True}),
    (
        inbox_shape.INBOX_ENTRY,
        InboxEntry,
        {
            "from": "alice",
            "text": "hi",
            "summary": None,
            "timestamp": NOW,
            "color": "blue",
            "read": False,
            "id": "x",
            "msgV": 1,
            "msg_id": "m",
            "lead_sig": "s",
        },
    ),
]
MESSAGE_EXAMPLES: list[dict[str, Any]] = [
    {"type": "idle_notification", "from": "a", "timestamp": NOW, "completedTaskId": "3"},
    {"type": "shutdown_request", "requestId": "r", "from": "a", "timestamp": NOW},
    {"type": "shutdown_approved", "requestId": "r", "from": "a", "timestamp": NOW, "paneId": "%1"},
    {"type": "shutdown_rejected", "requestId": "r", "from": "a", "reason": "no", "timestamp": NOW},
    {
        "type": "plan_approval_request",
        "from": "a",
        "timestamp": NOW,
        "planFilePath": "p",
        "planContent": "c",
        "requestId": "r",
    },
    {
        "type": "plan_approval_response",
        "requestId": "r",
        "approved": True,
        "timestamp": NOW,
        "permissionMode": "acceptEdits",
    },
    {
        "type": "permission_request",
        "request_id": "r",
        "agent_id": "a",
        "tool_name": "Bash",
        "tool_use_id": "t",
        "description": "d",
        "input": {"command": "ls"},
    },
    {
        "type": "permission_response",
        "request_id": "r",
        "subtype": "success",
        "response": {"updated_input": None, "x": None},
    },
    {"type": "permission_response", "request_id": "r", "subtype": "error", "error": "no"},
    {
        "type": "sandbox_permission_request",
        "requestId": "r",
        "workerId": "a@t",
        "workerName": "a",
        "hostPattern": {"host": "h", "port": None},
        "createdAt": 5,
    },
    {
        "type": "sandbox_permission_response",
        "requestId": "r",
        "host": "h",
        "allow": False,
        "timestamp": NOW,
    },
    {
        "type": "task_assignment",
        "taskId": "1",
        "subject": "s",
        "description": "d",
        "assignedBy": "team-lead",
        "timestamp": NOW,
    },
    {"type": "mode_set_request", "mode": "plan", "from": "team-lead"},
    {
        "type": "team_permission_update",
        "permissionUpdate": {"rules": [{"toolName": "Bash"}], "behavior": "allow"},
        "directoryPath": "/w",
        "toolName": "Bash",
    },
    {"type": "teammate_terminated", "message": "gone"},
]
MESSAGE_CLASS = {cls.model_fields["type"].default: cls for cls in messages.MESSAGE_CLASSES}

# what a generated value may be: each JSON type as likely as the others, among them the texts
# the shapes single out
TEXTS = ["", "x", "7", "5\n", "07", "\u0661", "pending", "completed", "in_progress", "working"]
TEXTS += ["waiting", "success", "error", "available", "resolved", "addRules", "allow", "plan"]
SCALARS = st.one_of(
    st.sampled_from([None, True, False]),
    st.sampled_from([0, 1, -3, 2**70]),
    st.sampled_from([0.0, 1.0, 2.5]),
    st.sampled_from(TEXTS),
)
JSON = st.one_of(
    SCALARS,
    st.recursive(
        SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=6,
    ),
)


@st.composite
def around(draw: st.DrawFn, example: dict[str, Any], shape: Shape) -> dict[str, Any]:
    """`example` changed a little: keys dropped, values replaced (by any JSON, or by a nested
    record changed in its turn), the name of an aliased field, unknown keys."""
    raw = copy.deepcopy(example)
    keys = [f.key for f in shape.fields.values()] + [f.name for f in shape.fields.values()]
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from([*keys, "extra", "zz"]))
        action = draw(st.sampled_from(["drop", "set", "nested"]))
        field = shape.by_key.get(key)
        if action == "drop":
            raw.pop(key, None)
        elif action == "nested" and field is not None and field.shape is not None:
            inner = raw.get(key)
            if isinstance(inner, list) and inner and isinstance(inner[0], dict):
                inner[0] = draw(around(inner[0], field.shape))
            elif isinstance(inner, dict):
                raw[key] = draw(around(inner, field.shape))
        else:
            raw[key] = draw(JSON)
    return raw


def same_values(plain: Plain, model: BaseModel) -> None:
    for name in plain._shape.fields:
        assert text(getattr(plain, name)) == text(getattr(model, name)), name
    for name in plain._shape.properties:
        assert text(getattr(plain, name)) == text(getattr(model, name)), name
    assert text(plain.model_dump()) == text(model.model_dump())


def text(value: Any) -> str:
    """`value` as JSON text: 1 and 1.0, 1 and true, {a, b} and {b, a} differ (== would not say)."""
    return json.dumps(value, default=lambda v: v.model_dump())


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defaults made of the time (``updatedAt``, ``startedAt``) are the same in both."""
    monkeypatch.setattr("protocols.clock.now_ms", lambda: 1_800_000_000_000)


RECORD_IDS = [shape.name for shape, _, _ in RECORDS]


@pytest.mark.parametrize("shape, model", [(s, m) for s, m, _ in RECORDS], ids=RECORD_IDS)
def test_a_record_shape_has_its_models_fields(shape: Shape, model: type[Record]) -> None:
    same_fields(shape, model)


@pytest.mark.parametrize("kind", sorted(MESSAGE_CLASS))
def test_a_message_shape_has_its_models_fields(kind: str) -> None:
    same_fields(SHAPES[kind], MESSAGE_CLASS[kind])


def test_every_message_type_has_a_shape() -> None:
    assert set(SHAPES) == set(messages.MESSAGE_TYPES)


def same_fields(shape: Shape, model: type[BaseModel]) -> None:
    assert list(shape.fields) == list(model.model_fields), shape.name
    for name, info in model.model_fields.items():
        field = shape.fields[name]
        assert field.key == (info.alias or name), name
        assert field.required == info.is_required(), name
        if info.default_factory is not None:
            assert field.factory is not None or field.default is not None, name
            made = info.default_factory()  # type: ignore[call-arg]
            assert field.missing() == made, name
        elif info.default is not PydanticUndefined:
            assert field.missing() == info.default, name
            assert type(field.missing()) is type(json.loads(json.dumps(info.default))), name
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            assert field.shape is not None, name


@pytest.mark.parametrize("shape, model, example", RECORDS, ids=RECORD_IDS)
def test_what_the_files_hold_is_plain(
    shape: Shape, model: type[Record], example: dict[str, Any]
) -> None:
    plain = shape.read(example)
    assert plain is not None
    record = model.from_json_dict(example)
    same_values(plain, record)
    assert text(plain.to_json_dict()) == text(record.to_json_dict())


@pytest.mark.parametrize("example", MESSAGE_EXAMPLES, ids=lambda e: str(e["type"]))
def test_the_messages_swarm_writes_are_plain(example: dict[str, Any]) -> None:
    plain = decode_plain(json.dumps(example))
    assert isinstance(plain, Plain)
    model = messages.decode(json.dumps(example))
    assert isinstance(model, BaseModel)
    same_values(plain, model)
    assert text(plain.to_json_dict()) == text(model.to_json_dict())


@pytest.mark.parametrize("shape, model, example", RECORDS, ids=RECORD_IDS)
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_record_shape_never_takes_what_its_model_would_not_take_as_is(
    shape: Shape, model: type[Record], example: dict[str, Any], data: st.DataObject
) -> None:
    raw = data.draw(around(example, shape))
    plain = shape.read(copy.deepcopy(raw))
    try:
        record = model.from_json_dict(copy.deepcopy(raw))
    except (ValidationError, TypeError, ValueError):
        assert plain is None, raw
        return
    if plain is not None:
        same_values(plain, record)
        assert text(plain.to_json_dict()) == text(record.to_json_dict()), raw


ADAPTER: TypeAdapter[Any] = TypeAdapter(messages.StructuredMessage)


@pytest.mark.parametrize("example", MESSAGE_EXAMPLES, ids=lambda e: str(e["type"]))
@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_message_shape_never_takes_what_its_model_would_not_take_as_is(
    example: dict[str, Any], data: st.DataObject
) -> None:
    shape = SHAPES[example["type"]]
    raw = data.draw(around(example, shape))
    if raw.get("type") != example["type"]:
        return  # another type, or none: decode_plain hands it on as decode does
    plain = shape.read(copy.deepcopy(raw))
    try:
        model = ADAPTER.validate_python(copy.deepcopy(raw))
    except ValidationError:
        assert plain is None, raw
        return
    if plain is not None:
        same_values(plain, model)
        assert text(Plain(shape, raw, record=False).to_json_dict()) == text(model.to_json_dict())


def test_decode_plain_decodes_as_decode_does() -> None:
    bad = json.dumps({"type": "permission_request", "request_id": 5})
    for text in ["hello", "{not json", "[1]", '{"type": "other"}', '{"type": 3}', "  {}"]:
        assert decode_plain(text) is None and messages.decode(text) is None
    with pytest.raises(messages.MessageValidationError) as plain_error:
        decode_plain(bad)
    with pytest.raises(messages.MessageValidationError) as model_error:
        messages.decode(bad)
    assert str(plain_error.value) == str(model_error.value)
    coerced = json.dumps({**MESSAGE_EXAMPLES[0], "extra": 1, "completedTaskId": None})
    assert isinstance(decode_plain(coerced), Plain)


def test_a_plain_entry_is_an_inbox_entry() -> None:
    raw = RECORDS[-1][2]
    plain = inbox_shape.PlainEntry.read(raw)
    assert plain is not None
    entry = InboxEntry.from_json_dict(raw)
    assert (plain.identity, plain.is_read, plain.from_) == (entry.identity, entry.is_read, "alice")
    assert plain.marked_read().to_json_dict() == {**entry.to_json_dict(), "read": True}
    assert inbox_shape.PlainEntry.read({**raw, "from_": "bob"}) is None  # the model may read either
