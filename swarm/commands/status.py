"""`swarm status` and `swarm reap`: who is alive, and cleaning up after the dead."""

from __future__ import annotations

from typing import Any

import click

from protocols.status import read_status
from protocols.tasks import TaskBoard
from protocols.team import TeamFile
from swarm import members as members_mod
from swarm import requests as requests_mod
from swarm.cli_common import emit, ids_text, json_option, paths_for, team_option


@click.command()
@json_option
@team_option
def status(as_json: bool, team: str) -> None:
    """Members (working/idle/dead), their tasks, model calls and tokens, task counts and
    pending requests. Tokens: input (all prompt tokens, of which cached) / output."""
    paths = paths_for(team)
    tasks = TaskBoard(paths).list()
    rows = []
    for member in TeamFile(paths).load().members:
        current = [t.id for t in tasks if t.owner == member.name and t.status == "in_progress"]
        agent = read_status(paths, member.name)
        rows.append(
            {
                "name": member.name,
                "state": members_mod.member_state(member),
                "pid": members_mod.member_pid(member),
                "pane": member.tmuxPaneId or None,
                "backend": member.backendType,
                "tasks": current,
                "model": agent.model if agent else member.model,
                "activity": agent.activity if agent else None,
                "requests": agent.requests if agent else 0,
                "usage": agent.usage if agent else None,
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
                f"{usage_text(m)}"
                for m in r["members"]
            ]
            + [
                f"tasks: {counts['pending']} pending, {counts['in_progress']} in progress, "
                f"{counts['completed']} completed; {pending} requests waiting"
            ]
        ),
    )


def usage_text(member: dict[str, Any]) -> str:
    """`` model sonnet, 3 calls, tokens 1,200 in (900 cached) / 40 out``, if it made calls."""
    usage = member.get("usage")
    if not usage or not member.get("requests"):
        return ""
    cached = usage.get("cache_read_input_tokens", 0)
    prompt = usage.get("input_tokens", 0) + cached + usage.get("cache_creation_input_tokens", 0)
    return (
        f" | {member['model']}, {member['requests']} calls, tokens {prompt:,} in "
        f"({cached:,} cached) / {usage.get('output_tokens', 0):,} out"
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
