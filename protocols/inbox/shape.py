"""An inbox entry read by its shape (`protocols.records.plain`): `INBOX_ENTRY`, generated from
`protocols.inbox.entry.InboxEntry` (`protocols.inbox.entry_shape`);
`PlainEntry` is what a view asks of an `InboxEntry` (its fields, `identity`, `is_read`,
`structured`, `to_json_dict`), without pydantic.
"""

from __future__ import annotations

from typing import Any

from protocols.inbox.entry_shape import INBOX_ENTRY as INBOX_ENTRY  # generated
from protocols.inbox.ids import identity_of
from protocols.records.plain import Plain


class PlainEntry(Plain):
    """An inbox entry read by `INBOX_ENTRY`: what a view asks of an `InboxEntry`."""

    __slots__ = ()

    @classmethod
    def read(cls, item: Any) -> PlainEntry | None:
        """`item` as a `PlainEntry`, or None when the model is to judge it."""
        return cls(INBOX_ENTRY, item) if INBOX_ENTRY.accepts(item) else None

    @property
    def identity(self) -> str:
        return identity_of(self.raw)

    @property
    def is_read(self) -> bool:
        return self.raw.get("read") is True

    def marked_read(self) -> PlainEntry:
        """The entry with ``read: true`` (as `protocols.inbox.reading.marked_read` marks one)."""
        return self if self.is_read else PlainEntry(INBOX_ENTRY, {**self.raw, "read": True})

    def structured(self) -> Any:
        """`InboxEntry.structured`: the structured message in ``text`` (a `Plain` when it is
        plainly one), None for a plain message; `MessageValidationError` for a known type with
        bad fields."""
        from protocols.messages.decoding import decode_plain

        return decode_plain(self.raw["text"])
