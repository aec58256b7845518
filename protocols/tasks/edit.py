"""Changing a task file's JSON without building its model: the edits a claim and a plain update
make (setting ``status``, ``owner``, ``subject``, ``description``, ``activeForm``, ``metadata``).

`edited` gives the very object the model would write for the same change (`Record.updated`, then
`to_json_dict`): keys kept in their order, a new key at the end, a key set to None removed unless
it was null in the file, every other key and value as the file holds it. Where the model would
change something on its own (fill in a missing ``status``, ``blocks`` or ``blockedBy`` with its
default, rewrite a float it cannot write as JSON) or refuse the change (a value of the wrong
type), there is no plain edit: `edited` or `plain_text` answers None and the caller goes through
the model as before. `tests/unit/test_task_edit.py` checks that against the model on generated
files and changes.

A claim and its completion each rewrite the task file; building the model, copying it with the
change and dumping it again cost about a tenth of a claim's CPU in one process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocols.fs.jsonio import plain_pretty
from protocols.tasks.task import STATUSES

_NEEDED = ("status", "blocks", "blockedBy")  # keys the model would add with their defaults
_TEXTS = frozenset({"subject", "description"})
_OPTIONAL_TEXTS = frozenset({"owner", "activeForm"})
_STATUSES = frozenset(STATUSES)


def edited(raw: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any] | None:
    """`raw` (a valid task file's JSON object, `protocols.tasks.facts`) with `changes` made, as
    the model would write it; None if that takes the model."""
    for key in _NEEDED:
        if key not in raw:
            return None
    out = dict(raw)
    for key, value in changes.items():
        if not _fits(key, value):
            return None
        if value is not None:
            out[key] = value
        elif raw.get(key, "") is not None:  # a null the file had stays; any other value goes
            out.pop(key, None)
    return out


def plain_text(value: dict[str, Any]) -> str | None:
    """`value` in Claude Code's format, when it holds only strings, integers, booleans, nulls,
    lists and objects (None otherwise: a float, say, which the model may write differently)."""
    return plain_pretty(value)


def _fits(key: str, value: Any) -> bool:
    """Whether setting `key` to `value` is a plain edit the model would accept unchanged."""
    if key == "status":
        return type(value) is str and value in _STATUSES
    if key in _OPTIONAL_TEXTS:
        return value is None or type(value) is str
    if key in _TEXTS:
        return type(value) is str
    if key == "metadata":
        return value is None or (type(value) is dict and all(type(k) is str for k in value))
    return False
