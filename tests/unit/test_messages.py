"""Structured messages: every type encodes to compact JSON and decodes back (property tests),
plain text stays plain, and a known type with bad fields is a clear error, never a crash."""

from __future__ import annotations

import contextlib
import enum
import json
import types
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from protocols.errors import MessageValidationError
from protocols.messages.models import (
    MESSAGE_CLASSES,
    PermissionResponse,
    PermissionResponseBody,
    ShutdownRequest,
    decode,
)

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


def strategy_for(annotation: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return strategy_for(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from([member.value for member in annotation])
    if origin in (types.UnionType, typing.Union):
        return st.one_of(*(strategy_for(a) for a in typing.get_args(annotation)))
    if annotation is type(None):
        return st.none()
    if annotation is str:
        return st.text()
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(0, 2**53)
    if origin is dict:
        return json_objects
    if origin is list:
        (item,) = typing.get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return st.lists(model_strategy(item), max_size=3)
        return st.lists(json_values, max_size=3)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_strategy(annotation)
    raise AssertionError(f"no strategy for {annotation!r}")


def model_strategy(cls: type[BaseModel]) -> st.SearchStrategy[Any]:
    if cls is PermissionResponse:
        success = st.builds(
            lambda rid, body: PermissionResponse(request_id=rid, subtype="success", response=body),
            st.text(),
            model_strategy(PermissionResponseBody),
        )
        error = st.builds(
            lambda rid, err: PermissionResponse(request_id=rid, subtype="error", error=err),
            st.text(),
            st.text(),
        )
        return success | error
    fields = {
        name: strategy_for(field.annotation)
        for name, field in cls.model_fields.items()
        if name != "type"
    }
    return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda c: c.__name__)
@given(data=st.data())
def test_every_message_type_round_trips(cls: type[BaseModel], data: st.DataObject) -> None:
    message = data.draw(model_strategy(cls))
    text = message.encode()
    assert text == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    assert json.loads(text)["type"] == message.type
    decoded = decode(text)
    assert decoded == message
    assert decoded.encode() == text


@given(st.text())
def test_arbitrary_text_never_crashes_decode(text: str) -> None:
    with contextlib.suppress(MessageValidationError):
        decode(text)


@given(json_values)
def test_json_without_a_known_type_is_plain(value: Any) -> None:
    if isinstance(value, dict):
        value["type"] = "not_a_protocol_type"
    assert decode(json.dumps(value)) is None


def test_encoding_is_compact_in_the_spec_field_order_without_empty_keys() -> None:
    message = ShutdownRequest(requestId="shutdown-1@alice", from_="team-lead", timestamp="t")
    assert message.encode() == (
        '{"type":"shutdown_request","requestId":"shutdown-1@alice","from":"team-lead","timestamp":"t"}'
    )


def test_non_ascii_is_kept_as_utf8() -> None:
    message = ShutdownRequest(requestId="r", from_="lead", reason="fertig ✓ 完成", timestamp="t")
    assert "fertig ✓ 完成" in message.encode()


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('{"type":"shutdown_request","from":"team-lead","timestamp":"t"}', "requestId"),
        (
            '{"type":"idle_notification","from":"a","timestamp":"t","idleReason":"asleep"}',
            "idleReason",
        ),
        (
            '{"type":"plan_approval_response","requestId":"r","approved":"yes","timestamp":"t"}',
            "approved",
        ),
        ('{"type":"permission_response","request_id":"r","subtype":"success"}', "response"),
        ('{"type":"permission_response","request_id":"r","subtype":"error"}', "error"),
        (
            '{"type":"sandbox_permission_request","requestId":"r","workerId":"a@t","workerName":"a",'
            '"hostPattern":{},"createdAt":1}',
            "hostPattern.host",
        ),
        ('{"type":"mode_set_request","mode":"yolo","from":"team-lead"}', "mode"),
    ],
)
def test_known_type_with_bad_fields_is_a_clear_error(text: str, complaint: str) -> None:
    with pytest.raises(MessageValidationError) as caught:
        decode(text)
    kind = json.loads(text)["type"]
    assert kind in str(caught.value)
    assert complaint in str(caught.value)


def test_unknown_extra_keys_on_a_known_type_are_kept() -> None:
    text = '{"type":"shutdown_request","requestId":"r","from":"team-lead","timestamp":"t","x":1}'
    message = decode(text)
    assert isinstance(message, ShutdownRequest)
    assert message.encode() == text
