"""The TEAM argument of `swarm down` (and its kin): a team's name, or the YAML team file that
`swarm up` started it from, read only for its ``team:`` (as `swarm up FILE` names the team).

An argument ending in ``.yaml`` or ``.yml``, or holding a ``/``, is a file (no team name has
either: names are one path component, and a team file ends so); anything else is a name, left
for the command to judge (a Claude Code team may have a name swarm would not create). The file
need not be a valid team file otherwise: a team is brought down after its file was edited.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from protocols.errors import InvalidName
from protocols.names import checked_component
from swarm.up.spec import TeamFileError

TEAM_FILE_SUFFIXES = (".yaml", ".yml")


def is_team_file(argument: str) -> bool:
    """Whether `argument` names a team file rather than a team."""
    return argument.endswith(TEAM_FILE_SUFFIXES) or os.sep in argument


def team_of_argument(argument: str) -> str:
    """The team `argument` names: itself, or the ``team:`` of the team file it is a path to.
    `TeamFileError` when that file cannot be read or names no team."""
    if not is_team_file(argument):
        return argument
    path = Path(argument)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TeamFileError(
            f"cannot read team file {path}: {exc.strerror or exc} (the argument is taken for a "
            "team file because it ends in .yaml or .yml or holds a /; give a team's name "
            "otherwise)"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise TeamFileError(f"{where}: not valid YAML, so it names no team: {exc}") from None
    team = data.get("team") if isinstance(data, dict) else None
    if not isinstance(team, str) or not team:
        raise TeamFileError(f"{path}: no `team:` naming the team (expected `team: NAME`)")
    try:
        return checked_component(team, "team name")
    except InvalidName as exc:
        raise TeamFileError(f"{path}: team: {exc}") from None
