"""Pruning a team's history now (`swarm team prune`): the library side of
`protocols.pg.retention` for a team found by its paths. Only a team on PostgreSQL has a history
to prune: a team in files keeps every message once in each inbox's append-only record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.errors import SwarmError

if TYPE_CHECKING:  # psycopg only for a PostgreSQL team
    from protocols.pg.retention import Pruned


def prune_history(
    paths: TeamPaths, days: str | None = None, keep: str | None = None, dry_run: bool = False
) -> Pruned:
    """Prune the team's history as ``$SWARM_HISTORY_DAYS`` and ``$SWARM_HISTORY_KEEP`` say,
    `days` and `keep` (numbers, or ``off``) winning over them; with `dry_run`, only count."""
    store = open_store(paths)
    if store.kind != "postgresql":
        raise SwarmError(
            f"team {paths.team!r} is in files: there is no history to prune (each inbox keeps "
            "its messages in an append-only record beside it); pruning is for teams on "
            "PostgreSQL"
        )
    from protocols.pg.retention import Retention, setting

    given: dict[str, Any] = {}
    if days is not None:
        given["days"] = setting(days, "--days", float)
    if keep is not None:
        given["keep"] = setting(keep, "--keep", int)
    if not store.team_exists():
        raise SwarmError(f"team {paths.team!r} not found in the store {store.where()}")
    pruned = store.prune_history(Retention.from_env(**given), dry_run=dry_run)
    assert pruned is not None  # a team on PostgreSQL keeps a history
    return pruned
