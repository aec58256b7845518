"""`swarm logs`: what one member did (its transcript and messages), its raw transcript, or the
output log of its process; with ``--agent``, what one of its sub-agents did. On a PostgreSQL
team, what its process shipped to the store (`swarm.views.store_logs`), from any host."""

from __future__ import annotations

import click

from protocols.printable import printable, printable_json
from swarm.cli.common import json_option, paths_for, team_option
from swarm.cli.completion import complete_member
from swarm.errors import SwarmError
from swarm.views.log_lines import LogEvent
from swarm.views.logs import (
    ActivityLog,
    ProcessLog,
    RawTranscript,
    SubAgentLog,
    find_subagent,
    follow,
)
from swarm.views.store_logs import StoreActivityLog, StoreProcessLog, StoreRawLog, follow_store


@click.command()
@click.argument("name", shell_complete=complete_member)
@click.option("--follow", "-f", "following", is_flag=True, help="keep printing new lines")
@click.option("--raw", is_flag=True, help="the transcript's JSON lines as they are")
@click.option("--process", is_flag=True, help="the process's output log instead")
@click.option("-n", "count", type=click.IntRange(min=0), help="only the last N lines")
@click.option(
    "--agent",
    "agent",
    metavar="ID",
    help="one of NAME's sub-agents instead: its agent id (or the name it was given)",
)
@json_option
@team_option
def logs(
    name: str,
    following: bool,
    raw: bool,
    process: bool,
    count: int | None,
    agent: str | None,
    as_json: bool,
    team: str,
) -> None:
    """Show what member NAME did, oldest first: tool calls and results, what the model said,
    tokens per reply, and messages in and out. With --agent, what one of its sub-agents did
    (its own transcript; `swarm status --json` lists their ids).

    On a PostgreSQL team, from any host: what NAME's process shipped to the store (its
    transcript's tool calls, replies and errors, what it printed; its newest 2,000 lines) and
    its messages. A sub-agent's transcript (--agent) stays on its member's host."""
    if raw + process + as_json > 1:
        raise SwarmError("choose one of --raw, --process and --json")
    if agent is not None and process:
        raise SwarmError("a sub-agent has no process of its own: --agent goes without --process")
    paths = paths_for(team)
    agent_id = find_subagent(paths, name, agent) if agent is not None else None
    source: ActivityLog | RawTranscript | ProcessLog | StoreProcessLog | StoreRawLog
    on_store = paths.store is not None and agent_id is None  # shipped by hosts anywhere
    if on_store:
        source = StoreRawLog(paths, name) if raw else StoreProcessLog(paths, name)
        if not (raw or process):
            source = StoreActivityLog(paths, name)
            if source.note:
                click.echo(f"swarm: {printable(source.note)}", err=True)
    elif raw:
        source = RawTranscript(paths, name, agent_id)
    elif agent_id is not None:
        source = SubAgentLog(paths, name, agent_id)
    elif process:
        source = ProcessLog(paths, name)
    else:
        source = ActivityLog(paths, name)
        if source.note:
            click.echo(f"swarm: {printable(source.note)}", err=True)
    events = source.poll()
    events = events[len(events) - count :] if count is not None else events
    if as_json and not following:
        click.echo(printable_json([e.to_json() for e in events], indent=2))
        return

    def show(event: LogEvent) -> None:
        click.echo(printable_json(event.to_json()) if as_json else event.line())

    for event in events:
        show(event)
    if following and on_store:
        follow_store(paths, source.poll, show)
    elif following:
        follow(paths, name, source.poll, show, agent_id)
