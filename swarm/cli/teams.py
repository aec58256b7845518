"""`swarm team ...`: create, list, show and delete teams."""

from __future__ import annotations

from pathlib import Path

import click

from protocols.names import validate_name
from protocols.paths import config_root
from protocols.printable import printable, printable_line
from protocols.team import TeamFile
from swarm.cli.common import emit, json_option, paths_for
from swarm.team.lifecycle import delete_team
from swarm.views.teams import describe, list_teams


@click.group()
def team() -> None:
    """Create, list, show and delete teams."""


@team.command("create")
@click.argument("name")
@click.option("--description", "-d", help="what the team works on")
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="the lead's working directory",
)
def team_create(name: str, description: str | None, cwd: Path) -> None:
    """Create team NAME with its lead member `team-lead`."""
    validate_name(name, "team name")
    TeamFile(paths_for(name, must_exist=False)).create(description=description, cwd=cwd)
    click.echo(f"created team {name!r}; use --team {name} or export SWARM_TEAM={name}")


@team.command("list")
@json_option
def team_list(as_json: bool) -> None:
    """List the teams under the config root.

    Claude Code 2.1.178 and later make a team for every lead session, named
    session-<first 8 hex of its session id>: those rows show the lead's session, its pid and
    whether it still runs. Any command takes such a name with --team."""

    def skipped(name: str, why: str) -> None:  # a broken team, or a link: say so, list the rest
        click.echo(f"swarm: skipping {printable_line(name)}: {printable(why)}", err=True)

    rows = list_teams(config_root(), skipped)
    emit(
        [r.to_json() for r in rows],
        as_json,
        lambda _: "\n".join(printable_line(describe(r)) for r in rows) or "no teams",
    )


@team.command("show")
@click.argument("name")
@json_option
def team_show(name: str, as_json: bool) -> None:
    """Show team NAME's config."""
    config = TeamFile(paths_for(name)).load()
    emit(
        config.to_json_dict(),
        as_json,
        lambda c: "\n".join(
            [printable_line(f"{c['name']}: {c.get('description') or ''}")]
            + [
                printable_line(
                    f"  {m['name']:<16} {m.get('agentType') or '':<16} {m.get('color') or '':<8} "
                    f"{m.get('backendType') or ''} {m.get('tmuxPaneId') or ''}"
                )
                for m in c["members"]
            ]
        ),
    )


@team.command("delete")
@click.argument("name")
@click.option("--force", is_flag=True, help="shut live members down first (stopped if they refuse)")
def team_delete(name: str, force: bool) -> None:
    """Delete team NAME: its teams/NAME and tasks/NAME directories."""
    for result in delete_team(paths_for(name), force):
        click.echo(printable_line(f"shut down {result.name}: {result.outcome}"))
    click.echo(f"deleted team {name!r}")
