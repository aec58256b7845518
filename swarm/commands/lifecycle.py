"""`swarm shutdown`: ask a teammate to stop (the shutdown protocol), or stop it with --force."""

from __future__ import annotations

import sys

import click

from swarm.cli_common import ids_text, paths_for, team_option
from swarm.lifecycle import request_shutdown


@click.command()
@click.argument("name")
@click.option("--reason", help="told to the teammate")
@click.option(
    "--wait",
    "wait_s",
    type=float,
    default=30.0,
    show_default=True,
    help="seconds to wait for the answer",
)
@click.option("--force", is_flag=True, help="stop it even if it refuses or does not answer")
@team_option
def shutdown(name: str, reason: str | None, wait_s: float, force: bool, team: str) -> None:
    """Ask teammate NAME to shut down; remove it and return its tasks once it has stopped."""
    result = request_shutdown(paths_for(team), name, reason, wait_s, force)
    if result.stopped:
        click.echo(
            f"{name}: {result.outcome}; stopped and removed; "
            f"tasks returned to pending: {ids_text(result.released)}"
        )
        return
    click.echo(
        f"{name}: {result.outcome}: {result.reason} (use --force to stop it anyway)", err=True
    )
    sys.exit(1)
