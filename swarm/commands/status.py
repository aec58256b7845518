"""`swarm status` and `swarm reap`: who is alive, and cleaning up after the dead."""

from __future__ import annotations

import click

from protocols.tasks import TaskBoard
from protocols.team import TeamFile
from swarm import members as members_mod
from swarm import requests as requests_mod
from swarm.cli_common import emit, ids_text, json_option, paths_for, team_option


@click.command()
@json_option
@team_option
def status(as_json: bool, team: str) -> None:
    """Members (working/idle/dead), their tasks, task counts and pending requests."""
    paths = paths_for(team)
    tasks = TaskBoard(paths).list()
    rows = []
    for member in TeamFile(paths).load().members:
        current = [t.id for t in tasks if t.owner == member.name and t.status == "in_progress"]
        rows.append(
            {
                "name": member.name,
                "state": members_mod.member_state(member),
                "pid": members_mod.member_pid(member),
                "pane": member.tmuxPaneId or None,
                "backend": member.backendType,
                "tasks": current,
            }
        )
    counts = {
        s: sum(1 for t in tasks if t.status == s) for s in ("pending", "in_progress", "completed")
    }
    pending = len(requests_mod.pending_requests(paths))
    report = {"team": team, "members": rows, "tasks": counts, "pendingRequests": pending}
    emit(
        report,
        as_json,
        lambda r: "\n".join(
            [f"team {r['team']}"]
            + [
                f"  {m['name']:<16} {m['state']:<9} pid {m['pid'] or '-':<8} "
                f"{m['backend'] or ''} {m['pane'] or ''} tasks {ids_text(m['tasks'])}"
                for m in r["members"]
            ]
            + [
                f"tasks: {counts['pending']} pending, {counts['in_progress']} in progress, "
                f"{counts['completed']} completed; {pending} requests waiting"
            ]
        ),
    )


@click.command()
@team_option
def reap(team: str) -> None:
    """Remove members whose process is gone; their unfinished tasks go back to pending."""
    reaped = members_mod.reap(paths_for(team))
    for r in reaped:
        click.echo(f"reaped {r.name} (pid {r.pid}); returned {ids_text(r.released)}")
    if not reaped:
        click.echo("no dead members")
