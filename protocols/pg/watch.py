"""`PgWatcher`: `protocols.watch.wakeup.InboxWatcher`'s methods on a PostgreSQL team's channel.

It wakes on a notification for one of its members' inboxes, or for the task board (a change of any
task: `protocols.pg.notify.TASKS`), or (`everything`) on any notification of the team, on a change
in one of its local `directories` (a budget file this machine writes: watched with inotify through
an `InboxWatcher`), when another thread of this process sets `changed` (a pipe of its own ends the
wait, with no round trip to the server), and at least every `rescan_s` seconds whatever it heard, as
the file watcher's rescan does. Notifications that come while nobody waits queue on its connection,
so the usual ``clear(); look(); wait()`` loses none. Where no inotify instance is left, the local
directories' doorbells (`protocols.fs.doorbell`) wake it, and it looks at them every few seconds
as the file watcher does, without asking the server.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from protocols.pg.database import Database
from protocols.pg.notify import TASKS, Listener
from protocols.watch.wakeup import InboxWatcher

DEFAULT_RESCAN_S = 30.0


class PgWatcher:
    """Context manager: ``with store.watcher(["alice"], board=True) as w: w.wait(1.0)``."""

    def __init__(
        self,
        db: Database,
        team: str,
        inboxes: Sequence[str] = (),
        board: bool = False,
        rescan_s: float | None = None,
        everything: bool = False,
        directories: Sequence[Path] = (),
        subdirectories: bool = True,
    ) -> None:
        self.db = db
        self.team = team
        names = set(inboxes) | ({TASKS} if board or everything else set())
        self.names: set[str] | None = None if everything else names  # None: every notification
        self.rescan_s = DEFAULT_RESCAN_S if rescan_s is None else rescan_s
        self.changed = _Waking()
        self._listener: Listener | None = None
        self._board_touched = False
        self._local = (
            InboxWatcher(
                directories=tuple(Path(d) for d in directories),
                subdirectories=subdirectories,
                changed=self.changed,
            )
            if directories
            else None
        )

    def start(self) -> PgWatcher:
        if self._listener is None:
            self.changed.open()
            if self._local is not None:
                self._local.start()
            self._listener = Listener(self.db, self.team)
        return self

    @property
    def listener(self) -> Listener:
        """Its listening connection (`PgMailbox.wait` and `await_message` take it)."""
        self.start()
        assert self._listener is not None
        return self._listener

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._local is not None:
            self._local.stop()
        self.changed.close()
        self.db.close()

    @property
    def degraded(self) -> str | None:
        """Why the local directories are not watched with inotify (None: they are, or none)."""
        return self._local.degraded if self._local is not None else None

    @property
    def belled(self) -> bool:
        """Without inotify, its local directories are woken by doorbells when swarm writes."""
        return self._local.belled if self._local is not None else False

    def __enter__(self) -> PgWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget earlier changes; call before looking, then `wait`."""
        self.changed.clear()

    def take_touched(self, directory: Path) -> bool:
        """Whether the task board (or a watched local directory) changed since the last call
        (and forget it)."""
        if self._local is not None and Path(directory) in self._local.directories:
            return self._local.take_touched(directory)
        touched, self._board_touched = self._board_touched, False
        return touched

    def take_changed(self, directory: Path) -> set[str] | None:
        return None  # which tasks is not known: look at the board

    def wait(self, timeout: float) -> bool:
        """Block until a notification for a watched name, a local change, `changed` set from
        another thread, or `min(timeout, rescan_s)` passes. True on news (or a lost connection
        made again: look)."""
        if self.changed.is_set():  # woken already (`changed.set()` from another thread)
            return True
        deadline = time.monotonic() + max(0.0, min(timeout, self.rescan_s))
        while True:
            local = self._local
            every = local.look_every_s if local is not None else None
            left = deadline - time.monotonic()
            own = self.changed.fileno()
            fds = ([] if own is None else [own]) + (local.bell_fds() if local is not None else [])
            heard = self.listener.heard(self.names, max(0.0, min(left, every or left)), fds)
            self.changed.drain()
            if heard is None or TASKS in heard:
                self._board_touched = True
            if heard is None or heard:
                threading.Event.set(self.changed)
                return True
            if every is not None and local is not None and local.wait(0):
                return True  # a doorbell, or a local file that changed without one
            if self.changed.is_set():
                return True
            if time.monotonic() >= deadline:
                return False


class _Waking(threading.Event):
    """`changed` of a `PgWatcher`: setting it (from any thread, or the local directories'
    inotify reader) also writes a byte into a pipe that ends a wait in progress."""

    def __init__(self) -> None:
        super().__init__()
        self._read_fd: int | None = None
        self._write_fd: int | None = None
        self._fds = threading.Lock()  # a late `set` never writes into a closed (reused) fd

    def open(self) -> None:
        if self._read_fd is None:
            self._read_fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def close(self) -> None:
        with self._fds:
            for fd in (self._read_fd, self._write_fd):
                if fd is not None:
                    os.close(fd)
            self._read_fd = self._write_fd = None

    def fileno(self) -> int | None:
        return self._read_fd

    def drain(self) -> None:
        if self._read_fd is not None:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._read_fd, 512):
                    pass

    def set(self) -> None:
        super().set()
        with self._fds:
            if self._write_fd is not None:
                with contextlib.suppress(OSError):  # full (BlockingIOError): one is pending
                    os.write(self._write_fd, b"!")
