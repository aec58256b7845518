"""`swarm config`: what a member (or an agent started in a directory) loads from Claude Code's
files, and which file each piece comes from (`swarm.views.config`)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from protocols.paths import config_root
from swarm.cli.common import emit, json_option, member_team_option, paths_for
from swarm.cli.completion import complete_member
from swarm.views.config import config_text, effective_config, member_config


@click.command()
@click.argument("name", required=False, shell_complete=complete_member)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="without NAME: the directory an agent would start in (default: here)",
)
@click.option(
    "--settings",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="without NAME: a --settings file it would be given",
)
@click.option("--agent-type", default="general-purpose", show_default=True, help="without NAME")
@member_team_option
@json_option
def config(
    name: str | None,
    cwd: Path | None,
    settings: Path | None,
    agent_type: str,
    team: str | None,
    as_json: bool,
) -> None:
    """Where each setting a member uses comes from: the settings files (user, project, local,
    --settings) with their permission rules, default mode, env keys, hooks, MCP servers and
    agents; the CLAUDE.md files; the skills; its memory directory.

    \b
      swarm config alice --team demo     # as alice was started
      swarm config --cwd ~/src/app       # what an agent started there would load
    """
    if name is not None:
        if not team:
            raise click.UsageError("give the team of NAME with --team or SWARM_TEAM")
        value = member_config(paths_for(team), name)
    else:
        here = cwd or Path(os.getcwd())
        value = effective_config(here, config_root(), settings, agent_type)
    emit(value, as_json, config_text)
