"""Helpers shared by the `swarm` commands: the --team and --json options, output, paths.

Output goes through `emit`: text with control characters shown escaped, JSON with them as
``\\uXXXX`` escapes (`protocols.printable`), since most of what is printed was read from files
a teammate may have written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from protocols.errors import TeamNotFound
from protocols.fs import safefs
from protocols.names import did_you_mean
from protocols.paths import TeamPaths, config_root
from protocols.printable import printable, printable_json
from protocols.store.selection import check_url, locate, open_store, redacted
from swarm.cli.completion import complete_team

STORE_KEY = "swarm.store"  # where `--store` leaves its URL for `paths_for` (click's ctx.meta)


def store_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--store URL``: the team's PostgreSQL store (`protocols.store.selection`), for this
    command."""
    return click.option(
        "--store",
        metavar="URL",
        expose_value=False,
        callback=_remember_store,
        help=(
            "the team's PostgreSQL store, postgresql://[user[:password]@][host][:port]/dbname "
            "(default: $SWARM_STORE, else the store the team was created in here, else files)"
        ),
    )(function)


def _remember_store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[STORE_KEY] = check_url(value)


def given_store() -> str | None:
    """The URL of ``--store`` (this command's, or ``swarm --store``'s), if one was given."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(STORE_KEY) if ctx is not None else None


def team_option(function: Callable[..., Any]) -> Callable[..., Any]:
    function = store_option(function)
    return click.option(
        "--team",
        "-t",
        envvar="SWARM_TEAM",
        callback=_need_team,
        shell_complete=complete_team,
        help="the team (default: $SWARM_TEAM)",
    )(function)


NO_TEAM = (
    "no team given: pass --team NAME, or export SWARM_TEAM=NAME once for the shell "
    "(`swarm team list` shows the teams)"
)


def _need_team(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if not value:
        raise click.UsageError(NO_TEAM, ctx)
    return value


def team_argument(function: Callable[..., Any]) -> Callable[..., Any]:
    """An optional TEAM argument beside ``--team``/``-t``/``$SWARM_TEAM``, for the commands that
    have always taken the team as an argument (`swarm down TEAM`, `swarm team show NAME`):
    the function gets ``name`` and ``team``, and calls `pick_team` with them."""
    function = click.option(
        "--team", "-t", envvar="SWARM_TEAM", help="the team (default: TEAM, else $SWARM_TEAM)"
    )(store_option(function))
    return click.argument("name", required=False, metavar="[TEAM]", shell_complete=complete_team)(
        function
    )


def pick_team(positional: str | None, option: str | None) -> str:
    """The team of a `team_argument` command: the argument, else ``--team``, else
    ``$SWARM_TEAM``. An argument and an explicit ``--team`` that disagree are an error (an
    argument that differs from ``$SWARM_TEAM`` wins: it was typed, the variable was not)."""
    ctx = click.get_current_context()
    typed = ctx.get_parameter_source("team") == click.core.ParameterSource.COMMANDLINE
    if positional and option and typed and positional != option:
        raise click.UsageError(
            f"two different teams given: {positional!r} and --team {option!r}; give one", ctx
        )
    team = positional or option
    if not team:
        raise click.UsageError(NO_TEAM, ctx)
    return team


def member_team_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--team`` for commands that need a team only when given a member's NAME."""
    function = store_option(function)
    return click.option(
        "--team",
        "-t",
        envvar="SWARM_TEAM",
        shell_complete=complete_team,
        help="the team of NAME (default: $SWARM_TEAM)",
    )(function)


def json_option(function: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="print JSON")(function)


def paths_for(team: str, must_exist: bool = True) -> TeamPaths:
    """The team's paths, with the store it lives in (`protocols.store.selection.locate`); with
    `must_exist`, `TeamNotFound` for a team that is not there."""
    paths = locate(team, config_root(), given_store())
    if must_exist:
        require_team(paths)
    return paths


def require_team(paths: TeamPaths) -> None:
    """`TeamNotFound` unless the team of `paths` is in its store (any thread may ask: the
    store comes with the paths)."""
    team = paths.team
    if paths.store is not None:
        if not open_store(paths).team_exists():
            where = redacted(paths.store)
            raise TeamNotFound(
                f"team {team!r} not found in the PostgreSQL store {where}; create it with "
                f"swarm team create {team} --store URL"
            )
        return
    if not safefs.exists(paths.config):
        try:
            teams = safefs.listdir(paths.root / "teams")
        except OSError:
            teams = []
        raise TeamNotFound(
            f"team {team!r} not found under {paths.root}{did_you_mean(team, sorted(teams))}; "
            "`swarm team list` shows the teams"
        )


def emit(value: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    """Print `value` as JSON, or as `text` makes it; either way safe for a terminal (one-line
    fields in `text` should be escaped with `printable_line` already: a newline is kept here)."""
    click.echo(printable_json(value, indent=2) if as_json else printable(text(value)))


def say_waiting(line: str) -> None:
    """Tell the person at the terminal what a slow command waits for (on stderr, escaped: it
    names members), so that ``--json`` output stays one document."""
    click.echo(printable(line), err=True)


def ids_text(ids: list[str]) -> str:
    """``#3, #4``, or ``none``: task ids as a person reads them in a list."""
    return ", ".join("#" + i for i in ids) or "none"


def tasks_text(ids: list[str]) -> str:
    """``no tasks``, ``task #3``, ``tasks #3, #4``: task ids as a person reads them."""
    if not ids:
        return "no tasks"
    return f"task{'s' if len(ids) > 1 else ''} {', '.join('#' + i for i in ids)}"


def backend_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--backend auto|tmux|subprocess`` (default auto) for the commands that start teammates."""
    return click.option(
        "--backend",
        type=click.Choice(["auto", "tmux", "subprocess"]),
        default="auto",
        show_default=True,
        help=help,
    )
