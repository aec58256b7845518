"""`swarm.up.argument.team_of_argument`: `swarm down` takes a team's name or the team file
`swarm up` started it from (issue 38)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarm.up.argument import is_team_file, team_of_argument
from swarm.up.spec import TeamFileError


def test_a_name_is_the_team() -> None:
    assert team_of_argument("pipeline") == "pipeline"
    assert team_of_argument("v1.2") == "v1.2"  # a Claude Code team swarm would not name so
    assert not is_team_file("pipeline") and not is_team_file("v1.2")


def test_a_team_file_names_its_team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("team.yaml", "team.yml"):
        (tmp_path / name).write_text("team: shop\nmembers: [{name: ann, prompt: Work.}]\n")
        assert team_of_argument(str(tmp_path / name)) == "shop"
    monkeypatch.chdir(tmp_path)
    assert team_of_argument("team.yaml") == "shop"  # relative to where the command runs
    (tmp_path / "teamfile").write_text("team: shop\n")
    assert team_of_argument(f".{os.sep}teamfile") == "shop"  # a path, whatever its suffix


def test_a_file_that_no_longer_checks_still_names_its_team(tmp_path: Path) -> None:
    """Brought down after an edit broke it: only `team:` is read."""
    path = tmp_path / "team.yaml"
    path.write_text("team: shop\nmembers: 42\ntasks: [{owner: nobody}]\n")
    assert team_of_argument(str(path)) == "shop"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("members: []\n", "no `team:` naming the team"),
        ("team: 42\n", "no `team:` naming the team"),
        ("- a list\n", "no `team:` naming the team"),
        ("team: ../up\n", "team: invalid team name '../up'"),
        ("team: [unclosed\n", ":2: not valid YAML"),
    ],
)
def test_a_team_file_that_names_no_team(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(text)
    with pytest.raises(TeamFileError, match="^" + str(path)) as raised:
        team_of_argument(str(path))
    assert said in str(raised.value)


def test_a_missing_team_file_says_why_it_was_taken_for_one(tmp_path: Path) -> None:
    with pytest.raises(TeamFileError) as raised:
        team_of_argument(str(tmp_path / "gone.yaml"))
    text = str(raised.value)
    assert f"cannot read team file {tmp_path / 'gone.yaml'}: No such file" in text
    assert "ends in .yaml or .yml or holds a /" in text
