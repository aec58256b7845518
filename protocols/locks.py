"""File locks that exclude both Claude Code's writers and swarm's own processes (spec section 6).

`FileGuard` locks one file ``X``:

1. a `filelock` (flock) lock on the hidden file ``.X.flock`` beside it, so swarm processes queue in
   the kernel and a dead holder's lock is released at once;
2. the proper-lockfile lock Claude Code uses: the *directory* ``X.lock`` made with `mkdir`. A lock
   directory whose mtime is older than 10 s is stale and is removed; a held lock's mtime is
   refreshed every 5 s by one background thread, so long holds are not taken for stale.

While a swarm process holds ``X.lock`` it records ``pid inode ctime`` in ``.X.flock``. The next
swarm process (which then holds the flock) can tell that a leftover ``X.lock`` belongs to a dead
swarm process and remove it at once instead of waiting out the stale window. Any other leftover
lock directory (Claude Code's) is waited for and, once stale, removed.

A lock that cannot be taken before the deadline raises `LockTimeout`: the caller's write does not
happen and the caller is told. Nothing is silently dropped.
"""

from __future__ import annotations

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

log = logging.getLogger(__name__)

STALE_S = 10.0
REFRESH_S = 5.0
DEFAULT_TIMEOUT_S = 30.0


def lock_dir_for(target: Path) -> Path:
    """Claude Code's lock path for `target`: the directory ``<target>.lock``."""
    return target.with_name(target.name + ".lock")


def flock_path_for(target: Path) -> Path:
    return target.with_name(f".{target.name}.flock")


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
        self.lock_dir = lock_dir_for(self.target)
        self.timeout = timeout
        self.stale = stale
        self._clock = clock
        self._flock = filelock.FileLock(
            flock_path_for(self.target),
            poll_interval=0.001,
            thread_local=False,
            preserve_lock_file=True,
        )
        self._held = False

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
        return self._held

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        self.target.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._flock.acquire(timeout=self.timeout)
        except filelock.Timeout:
            raise LockTimeout(
                f"could not lock {self.target} within {self.timeout:.0f} s "
                "(another swarm process holds it); nothing was written"
            ) from None
        try:
            self._make_lock_dir(deadline)
        except BaseException:
            self._flock.release()
            raise
        self._held = True
        _refresher().add(self.lock_dir)

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        _refresher().discard(self.lock_dir)
        try:
            os.rmdir(self.lock_dir)
        except FileNotFoundError:
            log.warning("lock %s was removed by another process while held", self.lock_dir)
        finally:
            self._write_record("")
            self._flock.release()

    def _make_lock_dir(self, deadline: float) -> None:
        delay = 0.002
        while True:
            try:
                os.mkdir(self.lock_dir)
            except FileExistsError:
                pass
            else:
                self._record_ownership()
                return
            if self._remove_if_abandoned():
                continue
            if time.monotonic() >= deadline:
                raise LockTimeout(
                    f"could not lock {self.target}: {self.lock_dir} has been held for "
                    f"{self.timeout:.0f} s (by Claude Code or a hung process); nothing was written"
                )
            time.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)

    def _remove_if_abandoned(self) -> bool:
        """Remove the lock directory if it is stale or left by a dead swarm process."""
        try:
            st = os.stat(self.lock_dir)
        except FileNotFoundError:
            return True
        abandoned = st.st_mtime < self._clock() - self.stale or self._left_by_dead_swarm(st)
        if not abandoned:
            return False
        try:
            os.rmdir(self.lock_dir)
            log.info("removed abandoned lock %s", self.lock_dir)
        except (FileNotFoundError, OSError):
            pass
        return True

    def _left_by_dead_swarm(self, st: os.stat_result) -> bool:
        try:
            fields = Path(self._flock.lock_file).read_text().split()
            pid, ino, ctime_ns = (int(f) for f in fields)
        except (OSError, ValueError):
            return False
        if (ino, ctime_ns) != (st.st_ino, st.st_ctime_ns):
            return False
        return not _alive(pid)

    def _record_ownership(self) -> None:
        try:
            st = os.stat(self.lock_dir)
        except FileNotFoundError:
            return
        self._write_record(f"{os.getpid()} {st.st_ino} {st.st_ctime_ns}")

    def _write_record(self, text: str) -> None:
        try:
            fd = os.open(self._flock.lock_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError:
            return
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Refresher:
    """One daemon thread that keeps the mtime of long-held lock directories fresh."""

    def __init__(self, interval: float = REFRESH_S) -> None:
        self.interval = interval
        self._held: dict[Path, float] = {}
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, lock_dir: Path) -> None:
        with self._guard:
            self._held[lock_dir] = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="swarm-lock-refresher", daemon=True
                )
                self._thread.start()

    def discard(self, lock_dir: Path) -> None:
        with self._guard:
            self._held.pop(lock_dir, None)

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
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
