"""`swarm status` and `swarm reap`: who is alive and what it costs (the text is
`swarm.views.table`, the data `swarm.views.snapshot`), and cleaning up after the dead."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import click

from swarm.cli.common import emit, ids_text, json_option, paths_for, team_option
from swarm.views.snapshot import snapshot, to_json
from swarm.views.table import render


@click.command()
@json_option
@team_option
def status(as_json: bool, team: str) -> None:
    """Members (working/idle/dead), their tasks, model calls and tokens, task counts and pending
    requests. Tokens: input (all prompt tokens, of which cached) / output."""
    with _no_cycle_collection():
        view = snapshot(paths_for(team), once=True)
        shown = to_json(view) if as_json else render(view)
    if as_json:
        emit(shown, True, str)
    else:
        click.echo(shown)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Collect no reference cycles while a look builds its view: it makes ~100,000 objects
    (10,000 tasks, 200 members) and makes no cycles, and the collector's passes over them cost
    ~5 ms of a look that exits right after. Collection resumes after (tests run commands in
    their own process)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
                f"reaped {r.name} (pid {r.pid}); returned {ids_text(r.released)}" for r in reaped
            )
            or "no dead members"
        ),
    )
