"""What a team has spent together: the sum over its members' status files (the lead's too) of
the USD their model requests cost (``costUsd``, each priced as it was made) and every token
they read or wrote (``usage``). What the team budget (`protocols.member.budget.TeamBudgetFile`) is
held against. A member that left takes its spend with it; one started again counts from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.member.status_keys import USAGE_KEYS
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store


@dataclass(frozen=True)
class TeamSpend:
    cost_usd: float
    tokens: int


def team_spend(paths: TeamPaths, but: str | None = None) -> TeamSpend:
    """The team's spend now (module doc); without member `but` (who knows its own better)."""
    store = open_store(paths)
    cost, tokens = 0.0, 0
    for name in dict.fromkeys([LEAD_NAME, *store.team_file().member_names()]):
        if name == but:
            continue
        status = store.read_status(name)
        if status is None:
            continue
        cost += status.costUsd or 0.0
        tokens += sum(int(status.usage.get(key, 0)) for key in USAGE_KEYS)
    return TeamSpend(round(cost, 6), tokens)
