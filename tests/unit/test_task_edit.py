"""`protocols.tasks.edit`: a claim and a plain update edit the task file's JSON without its model,
and must write byte for byte what the model would have written, or leave the edit to it.

Checked against the model on generated files and changes (hypothesis), and on the board: a
claim and a completion leave the same bytes as the model's way, unknown keys, nulls and key
order included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.fs.jsonio import dumps_pretty
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.tasks.edit import edited, plain_text
from protocols.tasks.facts import facts_of
from protocols.tasks.model import Task
from protocols.team.file import TeamFile

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
)
value = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)
ids = st.lists(st.sampled_from(["1", "2", "10"]), max_size=2)
optional = {
    "activeForm": st.one_of(st.none(), st.text(max_size=4)),
    "status": st.sampled_from(["pending", "in_progress", "completed"]),
    "blocks": ids,
    "blockedBy": ids,
    "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), value, max_size=3)),
    "owner": st.one_of(st.none(), st.text(max_size=4)),
    "zextra": value,
    "aextra": value,
}
good_changes = {
    "status": st.sampled_from(["pending", "in_progress", "completed"]),
    "owner": st.one_of(st.none(), st.text(max_size=4)),
    "subject": st.text(max_size=4),
    "description": st.text(max_size=4),
    "activeForm": st.one_of(st.none(), st.text(max_size=4)),
    "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), value, max_size=2)),
}
bad_changes = {
    **{key: value for key in good_changes},
    "status": st.one_of(st.sampled_from(["x", "deleted", "PENDING"]), value),
    "blocks": ids,
    "unknown": value,
}


@st.composite
def files(draw: st.DrawFn) -> dict[str, Any]:
    """A valid task file's object (as `facts_of` reads one): the required keys first, the
    optional ones present or not, in a drawn order."""
    raw: dict[str, Any] = {"id": "7", "subject": draw(st.text(max_size=4))}
    raw["description"] = draw(st.text(max_size=4))
    keys = draw(st.permutations(sorted(optional)))
    for key in keys:
        if draw(st.booleans()) or key in ("status", "blocks", "blockedBy"):
            raw[key] = draw(optional[key])
    if not draw(st.integers(0, 4)):  # now and then a default the model fills in is missing
        raw.pop(draw(st.sampled_from(["status", "blocks", "blockedBy"])))
    return raw


@st.composite
def changes(draw: st.DrawFn) -> dict[str, Any]:
    """One to three fields set, mostly to values of the right type."""
    keys = draw(st.sets(st.sampled_from(sorted(bad_changes)), min_size=1, max_size=2))
    return {
        key: draw(
            good_changes[key]
            if key in good_changes and draw(st.integers(0, 3))
            else bad_changes[key]
        )
        for key in sorted(keys)
    }


def by_the_model(raw: dict[str, Any], change: dict[str, Any]) -> str | None:
    """What the model writes for the change (None: it refuses it)."""
    try:
        return dumps_pretty(Task.from_json_dict(raw).updated(**change).to_json_dict())
    except (TypeError, ValueError):
        return None


@settings(max_examples=1000)
@given(files(), changes())
def test_a_plain_edit_writes_what_the_model_writes(raw: dict[str, Any], change: dict[str, Any]):
    if facts_of(raw, "7") is None:
        return  # not plainly valid: read through the model, never edited plainly
    before = json.dumps(raw)
    out = edited(raw, change)
    assert json.dumps(raw) == before  # the file's object as read is left as it was
    text = plain_text(out) if out is not None else None
    if text is None:
        return  # left to the model
    expected = by_the_model(raw, change)
    assert expected is not None, (raw, change)
    assert text == expected


def test_a_claim_and_a_completion_write_what_the_model_would(
    team: TeamFile, paths: TeamPaths
) -> None:
    """Claude Code's key order, a null it wrote, unknown keys, metadata: all kept."""
    board = TaskBoard(paths)
    first = board.create("a", "b", active_form="doing a", metadata={"k": [1, {"x": None}]})
    path = paths.task(first.id)
    raw = json.loads(path.read_text())
    raw = {"later": {"n": None}, **raw, "activeForm": None, "unknown": [True, "x"]}
    path.write_text(dumps_pretty(raw))
    claimed = board.claim(first.id, "alice")
    assert claimed.task is not None
    model = Task.from_json_dict(raw).updated(owner="alice", status="in_progress")
    assert path.read_text() == dumps_pretty(model.to_json_dict())
    assert claimed.task.to_json_dict() == model.to_json_dict()
    done = board.update(first.id, status="completed", owner=None)
    assert done is not None and done.owner is None and done.status == "completed"
    assert path.read_text() == dumps_pretty(
        model.updated(status="completed", owner=None).to_json_dict()
    )


@pytest.mark.parametrize(
    ("change", "plain"),
    [
        ({"status": "completed", "owner": None}, True),
        ({"owner": "bob"}, True),  # "owner" was null in the file: set in its place
        ({"activeForm": None}, True),  # null in the file: stays null
        ({"subject": None}, False),  # refused by the model: left to it
        ({"status": "deleted"}, False),
        ({"status": 3}, False),
        ({"owner": 3}, False),
        ({"metadata": []}, False),
        ({"blocks": ["1"]}, False),  # not an edit done here
        ({"unknown": 1}, False),
    ],
)
def test_each_plain_edit_is_the_models_and_the_rest_is_left_to_it(
    change: dict[str, Any], plain: bool
) -> None:
    raw = {"id": "7", "subject": "s", "description": "", "activeForm": None, "status": "pending"}
    raw |= {"blocks": [], "blockedBy": [], "owner": None, "x": {"y": None}}
    out = edited(raw, change)
    assert (out is not None) == plain
    if out is not None:
        assert plain_text(out) == by_the_model(raw, change)


def test_what_the_model_would_fill_in_or_write_differently_is_left_to_it() -> None:
    raw = {"id": "7", "subject": "s", "description": "", "blocks": [], "blockedBy": []}
    assert edited(raw, {"owner": "a"}) is None  # no status: the model adds "pending"
    with_float = {**raw, "status": "pending", "metadata": {"cost": float("inf")}}
    out = edited(with_float, {"owner": "a"})
    assert out is not None and plain_text(out) is None  # the model writes inf as null
