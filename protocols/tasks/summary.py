"""The task board summarised in one file (`protocols.tasks.summary_file`), so that a new process
(``swarm status``) need not parse every task file: `rows` trusts it whole while the task
directory has not changed since it was taken, else stats each ``<N>.json`` and parses only those
that changed since.

Trust: the task files are the truth. The summary is used whole, without listing the directory or
looking at a single task file, only when it is ``settled`` (taken when the directory and every
task file were older than its look by more than `RACY_NS`), the directory's (mtime, ctime) are
exactly those it recorded, and they are older than ``taken_ns`` by more than `RACY_NS`. Every
write that follows the board's protocol changes the directory: swarm renames each new file into
it, and Claude Code creates, deletes and writes tasks under its locks, directories made in it
and removed after the write (``<N>.json.lock``, ``.lock.lock``: spec sections 5-6); so the
directory's times move past anything recorded before. The margin is git's rule for a "racily
clean" index: a change within one tick of the file system's clock (a few ms; a second or two on
some file systems) may leave the times as they were, so only a directory last changed well
before the summary was taken is known to be as it was.

What that misses: a task file rewritten *in place without its lock* (by hand: ``echo >``, an
editor that writes in place, a script) changes the file but not the directory, and is not seen
until the directory changes next (any task written, claimed, created or deleted by swarm or by
Claude Code; ``touch tasks/<list>`` forces it). Only ``swarm status`` shows it late: nothing else
reads the summary, and claims read the task files under their locks. On a network file system
the client's attribute cache may hide a change for as long as it caches (the file-by-file look
below has the same limit).

Otherwise (the directory changed since, or the summary is not settled) the directory is listed
and every file ``lstat``ed: a row is used only when its file's key matches *and* the file's
mtime and ctime are older than ``taken_ns`` by more than `RACY_NS` (the same rule, file by file:
Claude Code rewrites task files in place, and a same-size rewrite within one tick keeps inode,
size and times); any other file is read again (and validated, as `TaskBoard` reads any task).

Never fatal: a summary that cannot be used is ignored and written anew; one that cannot be
written leaves the command answering all the same. It is written only when it can be trusted
whole from now on, or when the files it no longer tells (changed, added or removed since it was
taken) are more than one row in `SAVE_SHARE`: idle looks write nothing, and a look at a busy
board of 10,000 tasks reads a few changed files again rather than write ~2 MB each time.
Concurrent writers each leave a whole summary, whichever rename comes last, and each is true of
the files as they were at its own ``taken_ns``, so an older one landing last costs only re-reads.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from protocols.fs import safefs
from protocols.tasks.summary_file import (
    RACY_NS,
    VIEW_COLUMNS,
    Invalid,
    Key,
    Summary,
    TaskRow,
    invalid_row,
    load,
    save,
)
from protocols.tasks.task import TASK_FILE

if TYPE_CHECKING:
    from protocols.records.plain import Plain
    from protocols.tasks.model import Task

# a look writes the summary again when it read more than one row in this many (files changed,
# added or removed since the summary was taken), or when the summary is then trusted whole
SAVE_SHARE = 100

__all__ = ["RACY_NS", "Invalid", "Reader", "TaskRow", "load", "rows", "save"]


class Reader(Protocol):
    """How a look reads task files (`protocols.tasks.board.TaskBoard`)."""

    def read_task(self, name: str, dir_fd: int) -> Task | Plain | Invalid | None:
        """The task in file `name` of the task directory opened as `dir_fd` (no link followed):
        its model, or a record read without it; `Invalid` (warned about) for a file that holds
        no valid task; None for no file to read there (gone, a link: warned about)."""
        ...

    def invalid_again(self, name: str, reason: str) -> None:
        """Warn about file `name` again, found unchanged and still invalid for `reason`."""
        ...


def rows(
    tasks_dir: Path, summary: Path, reader: Reader, clock: Callable[[], int] = time.time_ns
) -> list[TaskRow]:
    """Every valid task of `tasks_dir`, by id, as rows: from `summary` where it is known to be
    current, else read with `reader`; `summary` is written again if anything changed. `clock`
    (ns since the epoch, the clock file times count on) dates the look. An invalid file is
    warned about at every look, as by any listing (when it is unchanged, for the reason kept)."""
    started = clock()
    try:
        dir_fd = safefs.open_dir(tasks_dir)
    except FileNotFoundError:
        return []
    try:
        here = os.fstat(dir_fd)
        directory = (here.st_dev, here.st_ino)
        times = (here.st_mtime_ns, here.st_ctime_ns)
        old = load(summary, directory)
        if old.trusted(times):
            found = old.all_rows
            valid = [row for row in found if row.status]
            # an invalid file is warned about again; one kept without a reason is read again,
            # and if it now reads as anything, it changed without the directory's knowledge
            invalid = (row for row in found if not row.status) if len(valid) < len(found) else ()
            if all(_still_invalid(row, reader, dir_fd) for row in invalid):
                return valid
            old = Summary()
        written, keys, missed, settled = _look(dir_fd, old, reader, started)
    finally:
        os.close(dir_fd)
    settled = settled and max(times) < started - RACY_NS
    # written when it can be trusted whole from now on, or when what it no longer knows (files
    # changed, added or removed since) is more than a share of the board: not at every look at
    # a busy board, where a write (~30 ms at 10,000 tasks) costs more than a few files read again
    if missed * SAVE_SHARE > len(written) or (settled and not old.trusted(times)):
        save(summary, directory, times, settled, started, written, keys)
    return [row for row in written if row.status]


def _still_invalid(row: TaskRow, reader: Reader, dir_fd: int) -> bool:
    """Warn about an unchanged invalid file again: for its kept reason, or by reading it
    (whether it still reads as nothing)."""
    if row.failure:
        reader.invalid_again(row.name, row.failure)
        return True
    return reader.read_task(row.name, dir_fd) is None


def _look(
    dir_fd: int, old: Summary, reader: Reader, started: int
) -> tuple[list[TaskRow], list[Key], int, bool]:
    """List the directory and stat every task file, using `old`'s row of a file only when its
    key matches and the file is older than `old` by more than `RACY_NS`; read the others. The
    rows and keys, how many files `old` no longer tells (changed, added or removed since), and
    whether every file was settled (older than this look by more than `RACY_NS`)."""
    ids = _ids(os.listdir(dir_fd), old)
    trusted_before = old.taken_ns - RACY_NS
    recent_after = started - RACY_NS
    at_of, old_keys = old.at, old.keys
    written: list[TaskRow] = []
    keys: list[Key] = []
    settled = True
    missed = still_there = 0
    stat_of = os.stat
    for task_id in ids:
        name = f"{task_id}.json"
        try:
            st = stat_of(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            missed += 1
            continue
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        newest = max(st.st_mtime_ns, st.st_ctime_ns)
        recent = newest >= recent_after
        settled = settled and not recent
        at = at_of.get(task_id)
        still_there += at is not None
        known = at is not None and old_keys[at] == key
        if known and newest < trusted_before:
            row = old.row(at)  # type: ignore[arg-type]
            if not row.status:  # invalid, and still the same
                _still_invalid(row, reader, dir_fd)
            if not row.status or stat.S_ISREG(st.st_mode):
                written.append(row)
                keys.append(key)
                continue
        task = reader.read_task(name, dir_fd)
        if task is None or isinstance(task, Invalid):
            fresh = invalid_row(task_id, task.reason if task is not None else "")
        else:
            fresh = TaskRow.of(task_id, task)
        written.append(fresh)
        keys.append(key)
        # a file changed moments ago that still holds what its row says is no change: a
        # summary written now would not trust it either (so idle looks write nothing)
        if not (recent and known and _same(old.row(at), fresh)):  # type: ignore[arg-type]
            missed += 1
    return written, keys, missed + len(at_of) - still_there, settled


def _ids(listed: list[str], old: Summary) -> list[str]:
    """The ids of the task files among `listed`, in order (`old`'s order when they are its
    files: no sort)."""
    known = {f"{task_id}.json" for task_id in old.at}
    present = set(listed)  # every known name must be there: names the directory really has
    if known <= present and not any(TASK_FILE.match(n) for n in present - known):
        return list(old.at)
    found = sorted((int(m.group(1)), m.group(1)) for n in listed if (m := TASK_FILE.match(n)))
    return [task_id for _, task_id in found]


def _same(old: TaskRow, fresh: TaskRow) -> bool:
    """Whether `old` (from the summary) is `fresh`: its values and its task."""
    return old[:VIEW_COLUMNS] == fresh[:VIEW_COLUMNS] and old.line() == fresh.line()
