"""What a process knows of one task board, kept up to date from the changes the kernel reports.

The task files are the truth; this index is a cache of them in memory, one per process and task
directory (`shared`), that every `TaskBoard` of the process uses. It holds what choosing a claim
needs of each valid task (`protocols.tasks.facts.TaskFacts`, read without building the task's
model, which is built only when a listing asks for it), the ids of the *open* ones (pending,
unowned, not failed, not internal) in order, and for each owner the tasks that keep it busy. So
the questions a claim asks (the lowest claimable task; does this agent hold a task already) cost
about as much as the answer, not a look at every file.

It is never trusted blindly. Before each use, `refresh` asks the directory's `DirWatch` what
changed since the last use and reads those files again, whoever wrote them (Claude Code writes
task files in place and knows nothing of this index). When the watch cannot tell (the first
use, an overflowed queue, a directory removed or replaced, or no inotify: not Linux, or the
user's ``fs.inotify.max_user_instances``, 128 by default, used up by other processes) the index
is brought up to date from every file: each is stat'ed and only changed ones parsed, which is
what every listing cost before the index. Nothing is kept on disk, so a crash, kill -9
included, leaves nothing to repair.

Even so, a claim re-reads the task it takes, and that task's blockers, from their files under
the locks (`TaskBoard._claim_locked`): the index chooses, the files decide.
"""

from __future__ import annotations

import bisect
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from protocols.tasks.facts import TaskFacts
from protocols.tasks.task import TASK_FILE
from protocols.watch.dirwatch import DirWatch

if TYPE_CHECKING:
    from protocols.tasks.model import Task


# re-reads the files of the task ids given: (id, what its file holds now; None: no valid task)
Reader = Callable[[list[str]], Iterable[tuple[str, TaskFacts | None]]]


class TaskIndex:
    """The tasks of one directory, refreshed from its changes. Hold `lock` while using it."""

    def __init__(self, directory: str, watch: DirWatch | None = None) -> None:
        self.directory = directory
        self.watch = watch if watch is not None else DirWatch(directory)
        self.lock = threading.RLock()
        self.rebuilds = 0  # how often every file was looked at (for tests and benchmarks)
        self._tasks: dict[str, TaskFacts] = {}
        self._sorted: list[str] | None = []  # ids by number; None: to be sorted again
        # (number, id) of the pending, unowned, not failed, not internal tasks, sorted
        self._open: list[tuple[int, str]] = []
        self._busy: dict[str, set[str]] = {}  # owner -> ids of tasks that keep it busy

    def refresh(self, read: Reader, scan: Callable[[], Iterable[TaskFacts]]) -> None:
        """Bring the index up to date: `read(ids)` re-reads the tasks whose files changed, or
        `scan()` (every valid task) replaces everything when the watch cannot tell."""
        changed = self.watch.changes()
        if changed is None:
            self._rebuild(scan())
            return
        ids = [name.removesuffix(".json") for name in changed if TASK_FILE.match(name)]
        if ids:
            for task_id, task in read(ids):
                self.put(task_id, task)

    def put(self, task_id: str, task: TaskFacts | None) -> None:
        """Record what the file of `task_id` now holds (None: no valid task there)."""
        old = self._tasks.pop(task_id, None)
        if old is not None:
            self._unlink(old)
        if task is None:
            if old is not None:
                self._sorted = None
            return
        self._tasks[task_id] = task
        if old is None:
            self._sorted = None
        if task.open:
            bisect.insort(self._open, (int(task_id), task_id))
        if task.owner and task.busy:
            self._busy.setdefault(task.owner, set()).add(task_id)

    def get(self, task_id: str) -> TaskFacts | None:
        return self._tasks.get(task_id)

    def tasks(self) -> list[Task]:
        """Every valid task, by id (each model built once per version of its file)."""
        if self._sorted is None:
            self._sorted = sorted(self._tasks, key=int)
        return [self._tasks[task_id].task() for task_id in self._sorted]

    def candidates(self) -> Iterator[TaskFacts]:
        """Open tasks whose blockers (as far as the index knows) are all completed, lowest id
        first. The index may change while this runs (a claim records its task)."""
        last = (-1, "")
        while True:
            at = bisect.bisect_right(self._open, last)
            if at >= len(self._open):
                return
            last = self._open[at]
            task = self._tasks.get(last[1])
            if task is not None and not self.open_blockers(task):
                yield task

    def open_blockers(self, task: TaskFacts) -> list[str]:
        """Blockers of `task` that exist and are not completed, as far as the index knows."""
        blockers = []
        for blocker in task.blockedBy:
            other = self._tasks.get(blocker)
            if other is not None and other.unfinished:
                blockers.append(blocker)
        return blockers

    def busy_with(self, agent: str) -> list[str]:
        """Ids of the tasks that keep `agent` busy (owned, unfinished, not failed), by id."""
        return sorted(self._busy.get(agent, ()), key=int)

    def _rebuild(self, tasks: Iterable[TaskFacts]) -> None:
        """Make the index hold exactly `tasks`. A task that is the very object already held
        (the board's cache of unchanged files hands out the same one) costs nothing more."""
        self.rebuilds += 1
        seen = set()
        for task in tasks:
            seen.add(task.id)
            if self._tasks.get(task.id) is not task:
                self.put(task.id, task)
        for gone in [task_id for task_id in self._tasks if task_id not in seen]:
            self.put(gone, None)

    def _unlink(self, task: TaskFacts) -> None:
        if task.open:
            key = (int(task.id), task.id)
            at = bisect.bisect_left(self._open, key)
            if at < len(self._open) and self._open[at] == key:
                del self._open[at]
        if task.owner:
            owned = self._busy.get(task.owner)
            if owned is not None:
                owned.discard(task.id)
                if not owned:
                    del self._busy[task.owner]


_SHARED: weakref.WeakValueDictionary[tuple[int, str], TaskIndex] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared(directory: str) -> TaskIndex:
    """The index of `directory` for this process (a forked child gets its own): boards of one
    directory share it, so they share one watch (on the process's one inotify instance) and one
    copy of the tasks. It lives as long as a board holds it."""
    key = (os.getpid(), directory)
    with _SHARED_LOCK:
        index = _SHARED.get(key)
        if index is None:
            index = _SHARED[key] = TaskIndex(directory)
        return index
