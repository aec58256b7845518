"""What a value becomes in a column: text checked for what PostgreSQL cannot hold, records as
``json`` documents.

PostgreSQL ``text`` cannot hold NUL (``\\x00``) and is UTF-8, so it cannot hold a lone surrogate
either. Names, ids, task subjects and the like are ``text`` columns: such a value is refused
with `UnstorableValue` before anything is written. Message entries, members, requests and
statuses are ``json`` documents written as Claude Code's JSON text (`dumps_compact`: NUL and
lone surrogates escaped as ``\\u0000``, ``\\ud800``), so they round-trip any Python string, as
the file store does.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Json

from protocols.errors import UnstorableValue
from protocols.fs.jsonio import dumps_compact


def text(value: str, what: str) -> str:
    """`value` if a ``text`` column can hold it, else `UnstorableValue` naming `what`."""
    if "\x00" in value:
        raise UnstorableValue(
            f"{what} {value!r} contains NUL (\\x00), which PostgreSQL text cannot hold; "
            "nothing was written. Allowed: any other character"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnstorableValue(
            f"{what} {value!r} contains a lone surrogate, which is not UTF-8; nothing was "
            "written. Allowed: any Unicode character but NUL"
        ) from None
    return value


def optional_text(value: str | None, what: str) -> str | None:
    return None if value is None else text(value, what)


def document(value: Any) -> Json:
    """A ``json`` parameter: Claude Code's compact JSON text, key order kept."""
    return Json(value, dumps=dumps_compact)
