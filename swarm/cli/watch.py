"""`swarm watch`: the live dashboard of a team."""

from __future__ import annotations

import sys

import click

from swarm.cli.common import paths_for, team_option


@click.command()
@team_option
@click.option("--once", is_flag=True, help="print one frame and exit (for scripts and logs)")
@click.option("--width", type=int, help="draw this many columns wide (default: the terminal)")
def watch(team: str, once: bool, width: int | None) -> None:
    """The team at a glance, redrawn whenever its files change.

    \b
    Members (state, current task, last activity, turns, model calls, tokens, cost), the task
    board, the requests waiting for you and the last messages to the lead. Keys (in a terminal):
      j / k   select a request        a   approve it        d   deny it
      s       send a message          q   quit
    """
    from swarm.views.dashboard import watch as run_watch  # rich loads only for this command

    sys.exit(run_watch(paths_for(team), once=once, width=width))
