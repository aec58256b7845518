"""How an inbox entry is known (spec section 3): its ``msg_id`` (Claude Code's UUID since
2.1.196, and swarm's own, derived from swarm's ``id``), else swarm's ``id``, else a digest of
sender, time and text. One identity is delivered once."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uuid

# swarm's msg_id is a UUID derived from its own id, so a send repeated with the same id (a retry
# after a failure) carries the same msg_id, and the two ids never disagree
_MSG_ID_NAMESPACE = "6f1c2a4e-5b0d-4c7e-9a51-3e2f7d8b9c10"


def msg_id_for(swarm_id: str) -> str:
    import uuid  # (here: uuid loads platform, ~2 ms a ``swarm status`` that sends nothing pays)

    return str(uuid.uuid5(_msg_id_namespace(), swarm_id))


@functools.cache
def _msg_id_namespace() -> uuid.UUID:
    import uuid

    return uuid.UUID(_MSG_ID_NAMESPACE)


def identity_of(item: dict[str, Any]) -> str:
    """``msg_id`` when present, else swarm's ``id``; otherwise a digest of sender, timestamp
    and text (entries of Claude Code before 2.1.196)."""
    for key in ("msg_id", "id"):
        given = item.get(key)
        if isinstance(given, str) and given:
            return given
    key = f"{item.get('from')}\0{item.get('timestamp')}\0{item.get('text')}"
    import hashlib  # only for an entry with no id: loads OpenSSL

    return "cc-" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]
