"""The shared task board ``tasks/<team>/<N>.json`` with Claude Code's semantics (spec section 5).

`TaskBoard` creates tasks (ids from the highest file and ``.highwatermark``, never reused), reads
and lists them (``metadata._internal`` hides a task; invalid files are skipped with a warning, as
Claude Code does), updates them under each task's own lock (unknown fields go under ``metadata``;
``addBlocks``/``addBlockedBy`` update both sides), deletes them (references removed), and claims
them as a compare-and-set with typed failure reasons. An owner change sends ``task_assignment``
to the new owner when the board has a mailbox.

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
import functools
import json
import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from protocols.clock import now_iso
from protocols.errors import InvalidTaskUpdate, ProtocolsError, TaskNotFound
from protocols.fs import safefs
from protocols.fs.file_cache import FileCache, Signature, signature_of
from protocols.fs.jsonio import (
    Durability,
    atomic_write_bytes,
    atomic_write_text,
    default_durability,
    dumps_pretty,
    ensure_file,
    fsync_dir,
    parse_patiently,
    write_json,
)
from protocols.fs.locks import FileGuard, redo_if_lock_lost
from protocols.logs import logger
from protocols.paths import TeamPaths
from protocols.records.plain import Plain
from protocols.tasks import summary as task_summary
from protocols.tasks.edit import edited, plain_text
from protocols.tasks.facts import TaskFacts, facts_of
from protocols.tasks.graph import check_acyclic, waits_for
from protocols.tasks.shape import TASK
from protocols.tasks.summary import Invalid
from protocols.tasks.task import (
    FAILED,
    FAILED_BY,
    STATUSES,
    TASK_FILE,
    ClaimFailure,
    ClaimResult,
    failed_by,
    may_take,
)
from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.tasks.index import TaskIndex
    from protocols.tasks.model import Task
    from protocols.tasks.summary import TaskRow

log = logger(__name__)

# a task file that does not parse is re-read this long, but only while it is fresh (Claude Code
# writes task files in place): an old broken file is skipped at once
PARSE_RETRY_S = 0.2
FRESH_S = 2.0


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


class Unwritable(ProtocolsError, ValueError):
    """A valid task file that swarm cannot write back (its JSON is nested too deeply for the
    encoders): nothing was written."""


class _Invalid(Exception):
    """A task file that is not a valid task (`TaskBoard._read` skips it, warning once)."""

    def __init__(self, signature: Signature, error: Exception) -> None:
        super().__init__(str(error))
        self.signature, self.error = signature, error


class _Torn(_Invalid, ValueError):
    """A task file that does not parse but was written moments ago: perhaps being written."""


class TaskBoard:
    """The task list of one team."""

    def __init__(
        self,
        paths: TeamPaths,
        mailbox: Sender | None = None,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        self.paths = paths
        self.mailbox = mailbox
        self.durability = durability
        self.lock_timeout = lock_timeout
        # path -> (inode, size, mtime_ns) and what that file held (None: invalid)
        self._cache: FileCache[str, TaskFacts | None] = FileCache()  # None: an invalid file

    @functools.cached_property
    def _index(self) -> TaskIndex:
        """The process's index of this board, made when first used (a look through the
        summary, ``swarm status``, never uses it: nor inotify)."""
        from protocols.tasks import index as task_index

        return task_index.shared(str(self.paths.tasks_dir))

    # locks

    def _list_lock(self) -> FileGuard:
        ensure_file(self.paths.tasks_lock_target, "", self.durability)
        return FileGuard(
            self.paths.tasks_lock_target, timeout=self.lock_timeout, keep_lock_dir=True
        )

    def _task_lock(self, task_id: str) -> FileGuard:
        return FileGuard(self.paths.task(task_id), timeout=self.lock_timeout)

    # reading

    def task_ids(self) -> list[int]:
        return [task_id for task_id, _ in self._task_files()]

    def _task_files(self, dir_fd: int | None = None) -> list[tuple[int, str]]:
        """(id, path) of every ``<N>.json`` by id (plain strings: this runs per full look)."""
        directory = str(self.paths.tasks_dir)
        try:
            names = os.listdir(dir_fd) if dir_fd is not None else safefs.listdir(directory)
        except FileNotFoundError:
            return []
        found = ((int(m.group(1)), n) for n in names if (m := TASK_FILE.match(n)))
        return sorted((i, os.path.join(directory, n)) for i, n in found)

    def get(self, task_id: str | int) -> Task | None:
        """The task, or None if there is no valid file for it."""
        facts = self._read(str(self.paths.task(str(task_id))))
        return facts.task() if facts is not None else None

    def require(self, task_id: str | int) -> Task:
        task = self.get(task_id)
        if task is None:
            raise TaskNotFound(f"task #{task_id} not found in team {self.paths.team!r}")
        return task

    def list(self, include_internal: bool = False) -> builtins.list[Task]:
        """Valid tasks by id; ``metadata._internal`` ones only when asked.

        From the process's index of the board (`protocols.tasks.index`), which re-reads only the
        files that changed since it was last used: an unchanged board costs one non-blocking
        read of the process's inotify instance, however long it is (without inotify, a stat of every
        file)."""
        with self._index.lock:
            self._refresh()
            tasks = self._index.tasks()
        return tasks if include_internal else [t for t in tasks if not t.internal]

    def rows(self, include_internal: bool = False) -> builtins.list[TaskRow]:
        """`list` as `TaskRow`s (what a view shows of a task), for a process that looks once
        (``swarm status``): from the board's summary on disk (`protocols.tasks.summary`), which a
        new process trusts only for files whose stat it checked, parsing the others; so a look
        at an unchanged board costs a stat of every file, not a parse. The process's index is
        neither used nor built."""
        rows = task_summary.rows(self.paths.tasks_dir, self.paths.task_summary, self)
        return rows if include_internal else [r for r in rows if not r.internal]

    def read_task(self, name: str, dir_fd: int) -> Task | Plain | Invalid | None:
        """The task in `name` for the summary (`task_summary.Reader`): read without its model when
        the file is plainly a task (`protocols.tasks.shape.TASK`), so a look at a changed board
        loads no pydantic; `Invalid` with the reason warned about for an invalid file."""
        path = os.path.join(str(self.paths.tasks_dir), name)
        found = self._read_any(path, dir_fd=dir_fd)
        if not isinstance(found, TaskFacts):
            return found
        plain = TASK.read(found.raw) if found.raw is not None else None
        return plain if plain is not None else found.task()

    def invalid_again(self, name: str, reason: str) -> None:
        """`task_summary.Reader`: an invalid file found unchanged, warned about as `_read` does
        (every look warns, as every listing does)."""
        path = os.path.join(str(self.paths.tasks_dir), name)
        log.warning("skipping invalid task file %s: %s", path, reason)

    def _scan(self) -> builtins.list[TaskFacts]:
        """Every valid task (internal ones too), by id, from the files themselves.

        The directory is opened once (without following links) and every file is looked at
        relative to it: an unchanged file costs one ``fstatat``, however long the board."""
        try:
            dir_fd = safefs.open_dir(self.paths.tasks_dir)
        except FileNotFoundError:
            return []
        try:
            files = self._task_files(dir_fd)
            tasks = [self._read(path, cached_ok=True, dir_fd=dir_fd) for _, path in files]
        finally:
            os.close(dir_fd)
        return [t for t in tasks if t is not None]

    def _refresh(self) -> TaskIndex:
        """The index, brought up to date from the files (hold its lock)."""
        self._index.refresh(self._read_ids, self._scan)
        return self._index

    def _read_ids(self, task_ids: Iterable[str]) -> Iterator[tuple[str, TaskFacts | None]]:
        """What the files of `task_ids` hold now, read relative to the directory opened once."""
        directory = str(self.paths.tasks_dir)
        try:
            dir_fd = safefs.open_dir(directory)
        except FileNotFoundError:
            for task_id in task_ids:
                yield task_id, None
            return
        try:
            for task_id in task_ids:
                path = os.path.join(directory, f"{task_id}.json")
                yield task_id, self._read(path, dir_fd=dir_fd, patient=False)
        finally:
            os.close(dir_fd)

    def _read_id(self, task_id: str) -> TaskFacts | None:
        return self._read(os.path.join(str(self.paths.tasks_dir), f"{task_id}.json"))

    def _read(
        self, path: str, cached_ok: bool = False, dir_fd: int | None = None, patient: bool = True
    ) -> TaskFacts | None:
        """The task in `path` (what choosing a claim needs of it; its model on demand); None if
        there is none, or the file is invalid (a warning is logged once per version of the
        file). A file whose id is not its name is invalid.

        With `cached_ok`, a file whose (inode, size, mtime) did not change since it was last
        parsed is not parsed again. File times are coarse (a few ms) and inodes are reused, so
        a cached read can be stale: it is only used for listings, never for a compare-and-set.
        `dir_fd` is the tasks directory, opened by the caller without following links.

        A file that does not parse and was written moments ago is read again for a while
        (`PARSE_RETRY_S`): Claude Code writes in place. Not when `patient` is false (a look at
        what inotify reported changed): the close that ends the write is reported too, and the
        file is read again then; waiting here, under the list lock, would hold up every claim
        while a file is written (or kept half written by a hostile writer)."""
        found = self._read_any(path, cached_ok, dir_fd, patient)
        return found if isinstance(found, TaskFacts) else None

    def _read_any(
        self, path: str, cached_ok: bool = False, dir_fd: int | None = None, patient: bool = True
    ) -> TaskFacts | Invalid | None:
        """`_read`, with the reason (`Invalid`) for an invalid file instead of None."""
        name = os.path.basename(path)
        try:
            try:
                return self._load(path, name, cached_ok, dir_fd)
            except _Torn:  # perhaps being written in place
                if not patient:
                    return None  # read again when its writer closes it
                return parse_patiently(
                    lambda: self._load(path, name, cached_ok, dir_fd), PARSE_RETRY_S
                )
        except (_Torn, _Invalid) as bad:  # still torn at the deadline, or plainly invalid
            reason = _first_line(bad.error)
            if self._cache.signature(path) != bad.signature:  # once per version of the file
                log.warning("skipping invalid task file %s: %s", path, reason)
            self._cache.put(path, bad.signature, None)
            return Invalid(reason)

    def _load(self, path: str, name: str, cached_ok: bool, dir_fd: int | None) -> TaskFacts | None:
        """One attempt of `_read`: `_Torn` (a ValueError, so `parse_patiently` tries again) for
        a file that does not parse and was written moments ago, `_Invalid` for a bad one. A
        plainly valid file is not made a model (`protocols.tasks.facts`); any other is, to
        decide."""
        try:
            if cached_ok and dir_fd is not None:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                hit, task = self._cache.get(path, signature_of(st))
                if hit:
                    return task
            fd = _open_task(path, name, dir_fd)
        except FileNotFoundError:
            self._cache.drop(path)
            return None
        except (safefs.LinkRefused, OSError) as exc:  # a link: ELOOP with O_NOFOLLOW
            log.warning("skipping task file %s: %s", path, exc)
            return None
        try:
            st = os.fstat(fd)
            signature = signature_of(st)
            if not stat.S_ISREG(st.st_mode):  # a FIFO, a device, a directory: no task file
                raise _Invalid(signature, ValueError("it is not a regular file"))
            hit, cached = self._cache.get(path, signature)
            if cached_ok and hit:
                return cached
            data = safefs.read_fd(fd, st.st_size)
        finally:
            os.close(fd)
        try:
            raw = _decode(data)
        except ValueError as exc:
            fresh = time.time() - st.st_mtime < FRESH_S  # being written in place: try again
            raise (_Torn if fresh else _Invalid)(signature, exc) from None
        except RecursionError:  # nested thousands deep: no task file is
            raise _Invalid(signature, ValueError("its JSON is nested too deeply")) from None
        task_id = name.removesuffix(".json")
        facts = facts_of(raw, task_id)
        if facts is None:
            facts = _model_facts(raw, task_id, signature)
        return self._cache.put(path, signature, facts)

    # writing

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

    # internals

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

    def _read_in(self, guard: FileGuard, task_id: str) -> TaskFacts | None:
        """The task's file, read relative to its directory as its held lock opened it."""
        path = os.path.join(str(self.paths.tasks_dir), f"{task_id}.json")
        return self._read(path, dir_fd=guard.dir_fd)

    def _change(
        self, task_id: str, facts: TaskFacts, changes: dict[str, Any], sync_dir: bool = True
    ) -> TaskFacts:
        """Write the task `facts` were read from with `changes` made (hold its lock): its
        file's JSON edited as it is when that is a plain edit (`protocols.tasks.edit`), else
        through the model. What the file holds now."""
        raw = facts.raw
        out = edited(raw, changes) if raw is not None else None
        text = plain_text(out) if out is not None else None
        new: TaskFacts | None = None
        if out is None or text is None:
            try:  # a task nested hundreds deep reads, but neither json nor pydantic writes it
                task = facts.task().updated(**changes)
                text = dumps_pretty(task.to_json_dict())
            except (ValueError, RecursionError) as exc:
                raise Unwritable(f"task #{task_id} cannot be written back: {exc}") from None
            new = TaskFacts.of_task(task)
        path = self.paths.task(task_id)
        atomic_write_bytes(path, text.encode("utf-8"), self.durability, sync_dir)
        if new is None and out is not None:
            new = facts_of(out, task_id) or _model_facts(out, task_id, (0, 0, 0))
        assert new is not None
        return new

    @redo_if_lock_lost
    def _rewrite_plain(self, task_id: str, changes: dict[str, Any]) -> tuple[str | None, Task]:
        """An update that only sets fields (`_change`): the owner before, and the task after."""
        with self._task_lock(task_id) as guard:
            facts = self._read_in(guard, task_id)
            if facts is None:
                raise TaskNotFound(f"task #{task_id} not found in team {self.paths.team!r}")
            owner = facts.owner
            if changes:
                facts = self._change(task_id, facts, changes)
        return owner, facts.task()

    @redo_if_lock_lost
    def _rewrite(self, task_id: str, change: Callable[[Task], Task]) -> tuple[Task, Task]:
        with self._task_lock(task_id):
            before = self.require(task_id)
            after = change(before)
            if after is not before:
                self._write(after)
        return before, after

    def _write(self, task: Task, sync_dir: bool = True) -> None:
        write_json(self.paths.task(task.id), task.to_json_dict(), self.durability, sync_dir)

    def _highwatermark(self) -> int:
        try:
            return int(safefs.read_text(self.paths.highwatermark).strip() or 0)
        except (FileNotFoundError, ValueError, safefs.LinkRefused):
            return 0

    def _set_highwatermark(self, value: int) -> None:
        if value > self._highwatermark():
            atomic_write_text(self.paths.highwatermark, str(value), self.durability)

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


def _model_facts(raw: object, task_id: str, signature: Signature) -> TaskFacts:
    """The facts of a file that is not plainly valid, from its model (`_Invalid` if there is
    none: reading tasks needs the model, creating them does not)."""
    from protocols.tasks.model import Task

    try:
        task = Task.from_json_dict(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError) as exc:  # pydantic's errors are ValueErrors
        raise _Invalid(signature, exc) from None
    if task.id != task_id:
        raise _Invalid(signature, ValueError(f"its id is {task.id!r}"))
    return TaskFacts.of_task(task)


def _open_task(path: str, name: str, dir_fd: int | None) -> int:
    """A task file opened for reading without following a link: relative to the directory the
    caller opened safely, else through `safefs`. Without blocking: a FIFO planted as a task
    file would otherwise hang the open until someone writes into it (the caller then finds it
    is no regular file)."""
    if dir_fd is None:
        return safefs.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
    return os.open(name, _READ_FLAGS, dir_fd=dir_fd)


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_scan_json = json.JSONDecoder().raw_decode


def _decode(data: bytes) -> Any:
    """`json.loads(data)`, the usual way cheaper: a UTF-8 text that is one JSON value from its
    first byte to its last (as swarm and Claude Code write them) is decoded directly; anything
    else (a byte-order mark, other encodings, white space around the value, extra data) goes
    to `json.loads`, which accepts or refuses it as it always did."""
    try:
        text = data.decode("utf-8")
        value, end = _scan_json(text)
    except ValueError:
        return json.loads(data)
    if end != len(text):
        return json.loads(data)
    return value


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


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
