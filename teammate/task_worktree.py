"""A task bound to a git worktree (``metadata.worktree``, from ``swarm task add --worktree``).

Whoever claims such a task works on it inside ``<repo>/.claude/worktrees/<name>`` (made from
HEAD, or reused): the brain moves there for the task, with its file tools kept inside, and
back afterwards. Then the worktree is removed if the task changed nothing, else kept with its
branch, and the report to the lead says where and what changed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from protocols.tasks.model import Task
from teammate.agent.worktree import WorktreeError, create, wrap_up
from teammate.brains.base import Brain
from teammate.link import Outcome, TeamLink


def work_in_place(brain: Brain, task: Task, link: TeamLink, home: Path, confined: bool) -> Outcome:
    """`brain.work(task)`, in the task's worktree when it names one."""
    name = (task.metadata or {}).get("worktree")
    if not name:
        return brain.work(task, link)
    try:
        tree, _created = create(home, str(name))
    except WorktreeError as exc:
        return Outcome("failed", f"#{task.id}: cannot use worktree {name!r}: {exc}")
    brain.move_to(tree.path, confined=True)
    try:
        outcome = brain.work(task, link)
    finally:
        brain.move_to(home, confined)
    note = wrap_up(tree)
    if note is None:
        return outcome
    report = f"{outcome.report}\n{note}" if outcome.report else note
    return replace(
        outcome, report=report, metadata={**outcome.metadata, "worktreePath": str(tree.path)}
    )
