"""`swarm team budget`: the team's limits for what all its members spend together, and the spend.

The limits live in the team's budget file (`protocols.budget.TeamBudgetFile`), changed under
its lock so two raises at once both count; the spend is the sum of the members' status files
(`protocols.team_spend`). Every Claude teammate, and the lead agent, reads the file before each
model request: at the limit none makes another until it is raised, each telling the lead once
why (as with a member's own budget, `teammate.budget`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocols.budget import TeamBudgetFile, read_team_budget, update_team_budget
from protocols.paths import TeamPaths
from protocols.store import open_store
from protocols.team_spend import team_spend
from swarm.team.budget import Change, applied


@dataclass(frozen=True)
class TeamBudgetView:
    """What `swarm team budget` prints."""

    team: str
    max_cost_usd: float | None
    max_tokens: int | None
    cost_usd: float
    tokens: int

    @property
    def over(self) -> bool:
        return (self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd) or (
            self.max_tokens is not None and self.tokens >= self.max_tokens
        )

    def to_value(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "maxCostUsd": self.max_cost_usd,
            "maxTokens": self.max_tokens,
            "costUsd": self.cost_usd,
            "tokens": self.tokens,
            "over": self.over,
        }


def show_team_budget(paths: TeamPaths) -> TeamBudgetView:
    """The team's limits and spend (`TeamNotFound` when there is no such team)."""
    open_store(paths).team_file().load()  # a team that does not exist is said so
    return _view(paths, read_team_budget(paths))


def change_team_budget(
    paths: TeamPaths, cost: Change | None, tokens: Change | None
) -> TeamBudgetView:
    """Raise or set the team's limits; the new view."""
    open_store(paths).team_file().load()

    def change(found: TeamBudgetFile | None) -> TeamBudgetFile:
        who, command = f"team {paths.team!r}", "swarm team budget"
        limits = applied(found or TeamBudgetFile(), cost, tokens, who, command)
        return TeamBudgetFile(**limits.limits_dict())

    return _view(paths, update_team_budget(paths, change))


def _view(paths: TeamPaths, limits: TeamBudgetFile | None) -> TeamBudgetView:
    spent = team_spend(paths)
    return TeamBudgetView(
        team=paths.team,
        max_cost_usd=limits.maxCostUsd if limits else None,
        max_tokens=limits.maxTokens if limits else None,
        cost_usd=spent.cost_usd,
        tokens=spent.tokens,
    )
