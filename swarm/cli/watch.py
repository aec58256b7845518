"""`swarm watch`: the live dashboard of a team."""

from __future__ import annotations

import sys

import click

from swarm.cli.common import paths_for, team_option

MIN_WIDTH, MAX_WIDTH = 30, 1000


@click.command()
@team_option
@click.option("--once", is_flag=True, help="print one frame and exit (for scripts and logs)")
@click.option(
    "--width",
    type=click.IntRange(MIN_WIDTH, MAX_WIDTH),
    help=f"draw this many columns wide, {MIN_WIDTH} to {MAX_WIDTH} (default: the terminal; "
    "--once into a pipe: $COLUMNS, else 120)",
)
def watch(team: str, once: bool, width: int | None) -> None:
    """The team at a glance, redrawn whenever its files change.

    \b
    Members (state, current task, last activity, turns, model calls, tokens, cost), the task
    board, the requests waiting for you and the last messages to the lead, fitted to the
    terminal. A narrow one drops columns (turns and calls first, then tokens, cost, activity);
    a short one folds the completed tasks into one line and cuts the lists (messages, pending
    tasks first) but always shows the requests waiting and the keys; a tall one lists more
    messages and completed tasks. It needs a terminal: into a pipe or a file, use --once (or
    `swarm status --json`).
    Keys (in a terminal):
      j / k   select a request        Enter  show it in full       q   quit
      a       approve it              d      deny it (asks a reason)
      u       undo (within 1 s)       s      send a message
      Tab     to the members and back; then, on the selected member:
      l       its recent log lines    t      attach to its tmux pane (detach to come back)
      r       restart it (asks y/n)   x      shut it down (asks y/n)
    An answer is written 1 s after a or d, unless u takes it back; q writes it at once.
    """
    from swarm.views.dashboard import watch as run_watch  # rich loads only for this command

    sys.exit(run_watch(paths_for(team), once=once, width=width))
