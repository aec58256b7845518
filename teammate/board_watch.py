"""When an idle teammate looks at the task board, and which task it takes from it.

Looking is cheap whatever the board holds: the board is listed only when it changed (an inotify
event on the task directory, or a change of the directory's time: every swarm write renames a
file into it), when a protocol message came (a lead that writes task files in place, as Claude
Code does, says so with a ``task_assignment``; a plain message is no reason to look), or every
`BOARD_RESCAN_S` as the safety net for what neither shows (a lost event about an in-place write;
ten times as often when inotify is unavailable). A look that failed (a PostgreSQL store out of
reach) is made again at the next step: the news that called for it was taken by then.
What it takes: a task the lead assigned to it (or its predecessor of the same name left), else
the lowest claimable task it may take (`TaskBoard.claim_next` with its `labels`: a task for
others, or one it failed before, is left to them; `protocols.tasks.task.may_take`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Container
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.tasks.model import Task
from protocols.tasks.task import CLAUDE, SHELL, ClaimResult
from protocols.values import ModelKind

if TYPE_CHECKING:
    from protocols.store.contract import TaskBoardContract


BOARD_RESCAN_S = 600.0


def labels_of(model: str, agent_type: str | None) -> frozenset[str]:
    """What a teammate answers to in a task's ``for`` besides its name: ``shell`` for a shell
    worker, ``claude`` (and ``scripted`` for a scripted model) for one that thinks with a
    model, and its agent type."""
    kind = ModelKind.of(model)
    labels = {SHELL} if kind == ModelKind.SHELL else {CLAUDE, str(kind)}
    if agent_type:
        labels.add(agent_type)
    return frozenset(labels)


class BoardWatch:
    """One teammate's view of the board: `next_task` says what to work on, if anything."""

    def __init__(
        self,
        board: TaskBoardContract,
        name: str,
        watcher: Callable[[], Any],
        clock: Callable[[], float] = time.monotonic,
        tasks_dir: Path | None = None,
        labels: Collection[str] = (),
    ) -> None:
        self.board = board
        self.name = name
        self.labels = frozenset(labels)  # what it answers to: its kind, its agent type
        self._watcher = watcher  # the teammate's, once it runs
        self._clock = clock  # when to look again (a seam for tests)
        self._checked = 0.0
        self._mtime: int | None = None
        self._epochs: dict[str, int] = {}  # a fencing store's epoch of each claim it holds
        self._again = False  # the last look failed (its store out of reach): look next time
        self.tasks_dir = tasks_dir

    def next_task(self, force: bool, skip: Container[str] = ()) -> Task | None:
        """A task claimed for this teammate, looked for only when the board changed or `force`
        (a protocol message came: it may be about the board); `skip` holds tasks it did but has
        not recorded yet."""
        if not (force or self._again or self.changed()):
            return None
        self._again = True  # until this look is done: one that fails is made again next time
        self._checked = self._clock()
        task = self.claim(skip)
        self._again = False
        return task

    def changed(self) -> bool:
        """Did anything happen on the board since the last look (module doc)?"""
        watcher = self._watcher()
        # without inotify and without doorbells (rung by swarm's task writes), look more often
        degraded = watcher is None or (watcher.degraded is not None and not watcher.belled)
        every = BOARD_RESCAN_S / 10 if degraded else BOARD_RESCAN_S
        touched = watcher is not None and watcher.take_touched(self.tasks_dir)
        try:
            mtime: int | None = os.stat(self.tasks_dir).st_mtime_ns if self.tasks_dir else None
        except OSError:
            mtime = None
        moved, self._mtime = mtime != self._mtime, mtime
        return touched or moved or self._clock() - self._checked >= every

    def claim(self, skip: Container[str] = ()) -> Task | None:
        """A task assigned to this teammate that is not done, else the next claimable one."""
        for task in self.board.list():
            if task.owner != self.name or not task.busy or task.id in skip:
                continue
            claim = self.board.claim(task.id, self.name, check_busy=False)
            if claim.success:
                return self._held(claim)
        following = self.board.claim_next(self.name, labels=self.labels)
        return self._held(following) if following is not None and following.success else None

    def _held(self, claim: ClaimResult) -> Task | None:
        if claim.task is not None and claim.epoch is not None:
            self._epochs[claim.task.id] = claim.epoch
        return claim.task

    def fence(self, task_id: str) -> dict[str, int]:
        """What a change of `task_id` passes to be fenced by its claim (``epoch``), on a store
        that fences; nothing on files."""
        epoch = self._epochs.get(task_id)
        return {} if epoch is None else {"epoch": epoch}

    def forget(self, task_id: str) -> None:
        self._epochs.pop(task_id, None)
