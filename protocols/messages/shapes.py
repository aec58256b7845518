"""The shapes (`protocols.records.plain`) of the structured messages (`protocols.messages.models`),
and `typed_object`: whether a text is a structured message at all (`decode_plain`, in
`protocols.messages.decoding`, decodes one without pydantic when it is plainly one).

Each shape is generated from its model (`protocols.messages.shape`, by `protocols.shape_gen`:
strict, as the models are: exactly the JSON type, a `Literal` one of its values); here the one
rule a model adds to its fields. `tests/unit/test_plain.py` holds them to the models. A message that
is not plain (a field of another type, a nested record that is not plain) is decoded by the
model, as `decode` always did, with the same error for a bad one.
"""

from __future__ import annotations

import json
from typing import Any

from protocols.messages.shape import MESSAGES, PERMISSION_RESPONSE
from protocols.records.plain import Shape


def _answered_as_said(raw: dict[str, Any]) -> bool:
    """`PermissionResponse._shape`: a success carries a response, an error its error."""
    if raw["subtype"] == "success":
        return raw.get("response") is not None
    return raw.get("error") is not None


# what `PermissionResponse` adds to its fields: its validator, and its ``approved`` property
_PERMISSION_RESPONSE = PERMISSION_RESPONSE.with_rules(
    _answered_as_said, {"approved": lambda message: message.subtype == "success"}
)
SHAPES: dict[str, Shape] = {
    shape.fields["type"].default: _PERMISSION_RESPONSE if shape is PERMISSION_RESPONSE else shape
    for shape in MESSAGES
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
