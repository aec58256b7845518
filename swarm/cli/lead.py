"""`swarm lead`: the team's lead in this terminal: a person, with a Claude lead agent when a
model is available."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from pydantic import ValidationError

from protocols.fs import safefs
from protocols.member.budget import Limits
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.cli.common import backend_option, paths_for, team_option
from swarm.errors import SwarmError
from swarm.hosts.placement import check_hosts
from swarm.lead.agent import LeadAgent
from swarm.lead.console import Console
from swarm.lead.inbox import AutoPolicy, Leader
from swarm.lead.tools import LeadLink
from swarm.lead.viewer import LeadView
from swarm.team.budget import lead_budget
from swarm.up.apply import LEAD_SETTINGS
from teammate.api.model import ClaudeModel, Model, ModelError, ScriptedModel, has_api_key
from teammate.api.script import load_script
from teammate.instance import instance_lock


@click.command()
@team_option
@click.option("--model", default="sonnet", show_default=True, help="the lead agent's model")
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="play this YAML list of turns as the lead agent's model (offline)",
)
@click.option(
    "--teammate-model",
    help="model of the teammates the agent spawns when it names none "
    "(default: the lead's model; shell when the lead is scripted)",
)
@backend_option("where spawned teammates run (auto: tmux when installed)")
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="the team's working directory (default: here)",
)
@click.option(
    "--create",
    is_flag=True,
    help="create the team if it does not exist (without it, a misspelt --team is an error)",
)
@click.option(
    "--max-cost",
    type=float,
    metavar="USD",
    help="the lead agent's own budget in USD (its sub-agents' calls count): at 80% you are "
    "told, at 100% it stops until `swarm budget team-lead +USD` raises it",
)
@click.option("--max-tokens", type=int, metavar="N", help="the lead agent's budget in tokens")
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="HOST",
    help="on a team in PostgreSQL, the teammates the agent spawns run on these hosts (`swarm "
    "host serve` there), each on the live one running the fewest of the team's live members, "
    "the first given on a tie; each must be alive now. They work in --cwd, which must be the "
    "same path there (repeatable; the Agent tool's `host` picks one itself)",
)
@click.option(
    "--delegate-approvals",
    is_flag=True,
    help="let the lead agent answer permission requests too (you still see each one)",
)
def lead(
    team: str,
    model: str,
    script: Path | None,
    teammate_model: str | None,
    backend: str,
    cwd: Path | None,
    create: bool,
    max_cost: float | None,
    max_tokens: int | None,
    hosts: tuple[str, ...],
    delegate_approvals: bool,
) -> None:
    """Lead the team given by --team from this terminal (--create makes it if it is new).

    \b
    Everything teammates send shows here as it arrives; permission and plan requests wait
    for your answer (y / n REASON, or /approve ID, /deny ID REASON). What you type goes to the
    lead agent, which spawns teammates and hands out work:
      swarm lead --team shop --create
      > Spawn alice as a backend developer. Ask her to create schema.sql with a users table.
    Teammates on other machines, for a team in PostgreSQL (docs/postgresql.md#hosts):
      swarm lead --team shop --host build-box --host gpu-box
    Without ANTHROPIC_API_KEY the lead agent is off and this is a console for /send, /task,
    /status, /pending and approvals. /help lists the commands.
    A team has one lead: while another `swarm lead` leads it, this one only watches (it shows
    what reaches the lead, marks nothing read and answers nothing) and says which pid leads.
    """
    paths = paths_for(team, must_exist=False)
    directory = (cwd or Path.cwd()).resolve()
    check_hosts(paths, hosts)  # before a team is made: a new team has no hosts yet
    if not open_store(paths).team_file().exists():
        if not create:
            raise SwarmError(
                f"team {team!r} not found under {paths.root}; `swarm lead --team {team} "
                "--create` makes it (`swarm team list` shows the teams there are)"
            )
        open_store(paths).team_file().create(description="led from swarm lead", cwd=directory)
        click.echo(f"created team {team!r}")
    from swarm.schedule.scheduler import in_background

    with instance_lock(paths, LEAD_NAME) as other:  # held until this console ends
        if other is not None:
            sys.exit(_watch_only(paths, other))
        # the schedules of this config root fire while the lead runs (each firing once, however
        # many schedulers run); quietly: what they add shows in the team
        stores = [paths.store] if paths.store else []
        with in_background(paths.root, "swarm lead", lambda done: None, stores):
            _lead(
                paths,
                directory,
                model,
                script,
                teammate_model,
                backend,
                hosts,
                delegate_approvals,
                max_cost,
                max_tokens,
            )


def _watch_only(paths: TeamPaths, holder: str) -> int:
    """The console of a second `swarm lead`: the lead's inbox watched, nothing done."""
    view = LeadView(paths, holder)
    with view:
        console = Console(view, None, out=lambda text: click.echo(text), read_only=view.why)
        return console.run(sys.stdin)


def _lead(
    paths: TeamPaths,
    directory: Path,
    model: str,
    script: Path | None,
    teammate_model: str | None,
    backend: str,
    hosts: tuple[str, ...],
    delegate_approvals: bool,
    max_cost: float | None,
    max_tokens: int | None,
) -> None:
    """The team led from this terminal, with a lead agent when a model is available."""
    settings = _lead_settings(paths.team_dir / LEAD_SETTINGS)
    model = settings.get("model") or model
    brain, off = _model(script, model)
    link = LeadLink(
        paths,
        directory,
        backend=backend,
        model=teammate_model or ("shell" if script or brain is None else model),
        delegated_approvals=delegate_approvals,
        hosts=hosts,
    )
    auto = AutoPolicy(settings.get("autoApprove") or [], settings.get("autoDeny") or [], directory)
    limits = _limits(max_cost, max_tokens, settings)
    with Leader(paths, auto) as leader:
        console = Console(leader, None, off, out=lambda text: click.echo(text))
        if brain is not None:
            budget = lead_budget(paths, brain.name, limits, console.out)
            console.agent = LeadAgent(
                brain, link, console.out, paths.transcript("team-lead"), budget
            ).start()
        sys.exit(console.run(sys.stdin))


def _model(script: Path | None, model: str) -> tuple[Model | None, str]:
    if script is not None:
        return ScriptedModel(load_script(script)), ""
    if not has_api_key():
        return None, "ANTHROPIC_API_KEY is not set (use --script FILE for a scripted lead)"
    try:
        return ClaudeModel(model), ""
    except ModelError as exc:
        return None, str(exc)


def _limits(max_cost: float | None, max_tokens: int | None, settings: dict) -> Limits:
    """The lead agent's limits: the command line's, else the team file's ``lead:``."""
    cost = max_cost if max_cost is not None else settings.get("maxCostUsd")
    tokens = max_tokens if max_tokens is not None else settings.get("maxTokens")
    try:
        return Limits(maxCostUsd=cost, maxTokens=tokens)
    except ValidationError:
        raise SwarmError(
            f"--max-cost and --max-tokens must be positive numbers, got {cost!r} and {tokens!r}"
        ) from None


def _lead_settings(path: Path) -> dict:
    """The team file's lead settings, written by `swarm up` (empty when there are none)."""
    try:
        value = json.loads(safefs.read_text(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
