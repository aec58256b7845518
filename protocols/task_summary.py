"""The task board summarised in one file, so that a new process (``swarm status``) need not parse
every task file: `rows` stats each ``<N>.json`` and parses only those that changed since.

Where: ``swarm/task-summaries/<task list>`` under the config root (`TeamPaths.task_summary`),
swarm's own directory. Claude Code never reads it (it lists ``tasks/<list>/``), and writing it
wakes none of the board's watchers (teammates, ``swarm watch``), which watch ``tasks/<list>/``.

What: three parts, one per line kind, in compact JSON (no raw newline inside a line):

1. a header: the format and version, the task directory's (device, inode), ``taken_ns`` (when the
   look that wrote it began: every row was read after it), the number of rows and a CRC-32 of
   the rest of the file;
2. the rows: per valid task file, by id, its name, its stat key (inode, size, mtime_ns,
   ctime_ns) and what a view shows (status, subject, owner, blockedBy, failure, internal);
3. one line per row, in their order: the task as `Task.to_json_dict` gives it (what its file
   holds), parsed only when asked (``swarm status --json``).

Trust: the task files are the truth and the summary is never trusted beyond them. A row is used
only when its file's ``lstat`` has the row's key *and* the file's mtime and ctime are older than
``taken_ns`` by more than `RACY_NS`; any other file is read again (and validated, as
`TaskBoard` reads any task). The second condition is git's rule for a "racily clean" index:
Claude Code rewrites task files in place, and a rewrite of the same size within one tick of the
file system's clock (a few ms; a second or two on some file systems) keeps inode, size and
times, so only a file last changed well before the summary was taken is known to hold what the
summary says.

Never fatal: a summary that is missing, unreadable, a link, corrupt (its CRC), of another version
or of another directory is ignored and written anew; one that cannot be written (a read-only file
system, a full disk, a link in the way) is left alone, and the command still answers. It is
written (temporary file, then rename; no fsync: it is a cache) only when something changed, so
concurrent writers each leave a whole summary, whichever rename comes last; each is true of
the files as they were at its own ``taken_ns``, so an older one landing last costs only
re-reads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from protocols import safefs
from protocols.jsonio import dumps_compact
from protocols.task import STATUSES, TASK_FILE, failure_of, is_internal
from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.task_model import Task

log = logging.getLogger(__name__)

FORMAT = "swarm-task-summary"
VERSION = 1
RACY_NS = 2_000_000_000  # coarser than any file system's clock tick swarm meets
TEMP_MARKER = ".new-"
TEMP_MAX_AGE_S = 60.0  # a temporary file older than this was left by a writer that died
ROW_LEN = 11  # a row's values in the file: `TaskRow`'s fields but the last
STATUS_SET = frozenset(STATUSES)
_make = tuple.__new__  # a row from its values, checked (`_valid`): a third of `TaskRow._make`

# reads the task file `name` in the task directory opened as `dir_fd` (no link followed):
# the task, or None for no valid task there
Key = tuple[int, int, int, int]  # a file's inode, size, mtime_ns and ctime_ns
Reader = Callable[[str, int], "Task | None"]


class TaskRow(NamedTuple):
    """One task file as the summary keeps it: its name and stat key, what a view shows of the
    task, and the task as its file holds it. A file that holds no valid task has the status
    ``""`` (it is kept so that it does not count as a change at every look)."""

    name: str
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    status: str
    subject: str
    owner: str | None
    blockedBy: list[str]
    failure: str  # why it failed; empty when it did not
    internal: bool
    full: bytes | dict[str, Any]  # its JSON: as the summary holds it, or parsed

    @classmethod
    def of(cls, name: str, key: Key, task: Task) -> TaskRow:
        """The row of `task`, read from `name` whose stat had `key`."""
        blocked_by = list(task.blockedBy)
        failure = failure_of(task.status, task.metadata)
        internal = is_internal(task.metadata)
        status = str(task.status)
        owner = task.owner
        return cls(
            name,
            *key,
            status,
            task.subject,
            owner,
            blocked_by,
            failure,
            internal,
            task.to_json_dict(),
        )

    @property
    def id(self) -> str:
        return self.name.removesuffix(".json")

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
        full = json.loads(self.full) if isinstance(self.full, bytes) else self.full
        if not isinstance(full, dict) or full.get("id") != self.id:  # a forged summary
            full = {"id": self.id, "subject": self.subject, "status": self.status}
        return dict(full)

    def line(self) -> bytes:
        """Its task as a line of the summary's third part."""
        return self.full if isinstance(self.full, bytes) else dumps_compact(self.full).encode()


def _invalid(name: str, key: Key) -> TaskRow:
    return TaskRow(name, *key, "", "", None, [], "", False, b"{}")


class _Summary:
    """A summary as read from its file (empty: none, or not one to use)."""

    def __init__(
        self, taken_ns: int = 0, rows: list[Any] | None = None, fulls: bytes = b""
    ) -> None:
        self.taken_ns = taken_ns
        self.rows = rows or []
        self.lines = fulls.split(b"\n") if rows else []
        self.at: dict[str, int] = {}  # name -> its row's index
        for at, row in enumerate(self.rows):
            if type(row) is list and len(row) == ROW_LEN and type(row[0]) is str:
                self.at[row[0]] = at


def rows(
    tasks_dir: Path, summary: Path, read: Reader, clock: Callable[[], int] = time.time_ns
) -> list[TaskRow]:
    """Every valid task of `tasks_dir`, by id, as rows: from `summary` where it is known to be
    current, else read with `read`; `summary` is written again if anything changed. `clock`
    (ns since the epoch, the clock file times count on) dates the look."""
    started = clock()
    try:
        dir_fd = safefs.open_dir(tasks_dir)
    except FileNotFoundError:
        return []
    try:
        here = os.fstat(dir_fd)
        old = load(summary, (here.st_dev, here.st_ino))
        names, changed = _names(os.listdir(dir_fd), old)
        trusted_before = old.taken_ns - RACY_NS
        written: list[TaskRow] = []
        stat_of = os.stat
        for name in names:
            try:
                st = stat_of(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                changed = True
                continue
            at = old.at.get(name)
            if at is not None:
                row = old.rows[at]
                if (
                    row[1] == st.st_ino
                    and row[2] == st.st_size
                    and row[3] == st.st_mtime_ns
                    and row[4] == st.st_ctime_ns
                    and st.st_mtime_ns < trusted_before
                    and st.st_ctime_ns < trusted_before
                ):
                    if row[5] == "":  # invalid, and still the same
                        read(name, dir_fd)  # warned about again, as by any listing
                        written.append(_make(TaskRow, (*row, b"{}")))
                        continue
                    if stat.S_ISREG(st.st_mode) and _valid(row):
                        written.append(_make(TaskRow, (*row, old.lines[at])))
                        continue
            key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            task = read(name, dir_fd)
            fresh = _invalid(name, key) if task is None else TaskRow.of(name, key, task)
            written.append(fresh)
            # a file changed moments ago that still holds what its row says is no change: a
            # summary written now would not trust it either (so idle looks write nothing)
            recent = max(st.st_mtime_ns, st.st_ctime_ns) >= started - RACY_NS
            if not (recent and at is not None and _same(old, at, fresh)):
                changed = True
    finally:
        os.close(dir_fd)
    if changed:
        save(summary, (here.st_dev, here.st_ino), started, written)
    return [row for row in written if row.status]


def _names(listed: list[str], old: _Summary) -> tuple[list[str], bool]:
    """The task files among `listed`, by id, and whether they are other files than `old`'s
    (its order is kept when they are the same: no sort)."""
    known = old.at
    present = set(listed)  # every known name must be there: names the directory really has
    if known.keys() <= present and not any(TASK_FILE.match(n) for n in present - known.keys()):
        return list(known), False
    found = sorted((int(m.group(1)), n) for n in listed if (m := TASK_FILE.match(n)))
    return [name for _, name in found], True


def _same(old: _Summary, at: int, fresh: TaskRow) -> bool:
    """Whether `old`'s row `at` is `fresh` (its key, its values and its task)."""
    return list(fresh[:ROW_LEN]) == old.rows[at] and fresh.line() == old.lines[at]


def _valid(row: list[Any]) -> bool:
    """Whether a row read from the file holds what a view expects (a summary written by
    another program could hold anything)."""
    _, _, _, _, _, status, subject, owner, blocked_by, failure, internal = row
    return (
        status in STATUS_SET
        and type(subject) is str
        and (owner is None or type(owner) is str)
        and type(blocked_by) is list
        and (not blocked_by or all(type(b) is str for b in blocked_by))
        and type(failure) is str
        and type(internal) is bool
    )


def load(path: Path, directory: tuple[int, int]) -> _Summary:
    """The summary at `path` for the task directory (device, inode) `directory`; empty if
    there is none to use."""
    try:
        fd = safefs.open_path(path, os.O_RDONLY)
    except OSError:  # missing, a link (LinkRefused), unreadable
        return _Summary()
    try:
        try:
            data = safefs.read_fd(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
    except OSError:
        return _Summary()
    try:
        head_end = data.index(b"\n")
        header = json.loads(data[:head_end])
        if (
            type(header) is not dict
            or header.get("format") != FORMAT
            or header.get("version") != VERSION
            or header.get("dir") != list(directory)
            or type(header.get("taken_ns")) is not int
            or header.get("crc") != zlib.crc32(memoryview(data)[head_end + 1 :])
        ):
            return _Summary()
        rows_end = data.index(b"\n", head_end + 1)
        found = json.loads(data[head_end + 1 : rows_end])
        fulls = data[rows_end + 1 :]
        if type(found) is not list or not len(found) == header.get("count") == fulls.count(b"\n"):
            return _Summary()
    except (ValueError, UnicodeDecodeError):
        return _Summary()
    return _Summary(header["taken_ns"], found, fulls.removesuffix(b"\n"))


def save(path: Path, directory: tuple[int, int], taken_ns: int, written: list[TaskRow]) -> None:
    """Write the summary (a failure is logged, never raised: it is only a cache)."""
    body = dumps_compact([list(row[:ROW_LEN]) for row in written]).encode() + b"\n"
    body += b"".join(row.line() + b"\n" for row in written)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "dir": list(directory),
        "taken_ns": taken_ns,
        "count": len(written),
        "crc": zlib.crc32(body),
    }
    try:
        _write(path, dumps_compact(header).encode() + b"\n" + body)
    except OSError as exc:  # read-only, full, a link in the way (LinkRefused)
        log.debug("task summary %s not written: %s", path, exc)


def _write(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a temporary file beside it, renamed over it."""
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
