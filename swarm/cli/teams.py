"""`swarm team ...`: create, list, show and delete teams; the team's budget; prune a PostgreSQL
team's history."""

from __future__ import annotations

from pathlib import Path

import click

from protocols.durations import duration_text
from protocols.member.prices import usd
from protocols.names import validate_name
from protocols.paths import config_root
from protocols.printable import printable, printable_line
from protocols.store.selection import open_store, write_pointer
from swarm.cli.common import (
    emit,
    json_option,
    paths_for,
    pick_team,
    say_waiting,
    team_argument,
    team_option,
)
from swarm.team.budget import parse_change
from swarm.team.retention import prune_history
from swarm.team.stopping import delete_team
from swarm.team.team_budget import TeamBudgetView, change_team_budget, show_team_budget
from swarm.views.teams import describe, list_teams


@click.group()
def team() -> None:
    """Create, list, show and delete teams; the team's budget; prune a team's history."""


@team.command("create")
@click.option("--description", "-d", help="what the team works on")
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="the lead's working directory",
)
@json_option
@team_argument
def team_create(
    name: str | None, team: str | None, description: str | None, cwd: Path, as_json: bool
) -> None:
    """Create team TEAM with its lead member `team-lead`.

    \b
    With --store URL (or $SWARM_STORE) the team lives in that PostgreSQL database, for a team
    that spans machines; this machine remembers it in teams/TEAM/swarm-store.json (the URL
    without its password), so later commands here find it without --store.
      swarm team create shop --store postgresql://swarm@db.example/swarm"""
    name = pick_team(name, team)
    validate_name(name, "team name")
    paths = paths_for(name, must_exist=False)
    store = open_store(paths)
    config = store.team_file().create(description=description, cwd=cwd)
    value = {"team": name, "config": str(paths.config), "leadAgentId": config.leadAgentId}
    if paths.store is not None:
        write_pointer(paths)
        value = {"team": name, "store": store.where(), "leadAgentId": config.leadAgentId}
    emit(
        value,
        as_json,
        lambda _: (
            f"created team {name!r}"
            + (f" in {store.where()}" if paths.store else "")
            + f"; use --team {name} or export SWARM_TEAM={name}"
        ),
    )


@team.command("list")
@json_option
def team_list(as_json: bool) -> None:
    """List the teams under the config root.

    Claude Code 2.1.178 and later make a team for every lead session, named
    session-<first 8 hex of its session id>: those rows show the lead's session, its pid and
    whether it still runs. Any command takes such a name with --team."""

    def skipped(name: str, why: str) -> None:  # a broken team, or a link: say so, list the rest
        click.echo(f"swarm: skipping {printable_line(name)}: {printable(why)}", err=True)

    rows = list_teams(config_root(), skipped)
    emit(
        [r.to_json() for r in rows],
        as_json,
        lambda _: "\n".join(printable_line(describe(r)) for r in rows) or "no teams",
    )


@team.command("show")
@json_option
@team_argument
def team_show(name: str | None, team: str | None, as_json: bool) -> None:
    """Show team TEAM's config (default: --team, else $SWARM_TEAM)."""
    config = open_store(paths_for(pick_team(name, team))).team_file().load()
    emit(
        config.to_json_dict(),
        as_json,
        lambda c: "\n".join(
            [printable_line(f"{c['name']}: {c.get('description') or ''}")]
            + [
                printable_line(
                    f"  {m['name']:<16} {m.get('agentType') or '':<16} {m.get('color') or '':<8} "
                    f"{m.get('backendType') or ''} {m.get('tmuxPaneId') or ''}"
                )
                for m in c["members"]
            ]
        ),
    )


@team.command("delete")
@click.option(
    "--force",
    is_flag=True,
    help="shut live members down first: all asked at once, and stopped if they refuse or do "
    "not answer within 10 s",
)
@json_option
@team_argument
def team_delete(name: str | None, team: str | None, force: bool, as_json: bool) -> None:
    """Delete team TEAM: its teams/TEAM and tasks/TEAM directories (default: --team, else
    $SWARM_TEAM)."""
    name = pick_team(name, team)
    results = delete_team(paths_for(name), force, progress=say_waiting)
    shut = [{"name": r.name, "outcome": r.outcome, "released": r.released} for r in results]
    emit(
        {"team": name, "deleted": True, "shutDown": shut},
        as_json,
        lambda _: "\n".join(
            [printable_line(f"shut down {r.name}: {r.outcome}") for r in results]
            + [f"deleted team {name!r}"]
        ),
    )


@team.command("prune")
@click.option(
    "--days",
    metavar="DAYS|off",
    help="delete read messages read more than DAYS ago, and records of finished work older "
    "than that (default: $SWARM_HISTORY_DAYS, else 30)",
)
@click.option(
    "--keep",
    metavar="N|off",
    help="keep each member's newest N read messages at most (default: $SWARM_HISTORY_KEEP, "
    "else 5000; at least 200)",
)
@click.option("--dry-run", is_flag=True, help="count what would be deleted; delete nothing")
@json_option
@team_argument
def team_prune(
    name: str | None,
    team: str | None,
    days: str | None,
    keep: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Delete now the history a team on PostgreSQL no longer keeps: read messages past the
    retention, and the records of finished work (task events, answered host requests,
    resolved permission requests, the log of members that left). Unread messages are never
    deleted. The lead and every `swarm host serve` do this by themselves every hour.

    \b
      swarm team prune shop --dry-run          # what would go
      swarm team prune shop --days 7 --keep off"""
    name = pick_team(name, team)
    pruned = prune_history(paths_for(name), days, keep, dry_run)
    verb = "would delete" if dry_run else "deleted"
    emit(
        {"team": name, "dryRun": dry_run, "deleted": pruned.counts},
        as_json,
        lambda _: (
            f"{name}: {verb} "
            + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in pruned.counts.items())
        ),
    )


# unknown options are arguments: `-1` reaches parse_change, which says what is allowed
@team.command("budget", context_settings={"ignore_unknown_options": True})
@click.argument("change", required=False, metavar="[+USD|=USD]")
@click.option("--tokens", metavar="+N|=N", help="raise the token limit by N (+N) or set it (=N)")
@click.option(
    "--time",
    "time_",
    metavar="+D|=D",
    help="raise the time limit by D (+30m) or set it to D from now (=4h)",
)
@json_option
@team_option
def team_budget(
    change: str | None, tokens: str | None, time_: str | None, as_json: bool, team: str
) -> None:
    """Show what the whole team has spent against its limits, or change them: +USD raises the
    cost limit by USD, =USD sets it. At a limit no member makes another model request (each
    tells the lead why) until it is raised; then they carry on.

    \b
      swarm team budget --team shop              # spend and limits
      swarm team budget --team shop =20          # at most $20 for everyone together
      swarm team budget --team shop --tokens =5000000
      swarm team budget --team shop --time =4h   # no new model calls 4 hours from now"""
    paths = paths_for(team)
    cost_change = parse_change(change, "cost") if change is not None else None
    token_change = parse_change(tokens, "tokens") if tokens is not None else None
    time_change = parse_change(time_, "time") if time_ is not None else None
    if cost_change is None and token_change is None and time_change is None:
        view = show_team_budget(paths)
    else:
        view = change_team_budget(paths, cost_change, token_change, time_change)
    emit(view.to_value(), as_json, lambda _: team_budget_text(view))


def team_budget_text(view: TeamBudgetView) -> str:
    """``shop: spent $4.20 of $20.00 together (21%); 1,200,000 tokens (no token limit)``."""
    if view.max_cost_usd is None:
        cost = f"spent {usd(view.cost_usd)} together (no cost limit)"
    else:
        share = view.cost_usd / view.max_cost_usd
        cost = f"spent {usd(view.cost_usd)} of {usd(view.max_cost_usd)} together ({share:.0%})"
    if view.max_tokens is None:
        tokens = f"{view.tokens:,} tokens (no token limit)"
    else:
        used = view.tokens / view.max_tokens
        tokens = f"{view.tokens:,} of {view.max_tokens:,} tokens ({used:.0%})"
    if view.max_seconds is not None:
        ran, limit = duration_text(view.seconds), duration_text(view.max_seconds)
        tokens += f"; ran {ran} of {limit} ({view.seconds / view.max_seconds:.0%})"
    return printable_line(f"{view.team}: {cost}; {tokens}" + ("; over budget" if view.over else ""))
