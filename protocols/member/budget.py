"""A member's budget file: the limits `swarm budget` set on a running teammate.

``teams/<team>/budgets/<name>.json``, swarm's own (Claude Code has none), written atomically
under its lock (`FileGuard`) by `swarm budget`, and read by the teammate, which watches the
folder (inotify) and takes a change up at once. A teammate starts with the limits of its
command line (``--max-cost``, ``--max-tokens``: what its spec records, so a restart starts
from them again); the file, once written, replaces them. The file names the member instance
it was written for (its ``joinedAt``), so a file left by an earlier instance of the name is
never taken for this one's.

The team's budget (`swarm team budget`) is ``teams/<team>/team-budget.json``: the same limits,
for what every member has spent together (as their status files report it); every teammate
reads it before each model request.

``maxCostUsd`` is USD (`protocols.member.prices` over the usage of every model call the member and
its sub-agents make); ``maxTokens`` counts every token the model read or wrote (input, output,
cache writes and cache reads); ``maxSeconds`` is wall-clock time: a member's counts from its
process's start, the team's from its file's ``timeFrom`` (when a time limit was first set on
it). None: no limit of that kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError, field_validator

from protocols.clock import now_iso
from protocols.fs import safefs
from protocols.fs.jsonio import write_json
from protocols.fs.locks import FileGuard, redo_if_lock_lost
from protocols.names import checked_component
from protocols.paths import TeamPaths
from protocols.records.base import Record

BUDGETS_DIR = "budgets"
TEAM_BUDGET_FILE = "team-budget.json"


class Limits(Record):
    """A member's limits; None: none of that kind."""

    maxCostUsd: float | None = None
    maxTokens: int | None = None
    maxSeconds: float | None = None

    @field_validator("maxSeconds")
    @classmethod
    def _seconds(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise ValueError("maxSeconds must be a positive number of seconds")
        return value

    @field_validator("maxCostUsd")
    @classmethod
    def _cost(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise ValueError("maxCostUsd must be a positive number of USD")
        return value

    @field_validator("maxTokens")
    @classmethod
    def _tokens(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("maxTokens must be a positive number of tokens")
        return value

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.maxCostUsd, self.maxTokens, self.maxSeconds))

    def limits_dict(self) -> dict[str, Any]:
        """Only the limits (a subclass's other fields left out)."""
        return {
            "maxCostUsd": self.maxCostUsd,
            "maxTokens": self.maxTokens,
            "maxSeconds": self.maxSeconds,
        }


class BudgetFile(Limits):
    """The file: the limits, for which instance of the member (its ``joinedAt``), and when."""

    name: str
    joinedAt: int
    updatedAt: str = ""


def budgets_dir(paths: TeamPaths) -> Path:
    return paths.team_dir / BUDGETS_DIR


def budget_path(paths: TeamPaths, name: str) -> Path:
    return budgets_dir(paths) / f"{checked_component(name, 'agent name')}.json"


def read_budget(paths: TeamPaths, name: str, joined_at: int | None = None) -> BudgetFile | None:
    """The budget file of `name` (for the instance that joined at `joined_at`, if given); None
    if there is none, it is for another instance, or it cannot be read."""
    try:
        raw: Any = json.loads(safefs.read_text(budget_path(paths, name)))
        found = BudgetFile.from_json_dict(raw)
    except (OSError, ValueError, ValidationError):  # a link (LinkRefused) is an OSError too
        return None
    if joined_at is not None and found.joinedAt != joined_at:
        return None
    return found


@redo_if_lock_lost
def update_budget(
    paths: TeamPaths, name: str, change: Callable[[BudgetFile | None], BudgetFile]
) -> BudgetFile:
    """Apply `change` to the current budget file (None: there is none) under its lock and
    write the result atomically; raises FileNotFoundError when the team is gone."""
    target = budget_path(paths, name)
    safefs.makedir_in(target.parent)
    with FileGuard(target):
        updated = change(read_budget(paths, name))
        updated.updatedAt = now_iso()
        write_json(target, updated.to_json_dict())
    return updated


class TeamBudgetFile(Limits):
    """The team's limits, for all its members' spend together, and when they were set;
    ``timeFrom``: when its time limit started counting (ISO; "" without one)."""

    updatedAt: str = ""
    timeFrom: str = ""


def team_budget_path(paths: TeamPaths) -> Path:
    return paths.team_dir / TEAM_BUDGET_FILE


def read_team_budget(paths: TeamPaths) -> TeamBudgetFile | None:
    """The team's budget file; None if there is none or it cannot be read."""
    try:
        raw: Any = json.loads(safefs.read_text(team_budget_path(paths)))
        return TeamBudgetFile.from_json_dict(raw)
    except (OSError, ValueError, ValidationError):
        return None


@redo_if_lock_lost
def update_team_budget(
    paths: TeamPaths, change: Callable[[TeamBudgetFile | None], TeamBudgetFile]
) -> TeamBudgetFile:
    """`update_budget` for the team's file."""
    target = team_budget_path(paths)
    safefs.makedir_in(target.parent)
    with FileGuard(target):
        updated = change(read_team_budget(paths))
        updated.updatedAt = now_iso()
        write_json(target, updated.to_json_dict())
    return updated
