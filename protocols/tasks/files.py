"""Reading and writing the task files of one board, ``tasks/<team>/<N>.json`` (spec section 5):
`TaskFiles` finds them (the process's index, `protocols.tasks.index`), reads each as its facts
(an invalid file skipped with a warning, as Claude Code does; a fresh one that does not parse yet
re-read a moment), and writes one back (its JSON edited as it is when that is a plain edit, else
through the model), under the list lock (``.lock``) and each task's own (``<N>.json.lock``). The
board's rules (creating, updating, claiming, deleting) are `protocols.tasks.board.TaskBoard`'s.
"""

from __future__ import annotations

import builtins
import functools
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from protocols.errors import ProtocolsError, TaskNotFound
from protocols.fs import safefs
from protocols.fs.file_cache import FileCache, Signature, signature_of
from protocols.fs.jsonio import (
    Durability,
    atomic_write_bytes,
    atomic_write_text,
    dumps_pretty,
    ensure_file,
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
from protocols.tasks.shape import TASK
from protocols.tasks.summary import Invalid
from protocols.tasks.task import (
    TASK_FILE,
)

if TYPE_CHECKING:
    from protocols.tasks.index import TaskIndex
    from protocols.tasks.model import Task
    from protocols.tasks.summary import TaskRow

log = logger(__name__)

# a task file that does not parse is re-read this long, but only while it is fresh (Claude Code
# writes task files in place): an old broken file is skipped at once
PARSE_RETRY_S = 0.2
FRESH_S = 2.0


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


class TaskFiles:
    """The task files of one team's board: found, read, written back."""

    def __init__(
        self,
        paths: TeamPaths,
        durability: Durability | None = None,
        lock_timeout: float | None = None,
    ) -> None:
        self.paths = paths
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

    def _list_lock(self) -> FileGuard:
        ensure_file(self.paths.tasks_lock_target, "", self.durability)
        return FileGuard(
            self.paths.tasks_lock_target, timeout=self.lock_timeout, keep_lock_dir=True
        )

    def _task_lock(self, task_id: str) -> FileGuard:
        return FileGuard(self.paths.task(task_id), timeout=self.lock_timeout)

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

    def task_metadata(self, task_id: str | int) -> dict[str, Any] | None:
        """A task file's ``metadata`` as it is on disk, no model built (None: unreadable, or
        none): what a summary row leaves out."""
        try:
            data = json.loads(safefs.read_text(self.paths.task(task_id)))
        except (OSError, ValueError):
            return None
        metadata = data.get("metadata") if isinstance(data, dict) else None
        return metadata if isinstance(metadata, dict) else None

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


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
