"""The shared task board ``tasks/<team>/<N>.json`` with Claude Code's semantics (spec section 5).

`TaskBoard` (on `protocols.tasks.files.TaskFiles`, which reads and writes the files) creates tasks
(ids from the highest file and ``.highwatermark``, never reused), reads and lists them
(``metadata._internal`` hides a task; invalid files are skipped with a warning, as Claude Code
does), updates them under each task's own lock (unknown fields go under ``metadata``;
``addBlocks``/``addBlockedBy`` update both sides), deletes them (references removed), and claims
them as a compare-and-set with typed failure reasons. An owner change sends ``task_assignment`` to
the new owner when the board has a mailbox.

Dependencies never let a task run early: a task is created with its ``blockedBy`` already in its
file, under the list lock that claims hold too; when a dependency is added to existing tasks, the
side that decides (``blockedBy``) is written first, so a kill between the two files leaves the
task blocked and only the ``blocks`` mirror short. A dependency that would close a cycle is
refused, naming the cycle.

Listings and the choice of a claim come from the process's index of the board
(`protocols.tasks.index`), kept current from what inotify reports changed; the compare-and-set of
a claim reads the task and its blockers again from their files.

Lock order is always list lock (``.lock``) before task lock (``<N>.json.lock``), never the reverse,
so claims, deletes and updates cannot deadlock. A locked operation whose lock was taken while the
process was paused is done again from a fresh read (`redo_if_lock_lost`), never half-applied.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from protocols.clock import now_iso
from protocols.errors import InvalidTaskUpdate, ProtocolsError, TaskNotFound
from protocols.fs import safefs
from protocols.fs.jsonio import (
    Durability,
    default_durability,
    dumps_pretty,
    ensure_file,
    fsync_dir,
)
from protocols.fs.locks import redo_if_lock_lost
from protocols.logs import logger
from protocols.paths import TeamPaths
from protocols.tasks.facts import TaskFacts
from protocols.tasks.files import TaskFiles, Unwritable
from protocols.tasks.graph import check_acyclic, waits_for
from protocols.tasks.task import (
    FAILED,
    FAILED_BY,
    STATUSES,
    ClaimFailure,
    ClaimResult,
    failed_by,
    may_take,
)
from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.tasks.index import TaskIndex
    from protocols.tasks.model import Task

log = logger(__name__)


class NewTask(NamedTuple):
    """A task to create. `blocked_by` names existing tasks by id; `after` names tasks of the
    same batch by their index in it (earlier or later)."""

    subject: str
    description: str = ""
    active_form: str | None = None
    metadata: dict[str, Any] | None = None
    blocked_by: tuple[str, ...] = ()
    after: tuple[int, ...] = ()
    owner: str | None = None


class TaskBoard(TaskFiles):
    """The task list of one team: its rules, on its files (`TaskFiles`)."""

    def __init__(
        self,
        paths: TeamPaths,
        mailbox: Sender | None = None,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        super().__init__(paths, durability, lock_timeout)
        self.mailbox = mailbox

    def create(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> Task:
        """A new pending task, blocked by `blocked_by` from the start (one locked operation:
        no worker can claim it before its blockers are in its file). An `owner` has it from
        the start and is sent a ``task_assignment`` when the board has a mailbox."""
        from protocols.tasks.model import Task

        return Task.from_json_dict(
            self.create_file(subject, description, active_form, metadata, blocked_by, owner)
        )

    def create_file(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> dict[str, Any]:
        """`create`, returning the new task's file as written: no model is built unless an
        owner is told, so ``swarm task add`` loads no pydantic."""
        blockers = tuple(map(str, blocked_by))
        spec = NewTask(subject, description, active_form, metadata, blockers, owner=owner)
        created = self.create_files([spec])[0]
        if owner is not None and self.mailbox is not None:
            from protocols.tasks.model import Task

            self._notify_owner(Task.from_json_dict(created), actor=None)
        return created

    def create_many(self, specs: Sequence[NewTask]) -> builtins.list[Task]:
        """`create_files`, as models."""
        from protocols.tasks.model import Task

        return [Task.from_json_dict(created) for created in self.create_files(specs)]

    @redo_if_lock_lost
    def create_files(self, specs: Sequence[NewTask]) -> builtins.list[dict[str, Any]]:
        """Create the tasks of `specs` with their dependencies and owners, under one list lock;
        their files as written.

        Every blocker must exist (or be in the batch); a batch whose ``after`` links form a
        cycle is refused. Each file is complete when it appears: a worker never sees one of
        these tasks unblocked before its blockers are written.
        """
        with self._list_lock() as guard:
            first = max([*self.task_ids(), self._highwatermark()], default=0) + 1
            ids = [str(first + n) for n in range(len(specs))]
            for spec in specs:
                _check_new(spec)
                for blocker in spec.blocked_by:
                    self.require(blocker)
                for index in spec.after:
                    if not 0 <= index < len(specs):
                        raise InvalidTaskUpdate(f"no task number {index} in this batch")
            blockers = {
                task_id: [*spec.blocked_by, *(ids[i] for i in spec.after)]
                for task_id, spec in zip(ids, specs, strict=True)
            }
            check_acyclic(blockers)
            blocks: dict[str, builtins.list[str]] = {}  # task -> the tasks of the batch it blocks
            for task_id in ids:
                for blocker in blockers[task_id]:
                    blocks.setdefault(blocker, []).append(task_id)
            created = []
            for task_id, spec in zip(ids, specs, strict=True):
                mirror = _union([], blocks.get(task_id, []))
                item = _new_task_file(task_id, spec, mirror, _union([], blockers[task_id]))
                path = self.paths.task(task_id)
                if not ensure_file(path, dumps_pretty(item), self.durability):
                    guard.confirm()  # LockLost (redo) if another took the lock meanwhile
                    raise ProtocolsError(f"{path} appeared while creating task #{task_id}")
                created.append(item)
            guard.confirm()
            self._set_highwatermark(int(ids[-1]) if ids else 0)
            for task_id in ids:  # the mirror on existing blockers, after the tasks exist
                for blocker in blockers[task_id]:
                    if blocker not in ids:
                        self._rewrite(blocker, _adding("blocks", task_id))
        return created

    def update(self, task_id: str | int, *, actor: str | None = None, **fields: Any) -> Task | None:
        """Apply a TaskUpdate: Claude Code's field names, plus ``addBlocks``/``addBlockedBy``.

        ``status="deleted"`` deletes the task and returns None. Fields a task does not have go
        under ``metadata``; a ``metadata`` key set to None is removed. Putting a failed task
        back to ``pending`` retries it: its failure is cleared, and its owner too unless one is
        given. Raises `TaskNotFound`, or `InvalidTaskUpdate`
        for a bad status or a dependency cycle.
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
        from protocols.tasks.model import Task

        known = set(Task.model_fields) - {"id", "metadata"}
        extra = {k: v for k, v in fields.items() if k not in known and k != "metadata"}
        changes = {k: v for k, v in fields.items() if k in known}
        if "status" in changes and changes["status"] not in STATUSES:
            raise InvalidTaskUpdate(
                f"invalid status {changes['status']!r}; allowed: {', '.join(STATUSES)}, deleted"
            )
        metadata_changes = {**(fields.get("metadata") or {}), **extra}
        if changes.get("status") == "pending":
            metadata_changes.setdefault(FAILED, None)  # a failed task put back is retried

        def change(task: Task) -> Task:
            updates = dict(changes)
            if task.failed and changes.get("status") == "pending" and "owner" not in changes:
                updates["owner"] = None  # retried: any idle worker may take it
            if metadata_changes:
                merged = dict(task.metadata or {})
                for key, value in metadata_changes.items():
                    if value is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = value
                if merged != (task.metadata or {}):
                    updates["metadata"] = merged or None
            if add_blocks:
                updates["blocks"] = _union(task.blocks, add_blocks)
            if add_blocked_by:
                updates["blockedBy"] = _union(task.blockedBy, add_blocked_by)
            return task.updated(**updates) if updates else task

        if add_blocks or add_blocked_by:
            before, after = self._update_links(task_id, change, add_blocks, add_blocked_by)
            owner = before.owner
        elif metadata_changes:
            before, after = self._rewrite(task_id, change)
            owner = before.owner
        else:  # fields set and nothing else: the file's JSON is edited as it is
            owner, after = self._rewrite_plain(task_id, changes)
        if after.owner and after.owner != owner:
            self._notify_owner(after, actor)
        return after

    @redo_if_lock_lost
    def _update_links(
        self,
        task_id: str,
        change: Callable[[Task], Task],
        add_blocks: builtins.list[str],
        add_blocked_by: builtins.list[str],
    ) -> tuple[Task, Task]:
        """`change` on `task_id` with new dependencies, under the list lock: cycles refused,
        the deciding side (``blockedBy``) written first."""
        with self._list_lock():
            tasks = {t.id: t for t in self.list(include_internal=True)}
            for other in (*add_blocks, *add_blocked_by):
                if other not in tasks:
                    raise TaskNotFound(f"task #{other} not found in team {self.paths.team!r}")
            if task_id not in tasks:
                raise TaskNotFound(f"task #{task_id} not found in team {self.paths.team!r}")
            edges = waits_for(tasks)
            edges[task_id] = _union(edges[task_id], add_blocked_by)
            for other in add_blocks:
                edges[other] = _union(edges[other], [task_id])
            check_acyclic(edges)
            for other in add_blocks:  # they wait for this task: that decides, so it goes first
                self._rewrite(other, _adding("blockedBy", task_id))
            before, after = self._rewrite(task_id, change)
            for other in add_blocked_by:  # the mirror, once this task waits for them
                self._rewrite(other, _adding("blocks", task_id))
        return before, after

    def fail(self, task_id: str | int, reason: str, by: str | None) -> Task:
        """Mark the task failed (its worker failed or was denied): it stays unfinished, its
        dependents stay blocked, no idle worker claims it, and it keeps nobody busy. `by` is
        added to ``failedBy``: it does not take the task again by itself once retried."""
        mark = {"reason": reason, "by": by, "at": now_iso()}

        def failing(task: Task) -> Task:
            metadata = {**(task.metadata or {}), FAILED: mark}
            if by is not None:
                metadata[FAILED_BY] = failed_by(task.metadata, by)
            return task.updated(metadata=metadata)

        _, after = self._rewrite(str(task_id), failing)
        return after

    def retry(self, task_id: str | int) -> Task:
        """Put a failed (or stuck) task back: pending, no owner, its failure cleared; an idle
        worker claims it like any other."""
        after = self.update(task_id, status="pending", owner=None, metadata={FAILED: None})
        assert after is not None
        return after

    @redo_if_lock_lost
    def delete(self, task_id: str | int) -> bool:
        """Remove the task, keep its id used, and drop it from other tasks' dependencies.

        The file goes under the list lock and the task's own lock: Claude Code 2.1.332 deletes
        under the task's lock (``<N>.json.lock``), and under the list lock (``.lock``) while it
        raises the high-water mark, so neither program's delete races the other's update,
        claim or create. As there, the mark is raised before the file goes: a delete cut short
        never frees the id."""
        task_id = str(task_id)
        with self._list_lock() as guard:
            with self._task_lock(task_id) as held:
                if not safefs.exists(self.paths.task(task_id)):
                    return False
                guard.confirm()
                self._set_highwatermark(max(int(task_id), self._highwatermark()))
                held.confirm()  # LockLost (redo) if the task changed since the lock was taken
                safefs.unlink(self.paths.task(task_id))
            self._drop_references(task_id)
        return True

    def _drop_references(self, task_id: str) -> None:
        """Take a deleted task out of the others' ``blocks`` and ``blockedBy`` (each under
        its own lock; hold the list lock)."""
        for other in self.list(include_internal=True):
            if task_id in other.blocks or task_id in other.blockedBy:
                self._rewrite(
                    other.id,
                    lambda t: t.updated(
                        blocks=[x for x in t.blocks if x != task_id],
                        blockedBy=[x for x in t.blockedBy if x != task_id],
                    ),
                )

    @redo_if_lock_lost
    def claim(
        self, task_id: str | int, agent: str, check_busy: bool = True, start: bool = True
    ) -> ClaimResult:
        """Make `agent` the owner if nobody else is, the task is open and unblocked.

        With `start`, the claimed task is set ``in_progress``. With `check_busy`, an agent that
        already owns another unfinished (and not failed) task is refused (``agent_busy``).
        """
        with self._list_lock(), self._index.lock:
            result = self._claim_locked(str(task_id), agent, check_busy, start, self._refresh())
        return self._synced(result)

    @redo_if_lock_lost
    def claim_next(
        self, agent: str, start: bool = True, labels: Collection[str] | None = None
    ) -> ClaimResult | None:
        """Auto-claim: the lowest-id pending, unowned, unblocked, not failed task. None if
        there is none. With `labels` (what `agent` answers to: its kind, its agent type), only
        a task it may take (`protocols.tasks.task.may_take`: one for it, that it has not failed).

        While the index, even if out of date, has a candidate, the lock is taken at once: the
        look under it brings the index up to date and decides. Only an index without one looks
        first without the lock, so idle workers asking again and again take no locks and write
        nothing. (The look under the lock is needed anyway; one look instead of two per claim
        is half the fixed cost of bringing the index up to date, which every worker pays for
        every other worker's claims.) Under the lock the index chooses (lowest id first) and
        `_claim_locked` decides from the files.
        """

        def takeable(index: TaskIndex) -> Iterator[TaskFacts]:
            return (
                t
                for t in index.candidates()
                if labels is None or may_take(t.metadata, agent, labels)
            )

        with self._index.lock:
            index = self._index
            hopeful = next(takeable(index), None) is not None
            if not hopeful and next(takeable(self._refresh()), None) is None:
                return None
        with self._list_lock(), self._index.lock:
            index = self._refresh()
            for task in takeable(index):
                result = self._claim_locked(task.id, agent, True, start, index, labels)
                if result.success or result.reason == ClaimFailure.AGENT_BUSY:
                    break
            else:
                return None
        return self._synced(result)

    def _synced(self, result: ClaimResult) -> ClaimResult:
        """`result`, once the directory entry of a successful claim is on disk too (fsynced
        after the locks are released, so other claims need not wait for it)."""
        if result.success and (self.durability or default_durability()) == "power":
            fsync_dir(self.paths.tasks_dir)
        return result

    @redo_if_lock_lost
    def release_all(self, agent: str) -> builtins.list[Task]:
        """Return `agent`'s unfinished tasks to ``pending`` with no owner; returns those now
        back on the board. A task it failed loses its owner too but stays failed (its
        ``failedBy`` says who): it is not back on the board, and not returned, until someone
        retries it."""
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
                    if not after.failed:
                        released.append(after)
        return released

    def _claim_locked(
        self,
        task_id: str,
        agent: str,
        check_busy: bool,
        start: bool,
        index: TaskIndex,
        labels: Collection[str] | None = None,
    ) -> ClaimResult:
        """The compare-and-set. Holds the list lock and the index's lock; `index` was refreshed
        under the list lock. The task, its blockers and the tasks the index says keep `agent`
        busy are read again from their files: what the index says is only a hint. With
        `labels`, a task `agent` may not take (`may_take`) is refused as ``not_for_agent``."""
        if not safefs.exists(self.paths.task(task_id)):
            index.put(task_id, None)
            return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
        with self._task_lock(task_id) as guard:
            facts = self._read_in(guard, task_id)  # re-read under the task's own lock
            index.put(task_id, facts)
            if facts is None:
                return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
            if facts.status == "completed":
                return ClaimResult(False, facts.task(), ClaimFailure.ALREADY_RESOLVED)
            if facts.owner and facts.owner != agent:
                return ClaimResult(False, facts.task(), ClaimFailure.ALREADY_CLAIMED)
            if labels is not None and not may_take(facts.metadata, agent, labels):
                return ClaimResult(False, facts.task(), ClaimFailure.NOT_FOR_AGENT)
            blockers = self._open_blockers(facts, index)
            if blockers:
                return ClaimResult(False, facts.task(), ClaimFailure.BLOCKED, blocked_by=blockers)
            if check_busy:
                busy = self._busy_with(agent, task_id, index)
                if busy:
                    return ClaimResult(False, facts.task(), ClaimFailure.AGENT_BUSY, busy_with=busy)
            updates: dict[str, Any] = {"owner": agent}
            if start and facts.status == "pending":
                updates["status"] = "in_progress"
            if facts.failed:  # claimed by name: a deliberate retry
                updates["metadata"] = _with(facts.task(), FAILED, None)
            try:
                claimed = self._change(task_id, facts, updates, sync_dir=False)  # `_synced`
            except Unwritable as exc:  # skipped, as an invalid file is: claim_next goes on
                log.warning("%s; not claimed", exc)
                return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
            index.put(task_id, claimed)
        return ClaimResult(True, claimed.task())

    def _open_blockers(self, task: TaskFacts, index: TaskIndex) -> builtins.list[str]:
        """`task`'s blockers that exist and are not completed, each read from its file."""
        open_ids = []
        for blocker in task.blockedBy:
            other = self._read_id(blocker)
            index.put(blocker, other)
            if other is not None and other.unfinished:
                open_ids.append(blocker)
        return open_ids

    def _busy_with(self, agent: str, task_id: str, index: TaskIndex) -> builtins.list[str]:
        """Other tasks that keep `agent` busy: those the index names, checked in their files
        (the index, refreshed under the list lock, knows every owner change made before)."""
        busy = []
        for other_id in index.busy_with(agent):
            if other_id == task_id:
                continue
            other = self._read_id(other_id)
            index.put(other_id, other)
            if other is not None and other.owner == agent and other.busy:
                busy.append(other_id)
        return busy

    def _notify_owner(self, task: Task, actor: str | None) -> None:
        notify_owner(self.mailbox, task, actor)


class Sender(Protocol):
    """What telling an owner needs of a store's mailbox."""

    def send(self, to: str, body: Any, *, sender: str) -> object: ...


def notify_owner(mailbox: Sender | None, task: Task, actor: str | None) -> None:
    """Tell `task`'s owner it is theirs (a ``task_assignment``), unless they assigned it to
    themselves; a failure to send is logged, never raised (every store's board)."""
    if mailbox is None or task.owner is None or task.owner == actor:
        return
    from protocols.messages.models import TaskAssignment

    message = TaskAssignment(
        taskId=task.id,
        subject=task.subject,
        description=task.description,
        assignedBy=actor or "team-lead",
        timestamp=now_iso(),
    )
    try:
        mailbox.send(task.owner, message, sender=actor or "team-lead")
    except ProtocolsError as exc:
        log.warning("task #%s: could not send task_assignment: %s", task.id, exc)


def _adding(field: str, task_id: str) -> Callable[[Task], Task]:
    """A change that adds `task_id` to the task's `field` (``blocks`` or ``blockedBy``)."""

    def change(task: Task) -> Task:
        current = getattr(task, field)
        return task if task_id in current else task.updated(**{field: [*current, task_id]})

    return change


def _with(task: Task, key: str, value: Any) -> dict[str, Any] | None:
    """The task's metadata with `key` set to `value` (removed for None)."""
    merged = dict(task.metadata or {})
    if value is None:
        merged.pop(key, None)
    else:
        merged[key] = value
    return merged or None


def _check_new(spec: NewTask) -> None:
    """Refuse what the `Task` model would: a task file is written without building one."""
    texts = {"subject": spec.subject, "description": spec.description}
    optional = {"activeForm": spec.active_form, "owner": spec.owner}
    bad = [k for k, v in texts.items() if not isinstance(v, str)]
    bad += [k for k, v in optional.items() if v is not None and not isinstance(v, str)]
    if bad:
        raise InvalidTaskUpdate(f"a task's {', '.join(bad)} must be text")
    if spec.metadata is not None and not isinstance(spec.metadata, dict):
        raise InvalidTaskUpdate("a task's metadata must be an object")


def _new_task_file(
    task_id: str, spec: NewTask, blocks: builtins.list[str], blocked_by: builtins.list[str]
) -> dict[str, Any]:
    """A new task's file: `Task`'s keys in its order (Claude Code's), none left null."""
    item: dict[str, Any] = {"id": task_id, "subject": spec.subject}
    item["description"] = spec.description
    if spec.active_form is not None:
        item["activeForm"] = spec.active_form
    item.update(status=TaskStatus.PENDING.value, blocks=blocks, blockedBy=blocked_by)
    if spec.metadata:
        item["metadata"] = spec.metadata
    if spec.owner is not None:
        item["owner"] = spec.owner
    return item


def _union(current: Iterable[str], more: Iterable[str]) -> builtins.list[str]:
    result = list(current)
    for item in more:
        if item not in result:
            result.append(item)
    return result
