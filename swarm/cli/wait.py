"""`swarm wait`: block until a task is completed, every task is, a member is idle, or a message
arrives (`swarm.team.waiting`), woken by inotify; the exit code says how it ended."""

from __future__ import annotations

import sys

import click

from protocols.printable import printable_line
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.team import waiting

EXIT = {waiting.MET: 0, waiting.FAILED: 3, waiting.TIMED_OUT: 124}


@click.command()
@click.option("--task", "task_id", metavar="ID", help="until task ID is completed")
@click.option("--all-tasks", is_flag=True, help="until every task is completed")
@click.option("--idle", metavar="NAME", help="until member NAME is idle")
@click.option("--message", metavar="NAME", help="until NAME's inbox holds an unread message")
@click.option(
    "--timeout", type=click.FloatRange(min=0), default=600.0, show_default=True, help="seconds"
)
@json_option
@team_option
def wait(
    task_id: str | None,
    all_tasks: bool,
    idle: str | None,
    message: str | None,
    timeout: float,
    as_json: bool,
    team: str,
) -> None:
    """Wait for one thing to happen in the team, without polling (inotify wakes it).

    \b
    Exit codes: 0 it happened; 3 it cannot happen any more (the task failed or
    was deleted, the member is dead or left); 124 the timeout passed; 1 an error.
      swarm task add "build" --command "make" && swarm wait --task 1 --timeout 300
      swarm wait --message team-lead     # prints the unread message(s)
    """
    asked = [x for x in (task_id, all_tasks or None, idle, message) if x is not None]
    if len(asked) != 1:
        raise click.UsageError("give exactly one of --task, --all-tasks, --idle, --message")
    paths = paths_for(team)
    if task_id is not None:
        check, watched = waiting.task_done(paths, task_id), waiting.Watched(board=True)
    elif all_tasks:
        check, watched = waiting.all_done(paths), waiting.Watched(board=True)
    elif idle is not None:
        check, watched = waiting.member_idle(paths, idle), waiting.Watched(members=True)
    else:
        assert message is not None
        check = waiting.unread_message(paths, message)
        watched = waiting.Watched(inboxes=(message,))
    outcome = waiting.wait_until(check, paths, watched, timeout)
    value = {
        "outcome": outcome.state,
        "detail": outcome.detail,
        "messages": [m.to_json_dict() for m in outcome.messages],
    }

    def text(_: object) -> str:
        lines = [printable_line(f"{outcome.state}: {outcome.detail}")]
        lines += [printable_line(f"{m.from_}: {m.text}") for m in outcome.messages]
        return "\n".join(lines)

    emit(value, as_json, text)
    sys.exit(EXIT[outcome.state])
