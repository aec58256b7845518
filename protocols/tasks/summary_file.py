"""The file of the board's summary (`protocols.tasks.summary`, which says when it is trusted):
its rows (`TaskRow`), reading it (`load`) and writing it (`save`).

Where: ``swarm/task-summaries/<task list>`` under the config root (`TeamPaths.task_summary`),
swarm's own directory. Claude Code never reads it (it lists ``tasks/<list>/``), and writing it
wakes none of the board's watchers (teammates, ``swarm watch``), which watch ``tasks/<list>/``.

What: four parts in compact JSON (no raw newline inside a line):

1. a header: the format and version, the task directory's (device, inode) and (mtime_ns,
   ctime_ns) when the look that wrote it began, ``settled`` (that directory and every task file
   were older than the look by more than ``RACY_NS``), ``taken_ns`` (when that look began: every
   row was read after it), the number of rows and a CRC-32 of the rest of the file;
2. what a view shows of each task file, by id, as columns (one list per field, parsed and
   checked at C speed): id, status, subject, owner, blockedBy, failure, internal;
3. each file's stat key (inode, size, mtime_ns, ctime_ns), as columns: parsed only when the
   directory changed since;
4. one line per row, in their order: the task as `Task.to_json_dict` gives it (what its file
   holds), parsed only when asked (``swarm status --json``).

A summary that is missing, unreadable, a link, corrupt (its CRC), of another version or of
another directory, or whose columns do not hold what a view expects, reads as empty. It is
written as a temporary file renamed over it (no fsync: it is a cache); one that cannot be
written (a read-only file system, a full disk, a link in the way) is left alone.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from protocols.fs import safefs
from protocols.fs.jsonio import dumps_compact
from protocols.logs import logger
from protocols.tasks.task import STATUSES, failure_of, is_internal
from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.records.plain import Plain
    from protocols.tasks.model import Task

log = logger(__name__)

FORMAT = "swarm-task-summary"
VERSION = 2
RACY_NS = 2_000_000_000  # coarser than any file system's clock tick swarm meets
TEMP_MARKER = ".new-"
TEMP_MAX_AGE_S = 60.0  # a temporary file older than this was left by a writer that died
VIEW_COLUMNS = 7  # `TaskRow`'s fields but the last
KEY_COLUMNS = 4  # a `Key`'s
STATUS_SET = frozenset((*STATUSES, ""))  # "": a file that holds no valid task
# every id a task file's (`protocols.tasks.task.TASK_FILE`), one a line: 10,000 ids in one match
_IDS = re.compile(r"(?:\d{1,18}\n)*")  # \d as in TASK_FILE

Key = tuple[int, int, int, int]  # a file's inode, size, mtime_ns and ctime_ns


class TaskRow(NamedTuple):
    """One task file as the summary keeps it: its id, what a view shows of the task, and the
    task as its file holds it. A file that holds no valid task has the status ``""`` (it is
    kept so that it does not count as a change at every look), and why in ``failure``."""

    id: str  # its file is ``<id>.json``
    status: str
    subject: str
    owner: str | None
    blockedBy: list[str]
    failure: str  # why it failed; empty when it did not
    internal: bool
    # its JSON: parsed (read from its file), one line (`line`), or the summary's lines, where
    # its own is found by its id when first asked for (a text ``swarm status`` never asks)
    full: bytes | dict[str, Any] | Lines

    @classmethod
    def of(cls, task_id: str, task: Task | Plain) -> TaskRow:
        """The row of `task`, read from the file of `task_id`."""
        return cls(
            task_id,
            str(task.status),
            task.subject,
            task.owner,
            list(task.blockedBy),
            failure_of(task.status, task.metadata),
            is_internal(task.metadata),
            task.to_json_dict(),
        )

    @property
    def name(self) -> str:
        """Its file's name."""
        return f"{self.id}.json"

    @property
    def unfinished(self) -> bool:
        return self.status != TaskStatus.COMPLETED

    @property
    def failed(self) -> bool:
        return bool(self.failure)

    @property
    def busy(self) -> bool:
        return self.unfinished and not self.failed

    def to_json_dict(self) -> dict[str, Any]:
        """The task as its file holds it (`Task.to_json_dict`)."""
        full = self.full if isinstance(self.full, dict) else json.loads(self.line())
        if not isinstance(full, dict) or full.get("id") != self.id:  # a forged summary
            full = {"id": self.id, "subject": self.subject, "status": self.status}
        return dict(full)

    def line(self) -> bytes:
        """Its task as a line of the summary's last part."""
        if isinstance(self.full, Lines):
            return self.full.line_of(self.id)
        return self.full if isinstance(self.full, bytes) else dumps_compact(self.full).encode()


class Lines:
    """The summary's last part, a line per row: split, and each id's line found, when first
    asked for."""

    def __init__(self, ids: list[str], data: bytes) -> None:
        self._ids = ids
        self._data = data

    @functools.cached_property
    def _by_id(self) -> dict[str, bytes]:
        return dict(zip(self._ids, self._data.split(b"\n"), strict=True)) if self._ids else {}

    def line_of(self, task_id: str) -> bytes:
        return self._by_id[task_id]


class Invalid(NamedTuple):
    """What reading a file that holds no valid task gave: why (its first line), which a look
    that finds it unchanged warns about again without reading it."""

    reason: str


def invalid_row(task_id: str, reason: str = "") -> TaskRow:
    """The row of a file that holds no valid task: the status ``""``, and why in ``failure``
    (empty when there is no why to keep: a link, a file gone)."""
    return TaskRow(task_id, "", "", None, [], reason, False, b"{}")


_EMPTY_VIEW: list[list[Any]] = [[] for _ in range(VIEW_COLUMNS)]


class Summary:
    """A summary as read from its file (empty: none, or not one to use). Its keys and tasks are
    parsed when first asked for: a look that trusts it whole needs neither."""

    def __init__(
        self,
        header: dict[str, Any] | None = None,
        view: list[list[Any]] = _EMPTY_VIEW,
        keys: bytes = b"[]",
        fulls: bytes = b"",
    ) -> None:
        header = header or {}
        self.taken_ns: int = header.get("taken_ns", 0)
        self.dir_times: list[int] | None = header.get("dir_times")
        self.settled: bool = header.get("settled") is True
        self.view = view
        self.ids: list[str] = view[0]
        self._keys = keys
        self._fulls = fulls

    def trusted(self, times: tuple[int, int]) -> bool:
        """Whether the task directory, whose (mtime_ns, ctime_ns) are `times` now, is as it was
        when the summary was taken (see the module docstring)."""
        return (
            self.settled and self.dir_times == list(times) and max(times) < self.taken_ns - RACY_NS
        )

    @functools.cached_property
    def keys(self) -> list[Key]:
        """Each row's key; none at all (every file read again) if they are not what they
        should be."""
        try:
            columns = json.loads(self._keys)
        except ValueError:
            return []
        n = len(self.ids)
        if not (
            type(columns) is list
            and len(columns) == KEY_COLUMNS
            and all(type(c) is list and len(c) == n and _only(c, int) for c in columns)
        ):
            return []
        return list(zip(*columns, strict=True)) if n else []

    @functools.cached_property
    def at(self) -> dict[str, int]:
        """Each id's row (only rows whose key is known)."""
        return {task_id: i for i, task_id in enumerate(self.ids)} if self.keys else {}

    @functools.cached_property
    def all_rows(self) -> list[TaskRow]:
        """Every row, built at C speed (``tuple.__new__`` mapped over the zipped columns)."""
        lines = itertools.repeat(Lines(self.ids, self._fulls))
        rows = map(tuple.__new__, itertools.repeat(TaskRow), zip(*self.view, lines, strict=False))
        return cast("list[TaskRow]", list(rows))

    def row(self, at: int) -> TaskRow:
        return self.all_rows[at]


def _only(values: Iterable[Any], *types: type) -> bool:
    """Whether every value is of exactly one of `types` (at C speed: a set of their types)."""
    return set(map(type, values)) <= set(types)


def _valid(view: Any) -> bool:
    """Whether the view columns read from the file hold what a view expects (a summary written
    by another program could hold anything): every id a task file's, once; every status
    known; every other value of its type."""
    if type(view) is not list or len(view) != VIEW_COLUMNS or not _only(view, list):
        return False
    ids, statuses, subjects, owners, blocked, failures, internals = view
    n = len(ids)
    if any(len(column) != n for column in view) or not _only(ids, str):
        return False
    joined = "\n".join(ids) + "\n" if n else ""
    return (
        joined.count("\n") == n
        and _IDS.fullmatch(joined) is not None
        and len(set(ids)) == n
        and _only(statuses, str)
        and set(statuses) <= STATUS_SET
        and _only(subjects, str)
        and _only(owners, str, type(None))
        and _only(blocked, list)
        and _only(itertools.chain.from_iterable(blocked), str)
        and _only(failures, str)
        and _only(internals, bool)
    )


def load(path: Path, directory: tuple[int, int]) -> Summary:
    """The summary at `path` for the task directory (device, inode) `directory`; empty if
    there is none to use."""
    try:
        fd = safefs.open_path(path, os.O_RDONLY)
    except OSError:  # missing, a link (LinkRefused), unreadable
        return Summary()
    try:
        try:
            data = safefs.read_fd(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
    except OSError:
        return Summary()
    try:
        head_end = data.index(b"\n")
        header = json.loads(data[:head_end])
        if (
            type(header) is not dict
            or header.get("format") != FORMAT
            or header.get("version") != VERSION
            or header.get("dir") != list(directory)
            or type(header.get("taken_ns")) is not int
            or not _is_times(header.get("dir_times"))
            or header.get("crc") != zlib.crc32(memoryview(data)[head_end + 1 :])
        ):
            return Summary()
        view_end = data.index(b"\n", head_end + 1)
        keys_end = data.index(b"\n", view_end + 1)
        view = json.loads(data[head_end + 1 : view_end])
        fulls = data[keys_end + 1 :]
        if not _valid(view) or not len(view[0]) == header.get("count") == fulls.count(b"\n"):
            return Summary()
    except (ValueError, UnicodeDecodeError):
        return Summary()
    return Summary(header, view, data[view_end + 1 : keys_end], fulls.removesuffix(b"\n"))


def _is_times(value: Any) -> bool:
    return type(value) is list and len(value) == 2 and _only(value, int)


def save(
    path: Path,
    directory: tuple[int, int],
    times: tuple[int, int],
    settled: bool,
    taken_ns: int,
    written: list[TaskRow],
    keys: list[Key],
) -> None:
    """Write the summary (a failure is logged, never raised: it is only a cache). `times`: the
    directory's (mtime_ns, ctime_ns) when the look began; `settled`: it and every file were
    older than the look by more than `RACY_NS`."""
    columns = [list(column) for column in zip(*written, strict=True)]
    view = columns[:VIEW_COLUMNS] if written else _EMPTY_VIEW
    key_columns = [list(column) for column in zip(*keys, strict=True)] or [[]] * KEY_COLUMNS
    body = dumps_compact(view).encode() + b"\n" + dumps_compact(key_columns).encode() + b"\n"
    body += b"".join(row.line() + b"\n" for row in written)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "dir": list(directory),
        "dir_times": list(times),
        "settled": settled,
        "taken_ns": taken_ns,
        "count": len(written),
        "crc": zlib.crc32(body),
    }
    try:
        write_cache(path, dumps_compact(header).encode() + b"\n" + body)
    except OSError as exc:  # read-only, full, a link in the way (LinkRefused)
        log.debug("task summary %s not written: %s", path, exc)


def write_cache(path: Path, data: bytes) -> None:
    """Replace the cache file `path` with `data`: a temporary file beside it, renamed over it,
    not synced (temporary files of writers that died are removed). `OSError` (`LinkRefused`
    too) if it cannot be written."""
    safefs.makedirs(path.parent)
    dir_fd = safefs.open_dir(path.parent)
    try:
        _remove_stale(dir_fd, path.name)
        temp = f"{path.name}{TEMP_MARKER}{os.getpid()}-{os.urandom(4).hex()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def _remove_stale(dir_fd: int, name: str) -> None:
    """Remove temporary files of `name` that writers which died left behind."""
    old_enough = time.time() - TEMP_MAX_AGE_S
    for entry in os.listdir(dir_fd):
        if entry.startswith(name + TEMP_MARKER):
            with contextlib.suppress(OSError):
                if os.stat(entry, dir_fd=dir_fd, follow_symlinks=False).st_mtime < old_enough:
                    os.unlink(entry, dir_fd=dir_fd)
