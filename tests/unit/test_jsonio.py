"""Claude Code's byte format and atomic, durable writes with orphan clean-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.fs import jsonio
from protocols.fs.jsonio import (
    atomic_write_text,
    dumps_compact,
    dumps_pretty,
    ensure_file,
    remove_orphan_temps,
    temp_dir,
    temp_prefix,
    write_json,
)
from protocols.fs.locks import FileGuard

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_pretty_format_is_json_stringify_with_two_spaces() -> None:
    value = {"a": [], "b": {}, "c": [1, {"d": "é"}], "e": None, "f": True}
    assert dumps_pretty(value) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": "é"\n    }\n  ],\n'
        '  "e": null,\n  "f": true\n}'
    )


def test_compact_format_has_no_spaces() -> None:
    assert dumps_compact({"a": [1, 2], "b": "x y"}) == '{"a":[1,2],"b":"x y"}'


@given(json_values)
def test_pretty_output_parses_back_and_never_ends_with_a_newline(value: object) -> None:
    text = dumps_pretty(value)
    assert json.loads(text) == value
    assert not text.endswith("\n")
    text.encode("utf-8")


@given(json_values)
def test_indenting_as_nested_keeps_the_value(value: object) -> None:
    assert json.loads(dumps_pretty(value, level=3)) == value


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text() | st.integers(), inner, max_size=4)
        ),
        max_leaves=20,
    ),
    st.integers(min_value=0, max_value=3),
    st.booleans(),
)
def test_the_fast_pretty_writer_is_byte_for_byte_json_dumps(
    value: object, level: int, own: bool
) -> None:
    """`dumps_pretty` writes strings, ints, lists and dicts itself (where that is the faster:
    `OWN_PRINTER`, both ways here); what it leaves to json.dumps (floats, keys that are not
    strings, lone surrogates) must not show."""
    expected = json.dumps(value, indent=2, separators=(",", ": "), ensure_ascii=False)
    try:
        expected.encode("utf-8")
    except UnicodeEncodeError:
        expected = json.dumps(value, indent=2, separators=(",", ": "), ensure_ascii=True)
    expected = expected.replace("\n", "\n" + "  " * level)
    with mock.patch.object(jsonio, "OWN_PRINTER", own):
        assert dumps_pretty(value, level) == expected


def test_lone_surrogates_are_escaped_so_the_file_is_valid_utf8() -> None:
    text = dumps_pretty({"t": "a\ud800b"})
    assert "\\ud800" in text
    text.encode("utf-8")


@pytest.fixture
def tmp_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "d"
    directory.mkdir()
    return directory


def test_write_replaces_the_file_and_leaves_no_temp(tmp_dir: Path) -> None:
    target = tmp_dir / "x.json"
    write_json(target, [1])
    write_json(target, [1, 2])
    assert target.read_text() == "[\n  1,\n  2\n]"
    assert sorted(os.listdir(tmp_dir)) == [".swarm-tmp", "x.json"]
    assert os.listdir(temp_dir(target)) == []


@pytest.mark.parametrize("durability", ["power", "process"])
def test_both_durability_settings_write_the_same_bytes(tmp_path: Path, durability: str) -> None:
    target = tmp_path / "x.json"
    atomic_write_text(target, "[]", durability)  # type: ignore[arg-type]
    assert target.read_text() == "[]"


def test_an_unknown_durability_setting_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_DURABILITY", "maybe")
    with pytest.raises(ValueError, match="'power' or 'process'"):
        atomic_write_text(tmp_path / "x", "[]")


def test_orphan_temp_files_of_killed_writers_are_removed_by_the_next_write(tmp_dir: Path) -> None:
    target = tmp_dir / "alice.json"
    temps = temp_dir(target)
    temps.mkdir()
    for n in range(3):
        (temps / f"{temp_prefix(target)}999-{n}").write_text("[half")
    other = temps / f"{temp_prefix(tmp_dir / 'bob.json')}999-0"
    other.write_text("[")
    write_json(target, [])
    assert os.listdir(temps) == [other.name]
    assert remove_orphan_temps(tmp_dir / "bob.json") == 1


def test_ensure_file_creates_once_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "inbox.json"
    assert ensure_file(target, "[]") is True
    target.write_text('[{"x": 1}]')
    assert ensure_file(target, "[]") is False
    assert target.read_text() == '[{"x": 1}]'
    assert sorted(os.listdir(target.parent)) == [".swarm-tmp", "inbox.json"]
    assert os.listdir(temp_dir(target)) == []


KILLED_HOLDER = """
import os, sys, time
from pathlib import Path
from unittest import mock
from protocols.fs.locks import FileGuard
target = Path(sys.argv[1])
guard = FileGuard(target)
guard.acquire()
(target.parent / f".{target.name}.tmp-{os.getpid()}-dead").write_text("[half")
print("holding", flush=True)
time.sleep(60)
"""


def test_a_locked_write_renames_within_the_targets_directory(tmp_dir: Path) -> None:
    target = tmp_dir / "inbox.json"
    target.write_text("[]")
    with FileGuard(target):
        write_json(target, [1])
    assert target.read_text() == "[\n  1\n]"
    # no `.swarm-tmp/`: a rename between directories takes the file system's one rename lock
    assert sorted(os.listdir(tmp_dir)) == [".swarm-locks", "inbox.json"]


def test_a_killed_holders_temporary_file_is_removed_by_the_next_holder(tmp_dir: Path) -> None:
    target = tmp_dir / "inbox.json"
    target.write_text("[]")
    holder = subprocess.Popen(
        [sys.executable, "-c", KILLED_HOLDER, str(target)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
    holder.kill()
    holder.wait()
    assert [n for n in os.listdir(tmp_dir) if n.startswith(".inbox.json.tmp-")]
    with FileGuard(target, timeout=15) as guard:
        assert guard.after_unclean_release
        write_json(target, ["after"])
    assert json.loads(target.read_text()) == ["after"]
    assert sorted(os.listdir(tmp_dir)) == [".swarm-locks", "inbox.json"]


def test_after_a_clean_release_the_directory_is_not_searched(tmp_dir: Path) -> None:
    target = tmp_dir / "inbox.json"
    target.write_text("[]")
    with FileGuard(target):
        write_json(target, [1])
    with FileGuard(target) as guard:
        assert not guard.after_unclean_release
        write_json(target, [2])
    assert json.loads(target.read_text()) == [2]
