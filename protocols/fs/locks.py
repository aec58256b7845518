"""File locks that exclude both Claude Code's writers and swarm's own processes (spec section 6).

`FileGuard` locks one file ``X`` in two layers:

1. a kernel lock (`fcntl.flock`) on ``.swarm-locks/X.flock`` in a hidden directory beside ``X``:
   swarm processes exclude each other there, and a dead holder's lock is released by the kernel
   at once. It is a single `fcntl.flock` call: the `filelock` package, which would make the same
   call, is not a dependency of swarm at all (only the tests use it, to share one-time installs
   between their workers), and its import alone costs ~12 ms of a ``swarm send``;
2. the proper-lockfile lock Claude Code uses: the *directory* ``X.lock``, made with `mkdir`. A lock
   directory whose mtime is older than 10 s is stale and is removed; a held lock's mtime is
   refreshed every 5 s by one background thread (alive only while a lock is held), so a long
   hold is not taken for stale.

A file locked again and again (an inbox, the task list, config.json: ``keep_lock_dir``) keeps
its lock directory between holds, under a hidden private name beside it (``.X.lock.new``): a
hold renames it into place (its time set to now first: Claude Code judges a lock by its mtime)
and a release renames it back, so no directory is made and removed per hold. On this project's
machine (ext4 without a journal, mounted ``discard``) making and removing one cost ~150 µs of
kernel CPU and often waited for the device; a rename costs a few µs. ``X.lock`` still appears
and goes in one step each way, as ``mkdir`` and ``rmdir`` make it.

While a swarm process holds ``X.lock`` it records ``pid start inode ctime`` of that directory in
its flock file. The next swarm process (which then holds the flock) can tell that a leftover
``X.lock`` was made by a swarm process that has died (the pid is gone, or taken by a process that
started later), and remove it at once instead of waiting out the stale window. Any other leftover
(Claude Code's) is waited for and, once stale, removed. Something at ``X.lock`` that is not an
empty directory (a file, a link, a directory with things in it) is nobody's lock and cannot be
removed with ``rmdir``: the wait ends at once with an error naming it.

A holder that was paused (SIGSTOP, a suspended laptop, a clock jump) for longer than the stale
window may find its lock taken by a writer that followed the stale rule. So the rename that
commits a write (`protocols.fs.jsonio.atomic_write_bytes`) first confirms, with
`FileGuard.confirm`, that the lock directory is still the one this process made and that the
file was not rewritten since it was read; if not, `LockLost` is raised, nothing is written, and
the operation is redone from a fresh read (`redo_if_lock_lost`). Release never removes a lock
directory that is not its own.

A process waiting for swarm's kernel lock does not poll: it blocks in the kernel and is woken
the moment the holder lets go (`protocols.fs.flock_wait`), so many waiters take no CPU from the
holder and the lock changes hands without a sleep in between. Two waits do back off instead:
a group-commit writer waiting to be carried (1 ms up to 10 ms, woken early by its committer's
ring: see `_take_flock` and `protocols.inbox.spool_wake`), and Claude Code's lock directory, which
nothing can block on (1 ms up to 50 ms).

A lock that cannot be taken before the deadline raises `LockTimeout`: the caller's write does not
happen and the caller is told. Nothing is silently dropped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import ParamSpec, TypeVar

from protocols.errors import InvalidSetting, LockLost, LockTimeout
from protocols.fs import safefs
from protocols.fs.file_cache import Signature, signature_of
from protocols.fs.flock_wait import jitter, wait_for_flock
from protocols.logs import logger
from protocols.pids import ProcessIdentity, start_time

log = logger(__name__)

STALE_S = 10.0
REFRESH_S = 5.0
DEFAULT_TIMEOUT_S = 30.0
FLOCK_DIR = ".swarm-locks"
_COMMIT_S = 0.001  # about what one durable inbox commit takes
# a writer waiting to be carried asks less and less often: with hundreds waiting on one inbox
# (every teammate answering the lead at once), asking every 2 ms would take the CPU the holder
# needs to carry them
_MAX_CARRIED_BACKOFF_S = 0.01
_RECORD_BYTES = 80
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOTE_BYTES = 80  # after the record: what the last holder knew of the target (`FileGuard.note`)
REDO_ATTEMPTS = 5
P = ParamSpec("P")
R = TypeVar("R")


def default_timeout() -> float:
    """How long a lock is waited for: ``$SWARM_LOCK_TIMEOUT`` seconds, else 30."""
    return _timeout_of(os.environ.get("SWARM_LOCK_TIMEOUT", ""))


@functools.lru_cache(maxsize=8)
def _timeout_of(value: str) -> float:
    """`default_timeout` for the setting's text (once per text: every lock asks)."""
    try:
        seconds = float(value) if value else DEFAULT_TIMEOUT_S
    except ValueError:
        raise InvalidSetting(
            f"SWARM_LOCK_TIMEOUT must be a number of seconds, got {value!r}"
        ) from None
    if seconds <= 0:
        raise InvalidSetting(f"SWARM_LOCK_TIMEOUT must be positive, got {value!r}")
    return seconds


def lock_dir_for(target: Path) -> Path:
    """Claude Code's lock path for `target`: the directory ``<target>.lock``."""
    return target.with_name(target.name + ".lock")


def flock_path_for(target: Path) -> Path:
    """swarm's flock file for `target`, in a hidden directory beside it.

    It is kept out of the target's own directory so lock traffic does not wake inbox watchers.
    """
    return target.parent / FLOCK_DIR / f"{target.name}.flock"


def _try_flock(fd: int) -> bool:
    """One attempt at the exclusive kernel lock on `fd` (False: another process holds it)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class FileGuard:
    """Exclusive lock on one file, compatible with Claude Code. Use as a context manager.

    While held it keeps the target's directory and ``.swarm-locks/`` open (opened without
    following links, `protocols.fs.safefs`): every step of taking, checking and releasing the lock,
    and the writer's commit (`dir_fd`), works on those directories by name, with no path to
    resolve again.
    """

    def __init__(
        self,
        target: Path,
        timeout: float | None = None,
        stale: float = STALE_S,
        clock: Callable[[], float] = time.time,
        keep_lock_dir: bool = False,
    ) -> None:
        self.target = target if isinstance(target, Path) else Path(target)
        # the lock directory is kept under its private name between holds, for the next holder
        # (a file locked again and again: an inbox, the task list, config.json); see `release`
        self.keep_lock_dir = keep_lock_dir
        self._key = str(self.target)  # in `_HELD`
        self._parent, self._name = os.path.split(self._key)
        self._lock_name = self._name + ".lock"
        self.lock_dir = os.path.join(self._parent, self._lock_name)  # Claude Code's
        self.timeout = default_timeout() if timeout is None else timeout
        self.stale = stale
        self._clock = clock
        self._fd: int | None = None
        self._dir_fd: int | None = None  # the target's directory
        self._locks_fd: int | None = None  # .swarm-locks/ beside it
        self._private = f".{self._lock_name}.new"  # beside it: see `_try_make_lock_dir`
        self._made: tuple[int, int] | None = None  # (inode, ctime_ns) of our lock directory
        self._expected: Signature | None = None  # the target as this holder last saw it
        # whether the last holder (a swarm process) let go without releasing: killed, or its
        # lock taken as stale; its temporary file may be left beside the target
        self.after_unclean_release = False

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

    @property
    def dir_fd(self) -> int:
        """The target's directory, open while the lock is held."""
        assert self._dir_fd is not None, "the lock is not held"
        return self._dir_fd

    def acquire(self) -> None:
        self.acquire_unless(None)

    def acquire_unless(
        self,
        done: Callable[[], bool] | None,
        on_busy: Callable[[], None] | None = None,
        pause: Callable[[float], None] = time.sleep,
    ) -> bool:
        """Take the lock, unless `done()` turns true while waiting for swarm's own lock, or
        right after it was taken following a wait (before Claude Code's is made): then nothing
        is held and False is returned. `on_busy()` is called once, before waiting, if another
        swarm process holds the lock at the first try.

        For a group commit (`protocols.inbox.spool`): a writer that finds the lock taken spools its
        entry (`on_busy`), and if the holder commits it meanwhile (`done`) it needs no lock and
        no write of its own. Between looks at `done()` it waits with `pause(seconds)`, which
        may return early when it has news (`protocols.inbox.spool_wake`).
        """
        if self._fd is not None:
            raise RuntimeError(f"{self.target} is already locked by this FileGuard")
        deadline = time.monotonic() + self.timeout
        self._open_dirs()
        try:
            fd = self._open_flock_file()
            try:
                waited = not _try_flock(fd)
                if waited and on_busy is not None:
                    on_busy()
                if waited and not self._take_flock(fd, deadline, done, pause):
                    os.close(fd)
                    self._close_dirs()
                    return False
                if waited and done is not None and done():
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                    self._close_dirs()
                    return False
                try:
                    self._make_lock_dir(fd, deadline)
                except BaseException:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    raise
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            self._close_dirs()
            raise
        self._fd = fd
        self._expected = self._signature()
        _refresher().add(self)
        _register(self)
        return True

    def release(self) -> None:
        fd = self._fd
        if fd is None:
            return
        self._fd = None
        _unregister(self)
        _refresher().discard(self)
        kept = -1
        try:
            if self.owns_lock_dir():
                if not self._keep_lock_dir():
                    kept = open_to_keep(self._lock_name, self.dir_fd)
                    os.rmdir(self._lock_name, dir_fd=self.dir_fd)
                self._write_record(fd, 0, 0)  # released: the next holder finds nothing to tidy
            else:
                log.warning("lock %s was taken by another process while held", self.lock_dir)
        except FileNotFoundError:
            log.warning("lock %s was removed by another process while held", self.lock_dir)
        finally:
            # a record left naming a directory (inode, ctime) that is gone never matches a
            # lock directory made later
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
                self._close_dirs()
                if kept >= 0:
                    os.close(kept)  # the directory is freed here, outside every lock

    def _keep_lock_dir(self) -> bool:
        """Release by renaming the lock directory back to its private name, for the next
        holder (`keep_lock_dir`); False if it was not kept (then it is to be removed). The
        rename, like the ``rmdir`` it stands for, makes ``X.lock`` go in one step."""
        if not self.keep_lock_dir:
            return False
        try:
            rename_noreplace(self.dir_fd, self._lock_name, self.dir_fd, self._private)
        except (FileExistsError, NotImplementedError):
            return False
        return True

    def owns_lock_dir(self) -> bool:
        """Whether ``X.lock`` is still the directory this guard made."""
        st = self._lstat(self._lock_name)
        if st is None:
            return False
        return self._made == (st.st_ino, st.st_ctime_ns) and stat.S_ISDIR(st.st_mode)

    def refresh(self) -> None:
        """Touch the held lock directory (so nobody takes it for stale), and remember its new
        ctime: touching changes it, and `owns_lock_dir` knows the directory by (inode, ctime)."""
        fd = self._fd
        before = self._lstat(self._lock_name) if fd is not None else None
        if fd is None or before is None or self._made is None or before.st_ino != self._made[0]:
            return
        try:
            safefs.utime(self.lock_dir)
        except (FileNotFoundError, safefs.LinkRefused):
            log.warning("held lock %s disappeared (taken for stale?)", self.lock_dir)
            return
        st = self._lstat(self._lock_name)
        if st is not None and self._made is not None and st.st_ino == self._made[0]:
            self._made = (st.st_ino, st.st_ctime_ns)
            self._write_record(fd, st.st_ino, st.st_ctime_ns)

    def note(self) -> bytes:
        """What the last holder that wrote a note said of the target (b"": nothing). Kept in
        the flock file, beside the holder's record; only meaningful while the lock is held."""
        fd = self._fd
        if fd is None:
            raise RuntimeError(f"{self.target} is not locked by this FileGuard")
        try:
            return os.pread(fd, _NOTE_BYTES, _RECORD_BYTES).rstrip()
        except OSError:
            return b""

    def set_note(self, note: bytes) -> None:
        """Leave `note` (at most `_NOTE_BYTES`, no trailing spaces) for the next holder."""
        fd = self._fd
        if fd is None:
            raise RuntimeError(f"{self.target} is not locked by this FileGuard")
        if len(note) > _NOTE_BYTES:
            raise ValueError(f"a lock note of {len(note)} bytes; at most {_NOTE_BYTES}")
        os.pwrite(fd, note.ljust(_NOTE_BYTES), _RECORD_BYTES)

    def confirm(self) -> os.stat_result | None:
        """Raise `LockLost` unless the lock is still ours and the target unchanged since this
        holder last read or wrote it (call right before committing a write). Returns the
        target's own status as just checked (None: there is no target), for the write."""
        if not self.owns_lock_dir():
            raise LockLost(
                f"the lock on {self.target} was taken by another process while this one held it "
                "(it was paused past the 10 s stale window); nothing was written"
            )
        st = self._lstat(self._name)
        signature = None if st is None or stat.S_ISLNK(st.st_mode) else signature_of(st)
        if signature != self._expected:
            raise LockLost(
                f"{self.target} was rewritten by another process while this one held its lock; "
                "nothing was written"
            )
        return st

    def written(self) -> None:
        """This holder has just replaced the target: remember how it looks now."""
        self._expected = self._signature()

    # the directories, and names in them

    @property
    def flock_path(self) -> Path:
        return flock_path_for(self.target)

    def _open_dirs(self) -> None:
        self._dir_fd = safefs.open_dir(self._parent)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:  # in the directory just opened link-free; a link there is refused (ELOOP)
                self._locks_fd = os.open(FLOCK_DIR, flags, dir_fd=self._dir_fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(FLOCK_DIR, 0o755, dir_fd=self._dir_fd)
                self._locks_fd = os.open(FLOCK_DIR, flags, dir_fd=self._dir_fd)
        except OSError as exc:
            # a link there: ELOOP, or ENOTDIR (O_DIRECTORY is checked before O_NOFOLLOW)
            link = exc.errno in (errno.ELOOP, errno.ENOTDIR) and self._is_link(FLOCK_DIR)
            self._close_dirs()
            if link:
                raise safefs.LinkRefused(self.flock_path.parent) from None
            raise
        except BaseException:
            self._close_dirs()
            raise

    def _is_link(self, name: str) -> bool:
        st = self._lstat(name)
        return st is not None and stat.S_ISLNK(st.st_mode)

    def _close_dirs(self) -> None:
        for fd in (self._dir_fd, self._locks_fd):
            if fd is not None:
                os.close(fd)
        self._dir_fd = self._locks_fd = None

    def _lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _signature(self) -> Signature | None:
        st = self._lstat(self._name)
        if st is None or stat.S_ISLNK(st.st_mode):
            return None
        return signature_of(st)

    def _open_flock_file(self) -> int:
        """swarm's own lock file of the target, made if missing. One that is not a regular
        file (a FIFO, a socket, a directory: planted, as swarm makes only files here) is moved
        aside and made again: nobody can hold a lock through it, as no record can be read from
        it, so no holder is cut off."""
        locks_fd, name = self._locks_fd, self._name + ".flock"
        assert locks_fd is not None, "the lock's directories are open"
        flags = os.O_RDWR | os.O_CREAT
        try:
            return safefs.open_at(locks_fd, name, flags, shown=self.flock_path)
        except safefs.NotRegularFile:
            self._set_aside(name)
        return safefs.open_at(locks_fd, name, flags, shown=self.flock_path)

    def _set_aside(self, name: str) -> None:
        aside = f".refused-{name}-{time.time_ns()}"
        with contextlib.suppress(FileNotFoundError):  # another process did it first
            os.rename(name, aside, src_dir_fd=self._locks_fd, dst_dir_fd=self._locks_fd)
            log.error(
                "%s was not a regular file (planted?); moved it to %s and made it again",
                self.flock_path,
                aside,
            )

    def _take_flock(
        self,
        fd: int,
        deadline: float,
        done: Callable[[], bool] | None,
        pause: Callable[[float], None] = time.sleep,
    ) -> bool:
        """Wait for the kernel lock; False if `done()` turned true first (not taken).

        A plain waiter blocks in the kernel and is woken the moment the holder lets go
        (`protocols.fs.flock_wait`). A writer waiting to be carried by a group commit (`done`
        given) instead looks every so often, first after about one commit's time: it usually
        finds its entry committed without ever taking the lock (taking it to find that out
        costs the next committer more than the sleep). Its waits are `pause`, which its
        committer's ring cuts short (`protocols.inbox.spool_wake`)."""
        if done is None:
            if not wait_for_flock(fd, deadline):
                raise self._timed_out()
            return True
        delay = _COMMIT_S
        if _try_flock(fd):  # let go of while the writer was spooling
            return True
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out()
            pause(min(delay * (0.5 + jitter()), remaining))
            delay = min(delay * 1.5, _MAX_CARRIED_BACKOFF_S)
            # carried? first: after a ring it was, and the lock may be free by now, but taking
            # it only to find that out would hold up the next committer
            if done():
                return False
            if _try_flock(fd):
                return True

    def _timed_out(self) -> LockTimeout:
        return LockTimeout(
            f"could not lock {self.target} within {self.timeout:g} s "
            "(another swarm process holds it); nothing was written"
        )

    def _make_lock_dir(self, fd: int, deadline: float) -> None:
        # read before our own attempts overwrite it: it may name a dead holder's directory
        previous = _read_record(fd)
        self.after_unclean_release = previous is not None and previous[2] != 0
        delay = 0.001
        while True:
            if self._lstat(self._lock_name) is None and self._try_make_lock_dir(fd):
                return
            if self._remove_if_abandoned(fd, previous):
                continue  # removed: try to take it at once
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockTimeout(
                    f"could not lock {self.target}: {self.lock_dir} has been held for "
                    f"{self.timeout:g} s (by Claude Code or a hung process); nothing was written"
                )
            time.sleep(min(delay * (0.5 + jitter()), remaining))
            delay = min(delay * 2, 0.05)

    def _try_make_lock_dir(self, fd: int) -> bool:
        """Make Claude Code's lock directory, recorded as ours before anyone can see it.

        The directory is made under a hidden private name beside the target (``.X.lock.new``),
        or taken there as the last holder kept it (`keep_lock_dir`), its inode recorded in the
        flock file, and only then renamed into place without replacing anything
        (``renameat2(RENAME_NOREPLACE)``). A process killed at any point leaves either
        no lock directory or one the record names, so the next swarm process never has to wait
        out the stale window for it. (We hold the flock, so the private name is ours alone; one
        left by a killed process is taken, or removed if it is not an empty directory.) The
        rename stays inside the directory: a rename between directories takes the file system's
        one rename lock, which every writer then queues on.
        """
        here = self.dir_fd
        try:
            os.mkdir(self._private, 0o755, dir_fd=here)
        except FileExistsError:  # kept by the last holder, or left by a killed one
            if not self._reuse_private(here):
                self._clear_private(here)
                os.mkdir(self._private, 0o755, dir_fd=here)
        try:
            private = os.stat(self._private, dir_fd=here, follow_symlinks=False)
            self._write_record(fd, private.st_ino, 0)
            rename_noreplace(here, self._private, here, self._lock_name)
        except FileExistsError:
            self._write_record(fd, 0, 0)  # before the rmdir, so the inode is never reused
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(self._private, dir_fd=here)
            return False
        except NotImplementedError:  # no renameat2 here: the plain protocol
            self._write_record(fd, 0, 0)
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(self._private, dir_fd=here)
            try:
                os.mkdir(self._lock_name, 0o755, dir_fd=here)
            except FileExistsError:
                return False
        st = os.stat(self._lock_name, dir_fd=here, follow_symlinks=False)
        self._made = (st.st_ino, st.st_ctime_ns)
        self._write_record(fd, st.st_ino, st.st_ctime_ns)
        return True

    def _reuse_private(self, here: int) -> bool:
        """Take the directory at the private name as this hold's lock directory if it is an
        empty one (kept by the last holder: no inode made and freed per hold, which on a file
        system like this project's costs more than all the rest of a lock). Its time is set to
        now first: Claude Code judges a lock directory by its mtime, and must see a fresh one."""
        try:
            fd = os.open(self._private, _DIR_FLAGS, dir_fd=here)
        except OSError:  # a file or a link planted there (`_clear_private` deals with it)
            return False
        try:
            if os.listdir(fd):
                return False  # not ours: `_clear_private` refuses it by name
            os.utime(fd)
        finally:
            os.close(fd)
        return True

    def _clear_private(self, here: int) -> None:
        """Remove what is at the private name: ours to use while we hold the flock. An empty
        directory left by a killed swarm process is removed; a file or a link planted there is
        unlinked (never followed); a directory with things in it is refused by name."""
        try:
            os.rmdir(self._private, dir_fd=here)
        except FileNotFoundError:
            pass
        except NotADirectoryError:  # a file or a symbolic link: unlink removes the link itself
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._private, dir_fd=here)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise LockTimeout(
                    f"could not lock {self.target}: {self.target.parent / self._private} is a "
                    "directory with files in it, where swarm makes its lock directory; nothing "
                    "was written (look at what is inside, then remove it)"
                ) from None
            raise

    def _remove_if_abandoned(self, fd: int, previous: Record | None) -> bool:
        """Remove the lock directory if it is stale or left by a dead swarm process. True if
        it is gone now; raises `LockTimeout` at once for something that is no lock at all."""
        st = self._lstat(self._lock_name)
        if st is None:
            return True
        if not stat.S_ISDIR(st.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a file"
            raise LockTimeout(
                f"could not lock {self.target}: {self.lock_dir} is {kind}, not a lock directory; "
                "nothing was written (remove it: no process holds it)"
            )
        stale = st.st_mtime < self._clock() - self.stale
        if not stale and not _left_by_dead_swarm(previous, st):
            return False
        self._write_record(fd, 0, 0)  # the record must not outlive the directory it names
        try:
            os.rmdir(self._lock_name, dir_fd=self.dir_fd)
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise LockTimeout(
                    f"could not lock {self.target}: {self.lock_dir} is a stale lock directory "
                    "with files in it, which no lock holder ever makes; nothing was written "
                    "(look at what is inside, then remove it)"
                ) from None
            raise
        log.info("removed abandoned lock %s", self.lock_dir)
        return True

    def _write_record(self, fd: int, ino: int, ctime_ns: int) -> None:
        """``pid start inode ctime`` of the lock directory we are making; fixed width, so an
        overwrite needs no (slow, journalled) truncate. Inode 0 means no directory."""
        record = f"{os.getpid()} {_my_start()} {ino} {ctime_ns}".ljust(_RECORD_BYTES).encode()
        os.pwrite(fd, record, 0)


Record = tuple[int, int, int, int]  # pid, start (0: unknown), inode, ctime_ns


@functools.cache
def _my_start() -> int:
    return start_time(os.getpid()) or 0


def open_to_keep(name: str, dir_fd: int) -> int:
    """`name` in `dir_fd` opened read-only (-1 if it cannot be), to be closed once the locks are
    let go. While it is open, removing or replacing `name` does not free its inode: the kernel
    frees it (truncating its blocks; on a file system mounted with ``discard``, waiting for the
    device) at the close, instead of inside the removal or the rename, where it holds the
    directory's lock (and, for a rename between directories, the file system's rename lock),
    which every other writer in the directory then waits for."""
    try:
        return os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except OSError:
        return -1


def rename_noreplace(src_fd: int, source: str, dst_fd: int, destination: str) -> None:
    """Rename `source` (in directory `src_fd`) to `destination` (in `dst_fd`) unless something
    is there (FileExistsError). NotImplementedError where renameat2 is missing."""
    safefs.rename_noreplace_at(src_fd, source, dst_fd, destination)


def _read_record(fd: int) -> Record | None:
    """The ``pid start inode ctime`` a swarm process wrote into the flock file, if any (a
    record of an older swarm, ``pid inode ctime``, reads with start 0)."""
    try:
        fields = [int(f) for f in os.pread(fd, _RECORD_BYTES, 0).split()]
    except (OSError, ValueError):
        return None
    if len(fields) == 3:
        fields.insert(1, 0)
    if len(fields) != 4:
        return None
    pid, start, ino, ctime_ns = fields
    return pid, start, ino, ctime_ns


def _left_by_dead_swarm(record: Record | None, st: os.stat_result) -> bool:
    """True if `record` names the lock directory `st` and its maker has died (its pid is gone,
    or now belongs to a process that started later)."""
    if record is None:
        return False
    pid, start, ino, ctime_ns = record
    if ino != st.st_ino or ctime_ns not in (0, st.st_ctime_ns):
        return False  # ctime 0: killed between the rename and writing the ctime down
    return not ProcessIdentity(pid, start or None).alive()


_HELD: dict[str, FileGuard] = {}
_HELD_GUARD = threading.Lock()


def _register(guard: FileGuard) -> None:
    with _HELD_GUARD:
        _HELD[guard._key] = guard


def _unregister(guard: FileGuard) -> None:
    with _HELD_GUARD:
        if _HELD.get(guard._key) is guard:
            del _HELD[guard._key]


def held_guard(target: Path) -> FileGuard | None:
    """The guard through which this process holds `target`'s lock, if it does."""
    with _HELD_GUARD:
        return _HELD.get(str(target))


def note_written(target: Path) -> None:
    """After this process replaced `target` under its lock."""
    guard = held_guard(target)
    if guard is not None:
        guard.written()


def redo_if_lock_lost(operation: Callable[P, R]) -> Callable[P, R]:
    """Run a locked read-modify-write again (from a fresh read) when it raised `LockLost`:
    nothing of the lost attempt was committed, so doing it again is the whole operation."""

    @functools.wraps(operation)
    def redo(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, REDO_ATTEMPTS + 1):
            try:
                return operation(*args, **kwargs)
            except LockLost as exc:
                if attempt == REDO_ATTEMPTS:
                    raise
                log.warning("%s; doing it again (attempt %d)", exc, attempt + 1)
        raise AssertionError("unreachable")

    return redo


class _Refresher:
    """One daemon thread that keeps the mtime of long-held lock directories fresh. It runs only
    while some lock is held (an idle process has no thread waking it), and sleeps until the
    oldest hold is due."""

    def __init__(self, interval: float = REFRESH_S) -> None:
        self.interval = interval
        self._held: dict[FileGuard, float] = {}
        self._guard = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, guard: FileGuard) -> None:
        with self._guard:
            self._held[guard] = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="swarm-lock-refresher", daemon=True
                )
                self._thread.start()

    def discard(self, guard: FileGuard) -> None:
        with self._guard:
            self._held.pop(guard, None)

    def _run(self) -> None:
        with self._guard:  # held while refreshing, so a released lock is never touched
            while self._held:
                due = min(self._held.values()) + self.interval - time.monotonic()
                if due > 0:
                    self._guard.wait(due)
                    continue
                now = time.monotonic()
                for guard, touched in list(self._held.items()):
                    if now - touched >= self.interval:
                        self._held[guard] = now
                        guard.refresh()
            self._thread = None


_REFRESHER: _Refresher | None = None
_REFRESHER_GUARD = threading.Lock()


def _refresher() -> _Refresher:
    global _REFRESHER
    with _REFRESHER_GUARD:
        if _REFRESHER is None:
            _REFRESHER = _Refresher()
        return _REFRESHER
