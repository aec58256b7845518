"""`swarm status` and `swarm reap`: who is alive and what it costs (the text is
`swarm.views.status_report`, also printed by the quick path `swarm.cli.quick`), and cleaning up
after the dead."""

from __future__ import annotations

import click

from swarm.cli.common import emit, json_option, paths_for, tasks_text, team_option
from swarm.views.status_report import status_report


@click.command()
@json_option
@team_option
def status(as_json: bool, team: str) -> None:
    """Members (working/idle/dead), their tasks, model calls and tokens, task counts and pending
    requests. Tokens: input (all prompt tokens, of which cached) / output."""
    click.echo(status_report(paths_for(team), as_json))


@click.command()
@json_option
@team_option
def reap(as_json: bool, team: str) -> None:
    """Remove members whose process is gone; their unfinished tasks go back to pending."""
    from swarm.team import members  # the spawn backends: not for `swarm status`

    reaped = members.reap(paths_for(team))
    emit(
        [{"name": r.name, "pid": r.pid, "released": r.released} for r in reaped],
        as_json,
        lambda _: (
            "\n".join(
                f"reaped {r.name} ({f'pid {r.pid}' if r.pid else 'it never started'}); "
                f"returned {tasks_text(r.released)}{' to the board' if r.released else ''}"
                for r in reaped
            )
            or "no dead members"
        ),
    )
