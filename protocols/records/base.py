"""A base for the models of files that swarm shares with Claude Code (team, inbox entry, task).

Those files are rewritten whole by both programs, so a `Record` keeps what it does not know:

- unknown keys are kept (``extra="allow"``) and written back;
- the key order read from disk is kept; keys that are new go at the end, as when JavaScript
  assigns a new property, so an unchanged file re-serialises to the same bytes;
- optional keys without a value are left out, except a ``null`` that was on disk and still is.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr


class Record(BaseModel):
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, validate_assignment=True, defer_build=True
    )

    _key_order: tuple[str, ...] = PrivateAttr(default=())
    _null_keys: frozenset[str] = PrivateAttr(default=frozenset())

    @classmethod
    def from_json_dict(cls, raw: dict[str, Any]) -> Self:
        """Validate a decoded JSON object, remembering its key order and explicit nulls."""
        record = cls.model_validate(raw)
        record._key_order = tuple(raw)
        record._null_keys = frozenset(k for k, v in raw.items() if v is None)
        return record

    def to_json_dict(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        ordered: dict[str, Any] = {}
        for key in self._key_order:
            if key in dumped:
                ordered[key] = dumped.pop(key)
            elif key in self._null_keys and self._value_of(key) is None:
                ordered[key] = None
        ordered.update(dumped)
        return ordered

    def updated(self, **changes: Any) -> Self:
        """A validated copy with `changes` applied (by field name or alias); order is kept."""
        raw = self.to_json_dict()
        for key, value in changes.items():
            field = type(self).model_fields.get(key)
            name = field.alias if field is not None and field.alias else key
            raw[name] = value
        copy = type(self).model_validate(raw)
        copy._key_order = self._key_order
        copy._null_keys = self._null_keys
        return copy

    def _value_of(self, key: str) -> Any:
        for name, field in type(self).model_fields.items():
            if key in (name, field.alias):
                return getattr(self, name)
        return (self.model_extra or {}).get(key)
