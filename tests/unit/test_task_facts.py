"""`protocols.tasks.facts`: the index reads task files without building their models, and must
never take a file for a valid task that the model would refuse, nor see it differently.

Checked against the `Task` model itself on generated files (hypothesis): wherever `facts_of`
answers, the model accepts the file and agrees on every fact; files swarm and Claude Code write
are answered without the model; and on the board, hostile files (wrong types, nested thousands
deep) are skipped as invalid while the other tasks are still claimed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.paths import TeamPaths
from protocols.tasks.board import ClaimFailure, TaskBoard
from protocols.tasks.facts import TaskFacts, facts_of
from protocols.tasks.files import _decode
from protocols.tasks.model import Task
from protocols.team.file import TeamFile

FIXTURES = Path(__file__).parent.parent / "fixtures" / "cc-2.1.88" / "tasks"

ids = st.sampled_from(["1", "7", "12", "007", "", "x", "1\n", "\u0661", "-1", "1" * 19])
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
good_ids = st.lists(st.sampled_from(["1", "7", "12", "007"]), max_size=3)
mark = st.one_of(json_value, st.just({"reason": "r", "by": "b", "at": "t"}))
good = {  # a value of the right type for each key
    "subject": st.text(max_size=5),
    "description": st.text(max_size=5),
    "activeForm": st.one_of(st.none(), st.text(max_size=5)),
    "status": st.sampled_from(["pending", "in_progress", "completed"]),
    "owner": st.one_of(st.none(), st.text(max_size=5)),
    "blocks": good_ids,
    "blockedBy": good_ids,
    "metadata": st.one_of(
        st.none(), st.dictionaries(st.sampled_from(["failed", "_internal", "x"]), mark)
    ),
    "extra": json_value,
}
bad = {  # and of any type, or nearly right
    **{key: json_value for key in good},
    "status": st.one_of(st.sampled_from(["deleted", "PENDING", "pending "]), json_value),
    "blocks": st.one_of(st.lists(ids, min_size=1, max_size=3), json_value),
    "blockedBy": st.one_of(st.lists(ids, min_size=1, max_size=3), json_value),
}


@st.composite
def task_files(draw: st.DrawFn, task_id: str) -> dict[str, Any]:
    """A task file's JSON object named `task_id`: mostly right, with a key or two missing or of
    a wrong type (an id that is not its name now and then)."""
    raw: dict[str, Any] = {"id": draw(st.sampled_from([task_id] * 6 + ["7", "1\n", "\u0661"]))}
    for key in good:
        how = draw(st.sampled_from(["good"] * 8 + ["bad", "missing"]))
        if how != "missing":
            raw[key] = draw((good if how == "good" else bad)[key])
    return raw


def model_facts(raw: Any, task_id: str) -> tuple[object, ...] | None:
    """What the model says of the file (None: not a valid task named `task_id`)."""
    try:
        task = Task.from_json_dict(raw)
    except (TypeError, ValueError):
        return None
    if task.id != task_id:
        return None
    return (*facts(TaskFacts.of_task(task)), task.unfinished, task.busy)


def facts(found: TaskFacts) -> tuple[object, ...]:
    return (found.id, found.status, found.owner, list(found.blockedBy))


@settings(max_examples=600)
@given(st.data(), st.sampled_from(["1", "7", "12", "\u0661"]))
def test_facts_never_call_valid_what_the_model_refuses_nor_see_it_differently(
    data: st.DataObject, task_id: str
) -> None:
    raw = data.draw(task_files(task_id))
    found = facts_of(raw, task_id)
    if found is None:
        return  # the model decides
    expected = model_facts(raw, task_id)
    assert expected is not None, raw
    task = found.task()
    assert (*facts(found), found.unfinished, found.busy) == expected
    assert (found.failed, found.internal) == (task.failed, task.internal)
    assert found.open == (
        task.status == "pending" and not task.owner and not task.failed and not task.internal
    )


@given(st.one_of(json_value, st.lists(json_value)))
def test_anything_that_is_not_an_object_is_left_to_the_model(raw: Any) -> None:
    if not isinstance(raw, dict):
        assert facts_of(raw, "1") is None


def test_files_swarm_and_claude_code_write_are_read_without_the_model(
    team: TeamFile, paths: TeamPaths
) -> None:
    board = TaskBoard(paths)
    first = board.create("a", "b", active_form="doing a", metadata={"k": [1, {"x": None}]})
    board.create("c", blocked_by=[first.id])
    board.claim(first.id, "alice")
    board.fail(first.id, "no", by="alice")
    files = [*paths.tasks_dir.glob("*.json"), *FIXTURES.glob("*/*.json")]
    assert len(files) >= 3
    for path in files:
        raw = json.loads(path.read_text())
        found = facts_of(raw, path.stem)
        assert found is not None, path
        assert (*facts(found), found.unfinished, found.busy) == model_facts(raw, path.stem)


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "2", "subject": "s", "description": "", "status": 5}',
        '{"id": "2", "subject": "s", "description": "", "blockedBy": [1]}',
        '{"id": "2", "subject": "s", "description": "", "blockedBy": ["../1"]}',
        '{"id": "3", "subject": "s", "description": ""}',  # not its name
        '{"id": "2", "subject": "s", "description": "", "metadata": []}',
        "[" * 100_000 + "]" * 100_000,  # nested deeper than the parser goes
        '{"id": "2", "subject": "s", "description": "", "metadata": {"x": '
        + "[" * 100_000
        + "]" * 100_000
        + "}}",
        "",
        "null",
    ],
)
def test_a_hostile_task_file_is_skipped_and_the_others_are_still_claimed(
    team: TeamFile, paths: TeamPaths, text: str
) -> None:
    board = TaskBoard(paths)
    board.create("one")
    board.list()  # the index is built: the hostile file comes as a change
    paths.task("2").write_text(text)
    board.create("three")
    assert [t.id for t in board.list()] == ["1", "3"]
    assert board.claim("2", "alice").reason == ClaimFailure.TASK_NOT_FOUND
    taken = [board.claim_next(name) for name in ("alice", "bob")]
    assert [t.task.id for t in taken if t is not None and t.task is not None] == ["1", "3"]
    assert board.claim_next("carol") is None


@given(st.one_of(st.binary(max_size=12), json_value.map(lambda v: json.dumps(v).encode())))
def test_the_quick_decode_answers_as_json_loads(data: bytes) -> None:
    try:
        expected: Any = ("value", json.loads(data))
    except ValueError:
        expected = "refused"
    try:
        found: Any = ("value", _decode(data))
    except ValueError:
        found = "refused"
    assert found == expected


FIFO_ON_THE_BOARD = """
import os, sys
from pathlib import Path
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
board = TaskBoard(TeamPaths(Path(sys.argv[1]), "t"))
first = board.create("one")
board.list()
os.mkfifo(board.paths.task("2"))  # nobody ever writes into it
board.create("three")
print([t.id for t in board.list()], board.claim_next("alice").task.id, board.get("2"))
"""


def test_a_fifo_planted_as_a_task_file_hangs_nobody(team: TeamFile, config_root: Path) -> None:
    """Opening a FIFO for reading waits for a writer: every look at the board would hang."""
    done = subprocess.run(
        [sys.executable, "-c", FIFO_ON_THE_BOARD, str(config_root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "['1', '3'] 1 None"
    assert "not a regular file" in done.stderr  # the warning names why it was skipped


def test_a_task_too_deep_to_write_back_is_not_claimed_and_stops_nobody(
    team: TeamFile, paths: TeamPaths
) -> None:
    """Metadata nested 900 deep parses, and makes a valid task, but neither json nor pydantic
    writes it back: claiming it raised out of every claim_next (on main too), so one such file
    stopped the whole board."""
    board = TaskBoard(paths)
    board.create("one")
    deep = "[" * 900 + "]" * 900
    paths.task("1").write_text(
        '{"id": "1", "subject": "s", "description": "", "status": "pending", "blocks": [], '
        f'"blockedBy": [], "metadata": {{"x": {deep}}}}}'
    )
    board.create("two")
    before = paths.task("1").read_bytes()
    assert board.claim("1", "alice").reason == ClaimFailure.TASK_NOT_FOUND
    taken = board.claim_next("alice")
    assert taken is not None and taken.task is not None and taken.task.id == "2"
    assert board.claim_next("bob") is None
    assert paths.task("1").read_bytes() == before  # nothing written
