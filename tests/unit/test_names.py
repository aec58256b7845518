"""Name rules: only ^[a-z0-9][a-z0-9-]{0,63}$ may be created; everything else is refused with an
error that states the rule; existing teams with other names can still be read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.errors import InvalidName
from protocols.names import NAME_PATTERN, checked_component, validate_name
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

valid_names = st.from_regex(r"\A[a-z0-9][a-z0-9-]{0,63}\Z")


@given(valid_names)
def test_valid_names_are_accepted(name: str) -> None:
    assert validate_name(name) == name


@given(st.text(max_size=80))
def test_any_text_is_accepted_exactly_when_it_matches_the_rule(name: str) -> None:
    matches = re.fullmatch(NAME_PATTERN, name) is not None and not name.endswith("\n")
    try:
        validate_name(name, "agent name")
    except InvalidName as error:
        assert not matches
        assert "^[a-z0-9][a-z0-9-]{0,63}$" in str(error)
    else:
        assert matches


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        ("..", "another directory"),
        ("a/b", "another directory"),
        ("alice@team", "'@'"),
        ("ünïcode", "non-ASCII"),
        ("x" * 65, "65 characters"),
        ("Alice", "uppercase"),
        ("-lead", "starts with '-'"),
        ("has space", "characters other than"),
        ("$(rm -rf ~)", "characters other than"),
        ("line\nbreak", "characters other than"),
    ],
)
def test_bad_names_are_refused_with_the_rule(name: str, why: str) -> None:
    with pytest.raises(InvalidName) as caught:
        validate_name(name, "team name")
    message = str(caught.value)
    assert why in message
    assert "^[a-z0-9][a-z0-9-]{0,63}$" in message
    assert repr(name) in message


def test_a_trailing_newline_is_not_smuggled_past_the_pattern() -> None:
    with pytest.raises(InvalidName):
        validate_name("alice\n")


def test_creating_a_team_with_a_bad_name_writes_nothing(config_root: Path) -> None:
    with pytest.raises(InvalidName):
        TeamFile(TeamPaths(config_root, "My Team")).create()
    assert not (config_root / "teams").exists()


def test_existing_teams_with_other_names_can_be_read(config_root: Path) -> None:
    team_dir = config_root / "teams" / "My_Project"
    team_dir.mkdir(parents=True)
    (team_dir / "config.json").write_text(
        '{"name": "My_Project", "createdAt": 1, "leadAgentId": "team-lead@My_Project", '
        '"members": []}'
    )
    assert TeamFile(TeamPaths(config_root, "My_Project")).load().name == "My_Project"


@pytest.mark.parametrize("component", ["", ".", "..", "a/b", "a\\b", "a\x00b"])
def test_reading_refuses_names_that_escape_the_directory(component: str) -> None:
    with pytest.raises(InvalidName):
        checked_component(component)
