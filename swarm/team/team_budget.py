"""`swarm team budget`: the team's limits for what all its members spend together, and the spend.

The limits live in the team's budget file (`protocols.member.budget.TeamBudgetFile`), changed under
its lock so two raises at once both count; the spend is the sum of the members' status files
(`protocols.store.spend`). Every Claude teammate, and the lead agent, reads the file before each
model request: at the limit none makes another until it is raised, each telling the lead once
why (as with a member's own budget, `teammate.budget`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from protocols.clock import ms_from_iso, now_iso
from protocols.member.budget import TeamBudgetFile, read_team_budget, update_team_budget
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.store.spend import team_spend
from swarm.team.budget import Change, applied


@dataclass(frozen=True)
class TeamBudgetView:
    """What `swarm team budget` prints."""

    team: str
    max_cost_usd: float | None
    max_tokens: int | None
    cost_usd: float
    tokens: int
    max_seconds: float | None = None
    seconds: float = 0.0  # how long since its time limit was set (0 without one)

    @property
    def over(self) -> bool:
        return (
            (self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd)
            or (self.max_tokens is not None and self.tokens >= self.max_tokens)
            or (self.max_seconds is not None and self.seconds >= self.max_seconds)
        )

    def to_value(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "maxCostUsd": self.max_cost_usd,
            "maxTokens": self.max_tokens,
            "maxSeconds": self.max_seconds,
            "costUsd": self.cost_usd,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "over": self.over,
        }


def show_team_budget(paths: TeamPaths) -> TeamBudgetView:
    """The team's limits and spend (`TeamNotFound` when there is no such team)."""
    open_store(paths).team_file().load()  # a team that does not exist is said so
    return _view(paths, read_team_budget(paths))


def change_team_budget(
    paths: TeamPaths, cost: Change | None, tokens: Change | None, period: Change | None = None
) -> TeamBudgetView:
    """Raise or set the team's limits; the new view. Its time counts from when a time limit
    was first set (``timeFrom``); setting one again (=D) counts from then again."""
    open_store(paths).team_file().load()

    def change(found: TeamBudgetFile | None) -> TeamBudgetFile:
        who, command = f"team {paths.team!r}", "swarm team budget"
        base = found or TeamBudgetFile()
        limits = applied(base, cost, tokens, who, command, period)
        since = base.timeFrom
        if period is not None and (period.op == "=" or not since):
            since = now_iso()
        return TeamBudgetFile(**limits.limits_dict(), timeFrom=since if limits.maxSeconds else "")

    return _view(paths, update_team_budget(paths, change))


def _view(paths: TeamPaths, limits: TeamBudgetFile | None) -> TeamBudgetView:
    spent = team_spend(paths)
    since = ms_from_iso(limits.timeFrom) if limits and limits.timeFrom else None
    return TeamBudgetView(
        team=paths.team,
        max_cost_usd=limits.maxCostUsd if limits else None,
        max_tokens=limits.maxTokens if limits else None,
        cost_usd=spent.cost_usd,
        tokens=spent.tokens,
        max_seconds=limits.maxSeconds if limits else None,
        seconds=max(0.0, time.time() - since / 1000) if since is not None else 0.0,
    )
