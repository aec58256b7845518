"""File locks that exclude both Claude Code's writers and swarm's own processes (spec section 6).

`FileGuard` locks one file ``X`` in two layers:

1. a kernel lock (flock, taken with `filelock.lock_descriptor`) on ``.swarm-locks/X.flock`` in a
   hidden directory beside ``X``: swarm processes exclude each other there, and a dead holder's
   lock is released by the kernel at once;
2. the proper-lockfile lock Claude Code uses: the *directory* ``X.lock``, made with `mkdir`. A lock
   directory whose mtime is older than 10 s is stale and is removed; a held lock's mtime is
   refreshed every 5 s by one background thread, so a long hold is not taken for stale.

While a swarm process holds ``X.lock`` it records ``pid inode ctime`` of that directory in its
flock file. The next swarm process (which then holds the flock) can tell that a leftover
``X.lock`` was made by a swarm process that has died, and remove it at once instead of waiting out
the stale window. Any other leftover (Claude Code's) is waited for and, once stale, removed.

Waiting uses jittered exponential backoff (0.2 ms up to 2 ms) on one open descriptor: a retry
costs one system call, so many waiters do not eat the CPU the holder needs.

A lock that cannot be taken before the deadline raises `LockTimeout`: the caller's write does not
happen and the caller is told. Nothing is silently dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import filelock

from protocols.errors import LockTimeout
from protocols.pids import pid_alive

log = logging.getLogger(__name__)

STALE_S = 10.0
REFRESH_S = 5.0
DEFAULT_TIMEOUT_S = 30.0
FLOCK_DIR = ".swarm-locks"
_MAX_BACKOFF_S = 0.002
_RECORD_BYTES = 80


def lock_dir_for(target: Path) -> Path:
    """Claude Code's lock path for `target`: the directory ``<target>.lock``."""
    return target.with_name(target.name + ".lock")


def flock_path_for(target: Path) -> Path:
    """swarm's flock file for `target`, in a hidden directory beside it.

    It is kept out of the target's own directory so lock traffic does not wake inbox watchers.
    """
    return target.parent / FLOCK_DIR / f"{target.name}.flock"


class FileGuard:
    """Exclusive lock on one file, compatible with Claude Code. Use as a context manager."""

    def __init__(
        self,
        target: Path,
        timeout: float = DEFAULT_TIMEOUT_S,
        stale: float = STALE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.target = Path(target)
        self.lock_dir = str(lock_dir_for(self.target))
        self.flock_path = flock_path_for(self.target)
        self.timeout = timeout
        self.stale = stale
        self._clock = clock
        self._fd: int | None = None

    def __enter__(self) -> FileGuard:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError(f"{self.target} is already locked by this FileGuard")
        deadline = time.monotonic() + self.timeout
        fd = self._open_flock_file()
        try:
            self._take_flock(fd, deadline)
            try:
                self._make_lock_dir(fd, deadline)
            except BaseException:
                filelock.unlock_descriptor(fd)
                raise
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        _refresher().add(self.lock_dir)

    def release(self) -> None:
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        _refresher().discard(self.lock_dir)
        try:
            os.rmdir(self.lock_dir)
        except FileNotFoundError:
            log.warning("lock %s was removed by another process while held", self.lock_dir)
        finally:
            # the ownership record stays: it names a directory (inode, ctime) that is gone, so
            # it can never match a lock directory made later
            try:
                filelock.unlock_descriptor(fd)
            finally:
                os.close(fd)

    def _open_flock_file(self) -> int:
        try:
            return os.open(self.flock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            self.flock_path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.flock_path, os.O_RDWR | os.O_CREAT, 0o644)

    def _take_flock(self, fd: int, deadline: float) -> None:
        delay = 0.0002
        while not filelock.lock_descriptor(fd, blocking=False):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockTimeout(
                    f"could not lock {self.target} within {self.timeout:.0f} s "
                    "(another swarm process holds it); nothing was written"
                )
            time.sleep(min(delay * (0.5 + random.random()), remaining))
            delay = min(delay * 1.5, _MAX_BACKOFF_S)

    def _make_lock_dir(self, fd: int, deadline: float) -> None:
        # read before our own attempts overwrite it: it may name a dead holder's directory
        previous = _read_record(fd)
        delay = 0.001
        while True:
            if not os.path.lexists(self.lock_dir) and self._try_make_lock_dir(fd):
                return
            if self._remove_if_abandoned(fd, previous):
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockTimeout(
                    f"could not lock {self.target}: {self.lock_dir} has been held for "
                    f"{self.timeout:.0f} s (by Claude Code or a hung process); nothing was written"
                )
            time.sleep(min(delay * (0.5 + random.random()), remaining))
            delay = min(delay * 2, 0.05)

    def _try_make_lock_dir(self, fd: int) -> bool:
        """Make Claude Code's lock directory, recorded as ours before anyone can see it.

        The directory is made under a private name in ``.swarm-locks/``, its inode recorded in
        the flock file, and only then renamed into place without replacing anything
        (``renameat2(RENAME_NOREPLACE)``). A process killed at any point leaves either no lock
        directory or one the record names, so the next swarm process never has to wait out the
        stale window for it. (We hold the flock, so the private name is ours alone; one left by a
        killed process is removed.)
        """
        private = str(self.flock_path) + ".new-lock"
        try:
            os.mkdir(private)
        except FileExistsError:  # left by a swarm process killed before its rename
            _rmdir_quietly(private)
            os.mkdir(private)
        try:
            self._write_record(fd, os.stat(private).st_ino, 0)
            rename_noreplace(private, self.lock_dir)
        except FileExistsError:
            self._write_record(fd, 0, 0)  # before the rmdir, so the inode is never reused
            _rmdir_quietly(private)
            return False
        except NotImplementedError:  # no renameat2 here: the plain protocol
            self._write_record(fd, 0, 0)
            _rmdir_quietly(private)
            try:
                os.mkdir(self.lock_dir)
            except FileExistsError:
                return False
        st = os.stat(self.lock_dir)
        self._write_record(fd, st.st_ino, st.st_ctime_ns)
        return True

    def _remove_if_abandoned(self, fd: int, previous: tuple[int, int, int] | None) -> bool:
        """Remove the lock directory if it is stale or left by a dead swarm process."""
        try:
            st = os.stat(self.lock_dir)
        except FileNotFoundError:
            return True
        stale = st.st_mtime < self._clock() - self.stale
        if not stale and not _left_by_dead_swarm(previous, st):
            return False
        self._write_record(fd, 0, 0)  # the record must not outlive the directory it names
        try:
            os.rmdir(self.lock_dir)
            log.info("removed abandoned lock %s", self.lock_dir)
        except OSError:
            pass
        return True

    def _write_record(self, fd: int, ino: int, ctime_ns: int) -> None:
        """``pid inode ctime`` of the lock directory we are making; fixed width, so an overwrite
        needs no (slow, journalled) truncate. Inode 0 means no directory."""
        record = f"{os.getpid()} {ino} {ctime_ns}".ljust(_RECORD_BYTES).encode()
        os.pwrite(fd, record, 0)


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return function


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def rename_noreplace(source: str, destination: str) -> None:
    """Rename `source` to `destination` unless it exists (FileExistsError).

    Raises NotImplementedError where the C library or the file system lacks renameat2.
    """
    function = _renameat2()
    if function is None:
        raise NotImplementedError("renameat2 is not available")
    result = function(
        _AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(destination), _RENAME_NOREPLACE
    )
    if result == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.EEXIST, errno.ENOTEMPTY):
        raise FileExistsError(code, os.strerror(code), destination)
    if code in (errno.ENOSYS, errno.EINVAL):
        raise NotImplementedError(f"renameat2: {os.strerror(code)}")
    raise OSError(code, os.strerror(code), destination)


def _rmdir_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def _read_record(fd: int) -> tuple[int, int, int] | None:
    """The ``pid inode ctime`` a swarm process wrote into the flock file, if any."""
    try:
        pid, ino, ctime_ns = (int(f) for f in os.pread(fd, _RECORD_BYTES, 0).split())
    except (OSError, ValueError):
        return None
    return pid, ino, ctime_ns


def _left_by_dead_swarm(record: tuple[int, int, int] | None, st: os.stat_result) -> bool:
    """True if `record` names the lock directory `st` and its maker has died."""
    if record is None:
        return False
    pid, ino, ctime_ns = record
    if ino != st.st_ino or ctime_ns not in (0, st.st_ctime_ns):
        return False  # ctime 0: killed between the rename and writing the ctime down
    return not pid_alive(pid)


class _Refresher:
    """One daemon thread that keeps the mtime of long-held lock directories fresh."""

    def __init__(self, interval: float = REFRESH_S) -> None:
        self.interval = interval
        self._held: dict[str, float] = {}
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, lock_dir: str) -> None:
        with self._guard:
            self._held[lock_dir] = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="swarm-lock-refresher", daemon=True
                )
                self._thread.start()

    def discard(self, lock_dir: str) -> None:
        with self._guard:
            self._held.pop(lock_dir, None)

    def _run(self) -> None:
        while True:
            time.sleep(min(1.0, self.interval / 2))
            now = time.monotonic()
            with self._guard:  # under the guard, so a released lock is never touched
                for path, touched in list(self._held.items()):
                    if now - touched < self.interval:
                        continue
                    self._held[path] = now
                    try:
                        os.utime(path)
                    except FileNotFoundError:
                        log.warning("held lock %s disappeared (taken for stale?)", path)


_REFRESHER: _Refresher | None = None
_REFRESHER_GUARD = threading.Lock()


def _refresher() -> _Refresher:
    global _REFRESHER
    with _REFRESHER_GUARD:
        if _REFRESHER is None:
            _REFRESHER = _Refresher()
        return _REFRESHER
