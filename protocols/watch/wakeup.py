"""Waking a reader when its inbox changes: inotify, with a safety-net rescan, or stat polling.

`InboxWatcher` watches inbox files by name (each file itself, through the process's one inotify
instance, `protocols.watch.inotify.Notifier`: a write to another member's inbox does not wake this
reader) and directories for any file written in them (a teammate watches the task board's
directory this way), and sets an event when one changes. The kernel reports the events it had
to drop, so nothing depends on a rescan; waiters still look for themselves every `rescan_s`
seconds (re-arming a watch whose directory was deleted and made again).

When inotify cannot be had (the user's ``fs.inotify.max_user_instances``, 128 by default, is
used up: one per process, so more than about 120 swarm processes of one user on a machine, or
``max_user_watches``), the watcher says so once (`degraded` holds why) and hangs a doorbell for
each watched file and directory (`protocols.fs.doorbell`): swarm's writers ring it, so it still
wakes at once when swarm writes, and every 2 s (4 x `poll_s`) it compares each watched file's
and directory's (inode, size, mtime) with what it saw, for writers that ring no bell (Claude
Code). Where no doorbell can be made it polls that way every `poll_s` seconds (0.5). It tries
to get an instance again every `RETRY_INOTIFY_S`. Watched directories are made, and checked
not to be links, through `protocols.fs.safefs`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from protocols.fs import safefs
from protocols.fs.doorbell import ANY, Doorbell, wait_any
from protocols.watch.inotify import DIR_EVENTS, IN_ISDIR, Notifier

DEFAULT_RESCAN_S = 0.25
DEGRADED_POLL_S = 0.5
BELL_POLL_FACTOR = 4  # with doorbells, files are looked at every 4 x poll_s (2 s)
RETRY_INOTIFY_S = 30.0
log = logging.getLogger(__name__)

Signature = tuple[int, int, int] | None


def _signature(path: Path) -> Signature:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class InboxWatcher:
    """Context manager: ``with InboxWatcher(path) as w: w.wait(1.0)``.

    `paths` are files to watch by name; `directories` are watched for any file written in them
    (a teammate watches the task board's directory this way), and for their subdirectories
    made or removed and their hidden names unless `subdirectories` is False (the board's lock
    directories, made under hidden names, and the hidden temporary files of every write come
    and go with every claim: no news for an idle teammate, whom the write's final rename wakes;
    they are dropped by the notifier before they are decoded).
    """

    def __init__(
        self,
        *paths: Path,
        directories: tuple[Path, ...] = (),
        rescan_s: float = DEFAULT_RESCAN_S,
        poll_s: float = DEGRADED_POLL_S,
        subdirectories: bool = True,
        changed: threading.Event | None = None,
    ) -> None:
        """`changed` is the event set on a change (a caller's own, to be woken with others)."""
        if not paths and not directories:
            raise ValueError("InboxWatcher needs at least one path or directory")
        self.paths = [Path(p) for p in paths]
        self.directories = [Path(d) for d in directories]
        self.rescan_s = rescan_s
        self.poll_s = poll_s
        self.subdirectories = subdirectories
        self.changed = threading.Event() if changed is None else changed
        self.degraded: str | None = None  # why inotify is not used (None: it is)
        self._notifier: Notifier | None = None
        self._handles: list[int] = []
        self._touched: set[Path] = set()  # watched directories with events not yet taken
        self._names: dict[Path, set[str] | None] = {}  # names changed there (None: unknown)
        self._seen: dict[Path, Signature] = {}  # polling: what each path looked like
        self._bells: list[Doorbell] = []  # polling: rung by swarm's writers
        self._retry_at = 0.0

    def start(self) -> InboxWatcher:
        for directory in {p.parent for p in self.paths} | set(self.directories):
            safefs.makedirs(directory)  # refuses a link in place of a watched directory
        try:
            self._subscribe()
        except OSError as exc:  # EMFILE / ENOSPC: inotify instances or watches used up
            self._degrade(exc)
        return self

    def _subscribe(self) -> None:
        notifier = Notifier.shared()
        try:
            for path in self.paths:
                callback = self._callback(path.parent, {path.name})
                self._handles.append(notifier.watch_file(str(path), callback))
            for directory in self.directories:
                callback = self._callback(directory, None)
                events = DIR_EVENTS if self.subdirectories else DIR_EVENTS & ~IN_ISDIR
                self._handles.append(
                    notifier.watch_dir(str(directory), callback, events, hidden=self.subdirectories)
                )
        except BaseException:
            self._unsubscribe(notifier)
            raise
        self._notifier = notifier

    def _callback(self, directory: Path, names: set[str] | None) -> Callable[[str | None], None]:
        def changed(name: str | None) -> None:
            if names is not None and name is not None and name not in names:
                return
            self._note(directory, name)

        return changed

    def _note(self, directory: Path, name: str | None) -> None:
        if name is None:
            self._names[directory] = None
        else:
            known = self._names.setdefault(directory, set())
            if known is not None:
                known.add(name)
        self._touched.add(directory)
        self.changed.set()

    def _unsubscribe(self, notifier: Notifier) -> None:
        for handle in self._handles:
            notifier.unwatch(handle)
        self._handles.clear()

    def _degrade(self, exc: OSError) -> None:
        self._bells = self._hang_bells()
        if self._bells:
            how = (
                f"woken by swarm's writes through doorbells, and checking every "
                f"{self.poll_s * BELL_POLL_FACTOR:g} s for other writers (Claude Code)"
            )
        else:
            how = f"checking every {self.poll_s:g} s instead"
        self.degraded = (
            f"inotify is unavailable ({exc.strerror or exc}); {how} (raise "
            "fs.inotify.max_user_instances / max_user_watches for millisecond wake-ups on "
            "every write)"
        )
        log.warning("%s", self.degraded)
        self._seen = self._signatures()
        self._retry_at = time.monotonic() + RETRY_INOTIFY_S

    def _hang_bells(self) -> list[Doorbell]:
        """A doorbell for each watched file and directory (`protocols.fs.doorbell`); none if
        one cannot be made."""
        bells = [Doorbell(p.parent, p.name) for p in self.paths]
        bells += [Doorbell(d, ANY) for d in self.directories]
        try:
            for bell in bells:
                bell.open()
        except OSError as exc:
            log.warning("no doorbells (%s): polling every %g s", exc, self.poll_s)
            self._take_bells_down(bells)
            return []
        return bells

    @staticmethod
    def _take_bells_down(bells: list[Doorbell]) -> None:
        for bell in bells:
            bell.close()

    @property
    def belled(self) -> bool:
        """Without inotify, but woken by doorbells when swarm writes."""
        return bool(self._bells)

    def bell_fds(self) -> list[int]:
        """Its doorbells' descriptors (none with inotify), for a caller waiting on more than
        this watcher: when one is readable, `wait(0)` takes the news."""
        return [bell.fileno() for bell in self._bells]

    @property
    def look_every_s(self) -> float | None:
        """Without inotify, how often `wait(0)` must be called to see what rings no doorbell;
        None with inotify."""
        if self._notifier is not None or self.degraded is None:
            return None
        return self.poll_s * (BELL_POLL_FACTOR if self._bells else 1)

    def stop(self) -> None:
        if self._notifier is not None:
            self._unsubscribe(self._notifier)
            self._notifier = None
        self._take_bells_down(self._bells)
        self._bells = []

    def __enter__(self) -> InboxWatcher:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget earlier changes; call before looking at the file, then `wait`."""
        self.changed.clear()

    def take_touched(self, directory: Path) -> bool:
        """Whether `directory` had an event since the last call (and forget it)."""
        try:
            self._touched.remove(Path(directory))
        except KeyError:
            return False
        return True

    def take_changed(self, directory: Path) -> set[str] | None:
        """The names written in `directory` since the last call (and forget them); None when
        that is not known (events were lost, or the watcher polls): look at everything."""
        if self._notifier is None:
            return None
        return self._names.pop(Path(directory), set())

    def wait(self, timeout: float) -> bool:
        """Block until a watched file changes or `min(timeout, rescan_s)` passes. True on a
        change."""
        timeout = max(0.0, min(timeout, self.rescan_s))
        if self._notifier is None and self.degraded is not None:
            return self._poll(timeout)
        if self.changed.wait(timeout):
            return True
        if self._notifier is not None:
            self._notifier.repair()
        return False

    # without inotify

    def _signatures(self) -> dict[Path, Signature]:
        return {p: _signature(p) for p in [*self.paths, *self.directories]}

    def _poll(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        every = self.poll_s * (BELL_POLL_FACTOR if self._bells else 1)
        while True:
            wait_s = max(0.0, min(every, deadline - time.monotonic()))
            if self._bells:
                rung = wait_any(self._bells, wait_s)
                for bell in rung:
                    self._note(bell.directory, None if bell.key == ANY else bell.key)
                if rung:
                    self._seen = self._signatures()
                    return True
            elif self.changed.wait(wait_s):
                return True
            now = self._signatures()
            moved = [p for p, s in now.items() if self._seen.get(p) != s]
            self._seen = now
            for path in moved:
                self._note(path if path in self.directories else path.parent, None)
            if moved:
                return True
            if time.monotonic() >= self._retry_at:
                self._retry_inotify()
                if self._notifier is not None:
                    return True  # look once more: something may have changed meanwhile
            if time.monotonic() >= deadline:
                return False

    def _retry_inotify(self) -> None:
        self._retry_at = time.monotonic() + RETRY_INOTIFY_S
        try:
            self._subscribe()
        except OSError:
            return
        log.warning("inotify is available again: millisecond wake-ups are back")
        self.degraded = None
        self._take_bells_down(self._bells)
        self._bells = []
