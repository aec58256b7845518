"""Teammates in their own git worktree (Claude Code's ``isolation: worktree``).

Before the teammate starts, `prepare` makes (or reuses) ``<repo>/.claude/worktrees/<slug>`` on
branch ``worktree-<slug>`` from the current HEAD; the teammate's working directory is the
worktree, and its member entry records ``worktreePath`` (and the whole `Worktree`). When the
teammate stops, `release` removes the worktree and its branch if nothing changed, and otherwise
keeps both and tells the lead the path, branch and a one-line summary of the changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.team.model import Member
from swarm.team.signatures import lead_mailbox
from teammate.agent.worktree import Worktree, create, wrap_up
from teammate.config.definitions import AgentDefinitionError, load_agent


def isolation_of(agent_type: str, directory: Path) -> str | None:
    """The agent definition's ``isolation`` (None when it has none or cannot be loaded: the
    teammate reports a bad definition itself)."""
    try:
        return load_agent(agent_type, project_dir=directory).isolation
    except AgentDefinitionError:
        return None


def prepare(directory: Path, slug: str) -> Worktree:
    """The worktree for `slug` in the repository containing `directory` (made or reused)."""
    worktree, _created = create(directory, slug)
    return worktree


def member_fields(worktree: Worktree) -> dict[str, Any]:
    """What a member entry records about its worktree."""
    return {"worktreePath": str(worktree.path), "worktree": worktree.to_value()}


def worktree_of(member: Member) -> Worktree | None:
    value = (member.model_extra or {}).get("worktree")
    if not isinstance(value, dict):
        return None
    try:
        return Worktree.from_value(value)
    except (KeyError, TypeError, ValueError):
        return None


def release(paths: TeamPaths, member: Member) -> str | None:
    """A stopped member's worktree: removed if unchanged, else kept and reported to the lead.
    Returns the report (None when there was nothing to keep)."""
    worktree = worktree_of(member)
    if worktree is None or not worktree.path.exists():
        return None
    note = wrap_up(worktree)
    if note is None:
        return None
    report = (
        f"{member.name}'s {note}. Review: swarm worktree diff {worktree.slug}; "
        f"merge: swarm worktree merge {worktree.slug}"
    )
    lead_mailbox(paths).send(LEAD_NAME, report, sender=LEAD_NAME, summary="worktree kept")
    return report
