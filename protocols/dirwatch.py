"""Which names in one directory changed since the last look: raw inotify, read without blocking.

`DirWatch(path).changes()` returns the names created, written, renamed or removed in the
directory since the previous call, or None when it cannot tell (the caller then looks at every
file itself): the first call, no inotify here (not Linux, or the user's
``fs.inotify.max_user_instances`` used up), the kernel's queue overflowed, the directory does not
exist yet or was removed or replaced. A watch that was lost is set up again on the next call,
before it answers None, so nothing changed between the two goes unseen. A process that could
not have an inotify descriptor asks again every `RETRY_S` seconds.

Why this can be trusted for a compare-and-set's inputs: the kernel queues the event inside the
system call that made the change (``write``, ``rename``, ``unlink``, ``open(O_TRUNC)``), before
that call returns. So once `changes()` has read the queue, every change that was complete when
it was called has been reported, whoever made it (Claude Code writes task files in place;
swarm renames new ones over them). File times are not used: they are coarse, and a rewrite in
the same tick with the same size would look unchanged.

No thread and no watchdog: one descriptor per watch, read in non-blocking mode when asked. The
directory is opened without following links (`protocols.safefs`) and watched through
``/proc/self/fd``, so the watch is on the very directory that was checked.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import time
import weakref
from typing import Any

from protocols import safefs

_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_UNMOUNT = 0x00002000
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_IN_ISDIR = 0x40000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_LOST = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_Q_OVERFLOW | _IN_IGNORED
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_BYTES = 64 * 1024
RETRY_S = 10.0  # how long to go without inotify before asking for a descriptor again


class DirWatch:
    """Changes to the entries of one directory (not its subdirectories)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None  # made by the first `changes()`
        self._next_try = 0.0  # monotonic time to try for a descriptor again
        self._wd: int | None = None

    @property
    def available(self) -> bool:
        """Whether this watch has an inotify descriptor (after the first `changes()`)."""
        return self._fd is not None

    def changes(self) -> set[str] | None:
        """Names changed since the last call; None when every file must be looked at."""
        if self._fd is None:
            if time.monotonic() < self._next_try:
                return None
            self._fd = _inotify_init()
            if self._fd is None:  # used up by other processes, perhaps only for now
                self._next_try = time.monotonic() + RETRY_S
                return None
            weakref.finalize(self, os.close, self._fd)
        if self._wd is None:
            self._drain()  # events of an earlier watch say nothing the full look will not
            self._wd = self._add_watch()
            return None
        names, lost = self._drain()
        if lost:
            self._wd = self._add_watch()  # watch again first: the full look comes after
            return None
        return names

    def _drain(self) -> tuple[set[str], bool]:
        assert self._fd is not None
        names: set[str] = set()
        lost = False
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return names, lost
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                offset = start + length
                if mask & _LOST and (wd == self._wd or mask & _IN_Q_OVERFLOW):
                    lost = True
                elif wd == self._wd and length and not mask & _IN_ISDIR:
                    names.add(os.fsdecode(data[start:offset].split(b"\0", 1)[0]))

    def _add_watch(self) -> int | None:
        """Watch the directory opened without following links; None if it is not there."""
        assert self._fd is not None
        try:
            dir_fd = safefs.open_dir(self.path)
        except (FileNotFoundError, NotADirectoryError, safefs.LinkRefused):
            return None
        try:
            wd = _libc().inotify_add_watch(self._fd, f"/proc/self/fd/{dir_fd}".encode(), _MASK)
        finally:
            os.close(dir_fd)
        return wd if wd >= 0 else None


def _inotify_init() -> int | None:
    if not os.path.isdir("/proc/self/fd"):
        return None  # no /proc to name a directory descriptor by
    try:
        fd = int(_libc().inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
    except (OSError, AttributeError):  # no libc with inotify here
        return None
    return fd if fd >= 0 else None  # EMFILE: the user's inotify instances are used up


@functools.cache
def _libc() -> Any:
    """The C library (the process's own symbols), loaded once when first needed."""
    return ctypes.CDLL(None, use_errno=True)
