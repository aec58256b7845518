"""One message of an inbox as handed to callers: `InboxEntry`, and `format_for_model`.

The model is apart from `protocols.inbox.file` (the file's bytes, which need no model) so that a
plain ``swarm send`` writes its entry without loading pydantic; whoever reads entries loads it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field, PrivateAttr

from protocols.inbox.ids import identity_of
from protocols.messages.models import StructuredMessage, decode
from protocols.records.base import Record


class InboxEntry(Record):
    """``{from, text, summary?, timestamp, color?, read, msgV?, msg_id?, type?}`` plus swarm's
    own ``id``; any other key (``lead_sig``, ``from_plugin``) is kept."""

    from_: str = Field(alias="from")
    text: str
    summary: str | None = None
    timestamp: str
    color: str | None = None
    read: bool | None = None
    id: str | None = None
    msgV: int | None = None
    msg_id: str | None = None
    type: str | None = None
    # what a teammate that checks lead signatures made of it (protocols.team.signing.Provenance's
    # text); None: nobody checked. Never written to a file.
    _provenance: str | None = PrivateAttr(default=None)

    @property
    def is_read(self) -> bool:
        return self.read is True

    @property
    def provenance(self) -> str | None:
        return self._provenance

    @property
    def unverified(self) -> bool:
        """Claims to be the lead's (or a shutdown) without the lead's signature: shown to a
        model with ``verified="false"``, never obeyed."""
        return self._provenance == "forged"

    def with_provenance(self, provenance: str) -> InboxEntry:
        copy = self.model_copy()
        copy._provenance = provenance
        return copy

    @property
    def identity(self) -> str:
        return identity_of(
            {
                "msg_id": self.msg_id,
                "id": self.id,
                "from": self.from_,
                "timestamp": self.timestamp,
                "text": self.text,
            }
        )

    def structured(self) -> StructuredMessage | None:
        """The structured message in ``text``; None for a plain message.

        Raises `MessageValidationError` when ``text`` is a known type with bad fields.
        """
        return decode(self.text)


def format_for_model(entries: Iterable[InboxEntry]) -> str:
    """Unread messages as Claude Code hands them to a model: ``<teammate-message>`` blocks,
    with ``verified="false"`` on one that claims the lead without its signature."""
    blocks = []
    for entry in entries:
        attrs = f'teammate_id="{entry.from_}"'
        if entry.color:
            attrs += f' color="{entry.color}"'
        if entry.summary:
            attrs += f' summary="{entry.summary}"'
        if entry.unverified:
            attrs += ' verified="false"'
        blocks.append(f"<teammate-message {attrs}>\n{entry.text}\n</teammate-message>")
    return "\n\n".join(blocks)
