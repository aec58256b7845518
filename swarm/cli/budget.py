"""`swarm budget`: a member's spend and limits; raise (or set) them while it runs."""

from __future__ import annotations

import click

from protocols.durations import duration_text
from protocols.member.prices import usd
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.cli.completion import complete_member
from swarm.team.budget import BudgetView, change_budget, parse_change, show_budget


# unknown options are arguments: `-1` reaches parse_change, which says what is allowed
@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("name", shell_complete=complete_member)
@click.argument("change", required=False, metavar="[+USD|=USD]")
@click.option("--tokens", metavar="+N|=N", help="raise the token limit by N (+N) or set it (=N)")
@click.option(
    "--time", "time_", metavar="+D|=D", help="raise the time limit by D (+30m) or set it (=2h)"
)
@json_option
@team_option
def budget(
    name: str, change: str | None, tokens: str | None, time_: str | None, as_json: bool, team: str
) -> None:
    """Show teammate NAME's spend and limits, or change them: +USD raises its cost limit by
    USD, =USD sets it. A teammate stopped over its budget carries on as soon as it is under
    its limits again (it tells the lead).

    \b
      swarm budget alice                   # spend and limits
      swarm budget alice +1                # one dollar more
      swarm budget alice --tokens +50000   # 50,000 tokens more
      swarm budget alice --time +30m       # half an hour more
    """
    paths = paths_for(team)
    cost_change = parse_change(change, "cost") if change is not None else None
    token_change = parse_change(tokens, "tokens") if tokens is not None else None
    time_change = parse_change(time_, "time") if time_ is not None else None
    if cost_change is None and token_change is None and time_change is None:
        view = show_budget(paths, name)
    else:
        view = change_budget(paths, name, cost_change, token_change, time_change)
    emit(view.to_value(), as_json, lambda _: budget_text(view))


def budget_text(view: BudgetView) -> str:
    """``alice: spent $0.42 of $1.00 (42%); 12,000 tokens (no token limit)``, and whether it
    is stopped over budget."""
    cost_limit, token_limit = view.limits.maxCostUsd, view.limits.maxTokens
    if cost_limit is None:
        cost = f"spent {usd(view.cost_usd)} (no cost limit)"
    else:
        cost = f"spent {usd(view.cost_usd)} of {usd(cost_limit)} ({view.cost_usd / cost_limit:.0%})"
    if token_limit is None:
        tokens = f"{view.tokens:,} tokens (no token limit)"
    else:
        tokens = f"{view.tokens:,} of {token_limit:,} tokens ({view.tokens / token_limit:.0%})"
    time_limit = view.limits.maxSeconds
    if time_limit is not None:
        ran, limit = duration_text(view.seconds), duration_text(time_limit)
        tokens += f"; ran {ran} of {limit} ({view.seconds / time_limit:.0%})"
    return f"{view.name}: {cost}; {tokens}" + ("; over budget" if view.over else "")
