"""`swarm compact`: ask a teammate to compact its conversation now."""

from __future__ import annotations

import sys

import click

from protocols.printable import printable_line
from swarm.cli.common import emit, json_option, paths_for, say_waiting, team_option
from swarm.cli.completion import complete_member
from swarm.team import waiting
from swarm.team.compaction import ask_compaction, wait_compacted

EXIT = {waiting.MET: 0, waiting.FAILED: 3, waiting.TIMED_OUT: 124}


@click.command()
@click.argument("name", shell_complete=complete_member)
@click.argument("instructions", required=False, default="")
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="wait until its status shows the compaction",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="seconds to wait at most",
)
@json_option
@team_option
def compact(
    name: str, instructions: str, wait: bool, timeout: float, as_json: bool, team: str
) -> None:
    """Ask teammate NAME to compact its conversation: replace it by a summary it writes, keeping
    its task, its team and what it was doing (INSTRUCTIONS: what the summary must keep).
    An idle teammate compacts at once; a working one before its next model request.
    Teammates also compact on their own when their context window fills up.

    \b
    Exit codes: 0 it compacted (or was asked, with --no-wait); 3 it is not
    running; 124 the timeout passed; 1 an error.
      swarm compact alice
      swarm compact alice "keep the failing test names and the plan"
      swarm compact alice --no-wait --json
    """
    paths = paths_for(team)
    before = ask_compaction(paths, name, instructions)
    result: dict[str, object] = {"name": name, "before": before._asdict()}
    if not wait:
        result.update(state="asked", detail=f"asked {name} to compact ({before.text()})")
        emit(result, as_json, lambda r: printable_line(str(r["detail"])))
        return
    say_waiting(f"asked {name} to compact ({before.text()}); waiting up to {timeout:g} s")
    outcome = wait_compacted(paths, name, before, timeout)
    result.update(state=outcome.state, detail=outcome.detail)
    emit(result, as_json, lambda r: printable_line(str(r["detail"])))
    sys.exit(EXIT[outcome.state])
