"""`swarm budget`: a member's limits and spend; raising (or setting) them while it runs.

The limits a member started with are its spec's (``--max-cost``, ``--max-tokens``, recorded in
its entry) or, for a teammate swarm did not start, those its status file reports. A change is
written to the member's budget file (`protocols.member.budget`) for the instance running now (its
``joinedAt``), under the file's lock, so two raises at once both count. The teammate is
watching that folder: a stopped one carries on as soon as it is over its limits no more.
Its spend is what its status file says (`protocols.member.status.BudgetStatus`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from protocols.durations import BadDuration, parse_duration
from protocols.member.budget import BudgetFile, Limits, read_budget, update_budget
from protocols.member.prices import (
    PriceFileError,
    PriceTable,
    default_prices,
    load_prices,
    prices_path,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.team.model import Member
from protocols.values import ModelKind
from swarm.errors import SwarmError
from teammate.budget import Budget, Notices
from teammate.options import MemberSpec

_CHANGE = re.compile(r"^([+=]?)(\d+(?:\.\d*)?|\.\d+)$")


class BudgetError(SwarmError, ValueError):
    """A budget change that cannot be made; the message says what is allowed."""


@dataclass(frozen=True)
class Change:
    """``+N`` (raise by N) or ``=N`` (set to N); a bare ``N`` sets."""

    op: Literal["+", "="]
    value: float

    def applied(self, current: float | None) -> float:
        return self.value if self.op == "=" else (current or 0) + self.value


def parse_change(text: str, kind: Literal["cost", "tokens", "time"]) -> Change:
    """``+1``, ``=2.5``, ``2.5`` (USD), ``+20000`` (tokens), or ``+30m``, ``=2h`` (time, in
    seconds: `protocols.durations`); `BudgetError` for anything else."""
    if kind == "time":
        stripped = text.strip()
        op: Literal["+", "="] = "+" if stripped.startswith("+") else "="
        try:
            return Change(op, parse_duration(stripped.lstrip("+=")))
        except BadDuration as exc:
            raise BudgetError(f"--time: {exc}; +D raises the time limit by D, =D sets it") from None
    unit = "USD" if kind == "cost" else "tokens"
    example = "+1, =2.5 or 0.5" if kind == "cost" else "+20000 or =100000"
    found = _CHANGE.match(text.strip())
    value = float(found.group(2)) if found else math.nan
    if found is None or not math.isfinite(value):
        raise BudgetError(
            f"{text!r} is not a budget change: give +N to raise the limit by N {unit} or =N to "
            f"set it (e.g. {example}); a limit is never negative"
        )
    if kind == "tokens" and not value.is_integer():
        raise BudgetError(f"{text!r}: tokens are a whole number (e.g. {example})")
    op = "+" if found.group(1) == "+" else "="
    if value <= 0:
        raise BudgetError(
            f"{text!r}: a limit must be more than 0 {unit}, and a raise more than 0 "
            "(to stop a teammate, `swarm shutdown` it)"
        )
    return Change(op, value)


@dataclass(frozen=True)
class BudgetView:
    """What `swarm budget` prints."""

    name: str
    model: str | None
    limits: Limits
    cost_usd: float
    tokens: int
    over: bool
    reason: str | None
    seconds: float = 0.0  # how long it has run, as its status file said last

    def to_value(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "maxCostUsd": self.limits.maxCostUsd,
            "maxTokens": self.limits.maxTokens,
            "maxSeconds": self.limits.maxSeconds,
            "costUsd": self.cost_usd,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "over": self.over,
            "reason": self.reason,
        }


def show_budget(paths: TeamPaths, name: str) -> BudgetView:
    """`name`'s limits and spend (`UnknownMember`, with a likely name, if there is no such)."""
    member = open_store(paths).team_file().load().require(name)
    return _view(paths, member, current_limits(paths, member))


def change_budget(
    paths: TeamPaths,
    name: str,
    cost: Change | None,
    tokens: Change | None,
    time: Change | None = None,
) -> BudgetView:
    """Raise or set `name`'s limits for the instance running now; the new view."""
    member = open_store(paths).team_file().load().require(name)
    status = open_store(paths).read_status(
        name
    )  # a teammate swarm did not start names its model there
    model = member.model or (status.model if status is not None else "")
    if ModelKind.of(model) == ModelKind.SHELL:
        raise BudgetError(f"{name} is a shell worker: it makes no model calls, so it has no budget")
    if cost is not None:
        check_priced(paths.root, model)

    def change(found: BudgetFile | None) -> BudgetFile:
        base = found or current_limits(paths, member)
        limits = applied(base, cost, tokens, name, f"swarm budget {name}", time)
        return BudgetFile(name=name, joinedAt=member.joinedAt, **limits.limits_dict())

    written = update_budget(paths, name, change)
    return _view(paths, member, written)


def applied(
    base: Limits,
    cost: Change | None,
    tokens: Change | None,
    who: str,
    command: str,
    time: Change | None = None,
) -> Limits:
    """`base` with the changes made; `BudgetError` for a raise of a limit `who` does not have
    (`command` is how to set one)."""
    if cost is not None and cost.op == "+" and base.maxCostUsd is None:
        raise BudgetError(
            f"{who} has no cost limit to raise: set one with `{command} ={cost.value:g}`"
        )
    if tokens is not None and tokens.op == "+" and base.maxTokens is None:
        raise BudgetError(
            f"{who} has no token limit to raise: set one with "
            f"`{command} --tokens ={tokens.value:.0f}`"
        )
    if time is not None and time.op == "+" and base.maxSeconds is None:
        raise BudgetError(
            f"{who} has no time limit to raise: set one with `{command} --time ={time.value:g}s`"
        )
    return Limits(
        maxCostUsd=round(cost.applied(base.maxCostUsd), 6) if cost else base.maxCostUsd,
        maxTokens=int(tokens.applied(base.maxTokens)) if tokens else base.maxTokens,
        maxSeconds=time.applied(base.maxSeconds) if time else base.maxSeconds,
    )


def current_limits(paths: TeamPaths, member: Member) -> Limits:
    """The limits of the instance running now: its budget file, else its spec, else its
    status file."""
    found = read_budget(paths, member.name, member.joinedAt)
    if found is not None:
        return Limits(**found.limits_dict())
    spec = MemberSpec.from_value((member.model_extra or {}).get("swarmSpec"))
    if spec is not None:
        return Limits(maxCostUsd=spec.max_cost, maxTokens=spec.max_tokens, maxSeconds=spec.max_time)
    status = open_store(paths).read_status(member.name)
    if status is not None and status.budget is not None:
        got = status.budget
        return Limits(maxCostUsd=got.maxCostUsd, maxTokens=got.maxTokens, maxSeconds=got.maxSeconds)
    return Limits()


def check_priced(root: Path, model: str) -> None:
    """`BudgetError` unless `model`'s cost can be counted under the config root `root` (a cost
    limit needs a price)."""
    try:
        prices = load_prices(root)
    except PriceFileError as exc:
        raise BudgetError(f"a cost limit needs the price table: {exc}") from None
    if prices.price_of(model) is None:
        raise BudgetError(
            f"model {model!r} has no price, so a cost limit cannot be kept; price it in "
            f"{prices_path(root)} or use a token limit"
        )


def _view(paths: TeamPaths, member: Member, limits: Limits) -> BudgetView:
    status = open_store(paths).read_status(member.name)
    spent = status.budget if status is not None else None
    over = spent is not None and spent.over
    if over and spent is not None:  # the teammate says it is stopped: is it still, now?
        over = (
            (limits.maxCostUsd is not None and spent.costUsd >= limits.maxCostUsd)
            or (limits.maxTokens is not None and spent.tokens >= limits.maxTokens)
            or (limits.maxSeconds is not None and spent.seconds >= limits.maxSeconds)
        )
    return BudgetView(
        name=member.name,
        model=member.model,
        limits=Limits(**limits.limits_dict()),
        cost_usd=spent.costUsd if spent is not None else 0.0,
        tokens=spent.tokens if spent is not None else 0,
        over=over,
        reason=spent.reason if over and spent is not None else None,
        seconds=spent.seconds if spent is not None else 0.0,
    )


def lead_budget(paths: TeamPaths, model: str, limits: Limits, say: Callable[[str], None]) -> Budget:
    """The lead agent's own budget (`swarm lead --max-cost`, or a team file's ``lead:``): kept
    as a teammate's is (`teammate.budget`), its notices printed on the console; `swarm budget
    team-lead +USD` raises it. `BudgetError` for a cost limit on a model without a price."""
    if limits.maxCostUsd is not None:
        check_priced(paths.root, model)
    try:
        prices = load_prices(paths.root)
    except PriceFileError:
        prices = PriceTable(default_prices(), {})  # only a cost limit needs it (checked above)
    budget = Budget(LEAD_NAME, limits, prices, paths)
    budget.notices = Notices(
        warn=lambda text: say(f"lead: {text}"),
        over=lambda reason: say(f"lead: the lead agent stopped, {reason}"),
        back=lambda text: say(f"lead: {text}"),
    )
    lead = open_store(paths).team_file().load().member(LEAD_NAME)
    budget.joined_at = lead.joinedAt if lead is not None else None
    return budget
