"""Decoding a structured message without pydantic when it is plainly of its type
(`decode_plain`): its shape (`protocols.messages.shapes`) judges it, and only a message that
is not plainly well-formed loads the models (`protocols.messages.models`)."""

from __future__ import annotations

from typing import Any

from protocols.messages.shapes import SHAPES, typed_object
from protocols.records.plain import Plain


def decode_plain(text: str) -> Any:
    """`protocols.messages.models.decode` of `text`: None for a plain message; a `Plain` for a
    message that is plainly of its type; else the model, or `MessageValidationError` for a known
    type with bad fields (pydantic is loaded only then)."""
    value = typed_object(text)
    if value is None:
        return None
    shape = SHAPES.get(value["type"])
    if shape is None:
        return None
    if shape.accepts(value):
        return Plain(shape, value, record=False)
    from protocols.messages.models import from_dict  # pydantic, only now

    return from_dict(value)
