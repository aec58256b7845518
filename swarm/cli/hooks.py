"""`swarm hooks`: the hooks in force for a member, or for a directory (`swarm.team.hooks`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from protocols.paths import config_root
from protocols.printable import printable_line
from swarm.cli.common import emit, json_option, member_team_option, paths_for
from swarm.cli.completion import complete_member


@click.command()
@click.argument("name", required=False, shell_complete=complete_member)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="the project directory (default: the member's, else this one)",
)
@member_team_option
@json_option
def hooks(name: str | None, cwd: Path | None, team: str | None, as_json: bool) -> None:
    """List the hooks in force: event, matcher, timeout, command and the file each came from.

    \b
    NAME: a member (its cwd, --settings file and agent type's hooks);
    none: the hooks of the settings where this command runs (what the lead
    and `swarm task` run).
    """
    from swarm.team.hooks import hooks_in_force

    paths = paths_for(team) if team and name else None
    found = hooks_in_force(config_root(), paths, name, cwd)
    emit(found, as_json, _text)


def _text(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no hooks"
    rows = [("EVENT", "MATCHER", "TIMEOUT", "COMMAND", "SOURCE")] + [
        (h["event"], h["matcher"] or "*", f"{h['timeout']:g}s", h["command"], h["source"])
        for h in found
    ]
    rows = [tuple(printable_line(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[4]])
        for row in rows
    )
