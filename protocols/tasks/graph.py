"""The dependencies between tasks: the edges, and cycles.

A task is blocked while a task in its ``blockedBy`` exists and is not completed (a deleted
blocker no longer blocks; `protocols.tasks.index` and `TaskBoard._claim_locked` apply this).
``blockedBy`` is what decides; ``blocks`` is its mirror, kept for Claude Code's readers. Pure
functions over a ``{id: Task}`` map read under the list lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from protocols.errors import InvalidTaskUpdate

if TYPE_CHECKING:
    from protocols.tasks.model import Task


def check_acyclic(edges: Mapping[str, Iterable[str]]) -> None:
    """Raise `InvalidTaskUpdate` naming the cycle if `edges` (task -> the tasks it waits for)
    has one, as ``dependency cycle: #3 waits for #5 waits for #3``."""
    import graphlib  # only for a process that adds dependencies (a look never checks)

    sorter = graphlib.TopologicalSorter({k: list(v) for k, v in edges.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1][::-1]  # graphlib lists each blocker before the task it blocks
        path = " waits for ".join(f"#{i}" for i in cycle)
        raise InvalidTaskUpdate(
            f"dependency cycle: {path}; a task cannot wait, directly or through others, for itself"
        ) from None


def waits_for(tasks: Mapping[str, Task]) -> dict[str, list[str]]:
    """The ``blockedBy`` edges of `tasks`."""
    return {task_id: list(task.blockedBy) for task_id, task in tasks.items()}
