"""The shared task board ``tasks/<team>/<N>.json`` with Claude Code's semantics (spec section 5).

`TaskBoard` creates tasks (ids from the highest file and ``.highwatermark``, never reused), reads
and lists them (``metadata._internal`` hides a task; invalid files are skipped with a warning, as
Claude Code does), updates them under each task's own lock (unknown fields go under ``metadata``;
``addBlocks``/``addBlockedBy`` update both sides), deletes them (references removed), and claims
them as a compare-and-set with typed failure reasons. An owner change sends ``task_assignment``
to the new owner when the board has a mailbox.

Lock order is always list lock (``.lock``) before task lock (``<N>.json.lock``), never the reverse,
so claims, deletes and updates cannot deadlock.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from protocols.clock import now_iso
from protocols.errors import InvalidTaskUpdate, ProtocolsError, TaskNotFound
from protocols.jsonio import Durability, atomic_write_text, dumps_pretty, ensure_file, write_json
from protocols.locks import FileGuard
from protocols.messages import TaskAssignment
from protocols.paths import TeamPaths
from protocols.task import STATUSES, TASK_FILE, ClaimFailure, ClaimResult, Task

if TYPE_CHECKING:
    from protocols.mailbox import Mailbox

log = logging.getLogger(__name__)


class TaskBoard:
    """The task list of one team."""

    def __init__(
        self,
        paths: TeamPaths,
        mailbox: Mailbox | None = None,
        durability: Durability | None = None,
        lock_timeout: float = 30.0,
    ) -> None:
        self.paths = paths
        self.mailbox = mailbox
        self.durability = durability
        self.lock_timeout = lock_timeout
        # path -> (inode, size, mtime_ns) and what that file held (None: invalid)
        self._cache: dict[str, tuple[tuple[int, int, int], Task | None]] = {}

    # locks

    def _list_lock(self) -> FileGuard:
        ensure_file(self.paths.tasks_lock_target, "", self.durability)
        return FileGuard(self.paths.tasks_lock_target, timeout=self.lock_timeout)

    def _task_lock(self, task_id: str) -> FileGuard:
        return FileGuard(self.paths.task(task_id), timeout=self.lock_timeout)

    # reading

    def task_ids(self) -> list[int]:
        return [task_id for task_id, _ in self._task_files()]

    def _task_files(self) -> list[tuple[int, str]]:
        """(id, path) of every ``<N>.json`` by id (plain strings: this runs per claim)."""
        directory = str(self.paths.tasks_dir)
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        found = ((int(m.group(1)), n) for n in names if (m := TASK_FILE.match(n)))
        return sorted((i, os.path.join(directory, n)) for i, n in found)

    def get(self, task_id: str | int) -> Task | None:
        """The task, or None if there is no valid file for it."""
        return self._read(str(self.paths.task(str(task_id))))

    def require(self, task_id: str | int) -> Task:
        task = self.get(task_id)
        if task is None:
            raise TaskNotFound(f"task #{task_id} not found in team {self.paths.team!r}")
        return task

    def list(self, include_internal: bool = False) -> list[Task]:
        """Valid tasks by id; ``metadata._internal`` ones only when asked."""
        tasks = (self._read(path, cached_ok=True) for _, path in self._task_files())
        return [t for t in tasks if t is not None and (include_internal or not t.internal)]

    def _read(self, path: str, cached_ok: bool = False, retry_s: float = 0.2) -> Task | None:
        """The task in `path`.

        With `cached_ok`, a file whose (inode, size, mtime) did not change since it was last
        parsed is not parsed again. File times are coarse (a few ms) and inodes are reused, so
        a cached read can be stale: it is only used for listings, never for a compare-and-set.
        """
        deadline = time.monotonic() + retry_s
        while True:
            try:
                st = os.stat(path)
                signature = (st.st_ino, st.st_size, st.st_mtime_ns)
                cached = self._cache.get(path)
                if cached_ok and cached is not None and cached[0] == signature:
                    return cached[1]
                with open(path, "rb") as handle:
                    task = Task.from_json_dict(json.loads(handle.read()))
            except FileNotFoundError:
                self._cache.pop(path, None)
                return None
            except (ValueError, ValidationError, TypeError) as exc:
                if time.monotonic() >= deadline:  # Claude Code writes in place: retry briefly
                    log.warning("skipping invalid task file %s: %s", path, _first_line(exc))
                    self._cache[path] = (signature, None)
                    return None
                time.sleep(0.02)
                continue
            self._cache[path] = (signature, task)
            return task

    # writing

    def create(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task:
        with self._list_lock():
            next_id = max([*self.task_ids(), self._highwatermark()], default=0) + 1
            task = Task(
                id=str(next_id),
                subject=subject,
                description=description,
                activeForm=active_form,
                status="pending",
                blocks=[],
                blockedBy=[],
                metadata=metadata or None,
            )
            path = self.paths.task(task.id)
            if not ensure_file(path, dumps_pretty(task.to_json_dict()), self.durability):
                raise ProtocolsError(f"{path} appeared while creating task #{task.id}")
            self._set_highwatermark(next_id)
        return task

    def update(self, task_id: str | int, *, actor: str | None = None, **fields: Any) -> Task | None:
        """Apply a TaskUpdate: Claude Code's field names, plus ``addBlocks``/``addBlockedBy``.

        ``status="deleted"`` deletes the task and returns None. Fields a task does not have go
        under ``metadata``; a ``metadata`` key set to None is removed. Raises `TaskNotFound`.
        """
        task_id = str(task_id)
        if fields.get("status") == "deleted":
            if not self.delete(task_id):
                raise TaskNotFound(f"task #{task_id} not found in team {self.paths.team!r}")
            return None
        add_blocks = [str(x) for x in fields.pop("addBlocks", None) or []]
        add_blocked_by = [str(x) for x in fields.pop("addBlockedBy", None) or []]
        for other in (*add_blocks, *add_blocked_by):
            if other == task_id:
                raise InvalidTaskUpdate(f"task #{task_id} cannot block or be blocked by itself")
            self.require(other)
        known = set(Task.model_fields) - {"id", "metadata"}
        extra = {k: v for k, v in fields.items() if k not in known and k != "metadata"}
        changes = {k: v for k, v in fields.items() if k in known}
        if "status" in changes and changes["status"] not in STATUSES:
            raise InvalidTaskUpdate(
                f"invalid status {changes['status']!r}; allowed: {', '.join(STATUSES)}, deleted"
            )
        metadata_changes = {**(fields.get("metadata") or {}), **extra}

        def change(task: Task) -> Task:
            updates = dict(changes)
            if metadata_changes:
                merged = dict(task.metadata or {})
                for key, value in metadata_changes.items():
                    if value is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = value
                updates["metadata"] = merged
            if add_blocks:
                updates["blocks"] = _union(task.blocks, add_blocks)
            if add_blocked_by:
                updates["blockedBy"] = _union(task.blockedBy, add_blocked_by)
            return task.updated(**updates) if updates else task

        before, after = self._rewrite(task_id, change)
        for other in add_blocks:
            self._rewrite(other, lambda t: t.updated(blockedBy=_union(t.blockedBy, [task_id])))
        for other in add_blocked_by:
            self._rewrite(other, lambda t: t.updated(blocks=_union(t.blocks, [task_id])))
        if after.owner and after.owner != before.owner:
            self._notify_owner(after, actor)
        return after

    def delete(self, task_id: str | int) -> bool:
        """Remove the task, keep its id used, and drop it from other tasks' dependencies."""
        task_id = str(task_id)
        with self._list_lock():
            path = self.paths.task(task_id)
            with self._task_lock(task_id):
                try:
                    path.unlink()
                except FileNotFoundError:
                    return False
            self._set_highwatermark(max(int(task_id), self._highwatermark()))
            for other in self.list(include_internal=True):
                if task_id in other.blocks or task_id in other.blockedBy:
                    self._rewrite(
                        other.id,
                        lambda t: t.updated(
                            blocks=[x for x in t.blocks if x != task_id],
                            blockedBy=[x for x in t.blockedBy if x != task_id],
                        ),
                    )
        return True

    def claim(
        self, task_id: str | int, agent: str, check_busy: bool = True, start: bool = True
    ) -> ClaimResult:
        """Make `agent` the owner if nobody else is, the task is open and unblocked.

        With `start`, the claimed task is set ``in_progress``. With `check_busy`, an agent that
        already owns another unfinished task is refused (``agent_busy``).
        """
        with self._list_lock():
            tasks = {t.id: t for t in self.list(include_internal=True)}
            return self._claim_locked(str(task_id), agent, check_busy, start, tasks)

    def claim_next(self, agent: str, start: bool = True) -> ClaimResult | None:
        """Auto-claim: the lowest-id pending, unowned, unblocked task. None if there is none.

        A first look without the lock finds out whether anything is claimable at all, so idle
        workers asking again and again take no locks and write nothing.
        """
        if not _claimable({t.id: t for t in self.list(include_internal=True)}, self):
            return None
        with self._list_lock():
            tasks = {t.id: t for t in self.list(include_internal=True)}
            for task in _claimable(tasks, self):
                result = self._claim_locked(task.id, agent, True, start, tasks)
                if result.success or result.reason == ClaimFailure.AGENT_BUSY:
                    return result
        return None

    def release_all(self, agent: str) -> list[Task]:
        """Return `agent`'s unfinished tasks to ``pending`` with no owner; returns them."""
        released = []
        with self._list_lock():
            for task in self.list(include_internal=True):
                if task.owner == agent and task.unfinished:
                    _, after = self._rewrite(
                        task.id,
                        lambda t: (
                            t.updated(owner=None, status="pending")
                            if t.owner == agent and t.unfinished
                            else t
                        ),
                    )
                    released.append(after)
        return released

    # internals

    def _claim_locked(
        self, task_id: str, agent: str, check_busy: bool, start: bool, tasks: dict[str, Task]
    ) -> ClaimResult:
        """The compare-and-set. Holds the list lock; `tasks` was read under it."""
        if not self.paths.task(task_id).exists():
            return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
        with self._task_lock(task_id):
            task = self.get(task_id)  # re-read under the task's own lock
            if task is None:
                return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
            if task.status == "completed":
                return ClaimResult(False, task, ClaimFailure.ALREADY_RESOLVED)
            if task.owner and task.owner != agent:
                return ClaimResult(False, task, ClaimFailure.ALREADY_CLAIMED)
            blockers = _open_blockers(task, tasks, self)
            if blockers:
                return ClaimResult(False, task, ClaimFailure.BLOCKED, blocked_by=blockers)
            if check_busy:
                busy = [
                    t.id
                    for t in tasks.values()
                    if t.owner == agent and t.unfinished and t.id != task_id
                ]
                if busy:
                    return ClaimResult(False, task, ClaimFailure.AGENT_BUSY, busy_with=busy)
            updates: dict[str, Any] = {"owner": agent}
            if start and task.status == "pending":
                updates["status"] = "in_progress"
            claimed = task.updated(**updates)
            self._write(claimed)
        return ClaimResult(True, claimed)

    def _rewrite(self, task_id: str, change: Callable[[Task], Task]) -> tuple[Task, Task]:
        with self._task_lock(task_id):
            before = self.require(task_id)
            after = change(before)
            if after is not before:
                self._write(after)
        return before, after

    def _write(self, task: Task) -> None:
        write_json(self.paths.task(task.id), task.to_json_dict(), self.durability)

    def _highwatermark(self) -> int:
        try:
            return int(self.paths.highwatermark.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def _set_highwatermark(self, value: int) -> None:
        if value > self._highwatermark():
            atomic_write_text(self.paths.highwatermark, str(value), self.durability)

    def _notify_owner(self, task: Task, actor: str | None) -> None:
        if self.mailbox is None or task.owner == actor:
            return
        message = TaskAssignment(
            taskId=task.id,
            subject=task.subject,
            description=task.description,
            assignedBy=actor or "team-lead",
            timestamp=now_iso(),
        )
        try:
            self.mailbox.send(task.owner, message, sender=actor or "team-lead")
        except ProtocolsError as exc:
            log.warning("task #%s: could not send task_assignment: %s", task.id, exc)


def _claimable(tasks: dict[str, Task], board: TaskBoard) -> list[Task]:
    """Pending, unowned, visible tasks whose blockers are all completed, by id."""
    return [
        t
        for t in tasks.values()
        if not t.internal
        and t.status == "pending"
        and not t.owner
        and not _open_blockers(t, tasks, board)
    ]


def _open_blockers(task: Task, tasks: dict[str, Task], board: TaskBoard) -> list[str]:
    """Ids in `task.blockedBy` whose task exists and is not completed."""
    open_ids = []
    for blocker in task.blockedBy:
        other = tasks.get(blocker) or board.get(blocker)
        if other is not None and other.status != "completed":
            open_ids.append(blocker)
    return open_ids


def _union(current: Iterable[str], more: Iterable[str]) -> list[str]:
    result = list(current)
    for item in more:
        if item not in result:
            result.append(item)
    return result


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
