"""`swarm attach NAME`: watch a teammate: its tmux pane, or a subprocess teammate's log."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from protocols.printable import printable_line
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.cli.completion import complete_member
from swarm.errors import SwarmError
from swarm.team.attach import AttachTarget, attach_target
from swarm.views.panes import attach_line


@click.command()
@click.argument("name", shell_complete=complete_member)
@json_option
@team_option
def attach(name: str, as_json: bool, team: str) -> None:
    """Watch teammate NAME: select its tmux pane and attach this terminal to it (inside tmux,
    switch your client to it), or follow a subprocess teammate's log until Ctrl-C. A member of
    a PostgreSQL team that runs on another host has its pane there: the error says which host,
    and `swarm logs NAME --follow` follows it from here. Before the terminal becomes tmux's it
    prints the tmux command that comes back to the pane: outside tmux, a team's panes are on a
    private tmux server (tmux -L swarm-TEAM), which a plain `tmux ls` does not list.

    \b
    --json prints what it would do (the pane, the tmux socket, the log, the command) and
    does nothing:
      swarm attach ann --json
    """
    paths = paths_for(team)
    target = attach_target(paths, name, os.environ)
    if as_json:
        emit(target.to_json(), True, str)
        return
    if target.log is not None:
        from swarm.views.logs import ProcessLog, follow

        source = ProcessLog(paths, name)
        for event in source.poll()[-20:]:  # the last lines, as tail -f shows them
            click.echo(event.line())
        follow(paths, name, source.poll, lambda event: click.echo(event.line()))
        return
    environ = dict(os.environ)
    if target.clear_tmux:  # tmux refuses to attach inside tmux unless $TMUX is cleared
        environ.pop("TMUX", None)
    if target.how == "switch-client":
        done = subprocess.run(target.command, env=environ, capture_output=True, text=True)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
            raise SwarmError(f"tmux could not switch to {name}: {why}")
        return
    click.echo(printable_line(attach_hint(target)), err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(target.command[0], target.command, environ)  # the terminal is tmux's now


def attach_hint(target: AttachTarget) -> str:
    """What `swarm attach` says before the terminal becomes tmux's: which server the pane is
    on, and the tmux command that comes back to it (a private server is not in `tmux ls`)."""
    assert target.pane is not None
    again = attach_line(target.socket, target.pane)
    where = f"{target.name}'s pane {target.pane}"
    if target.socket is not None:
        where += f" on the private tmux server {target.socket!r} (plain `tmux ls` does not list it)"
    return f"attaching to {where}; detach with your tmux prefix and d, come back with: {again}"
