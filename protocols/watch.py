"""Waking a reader when its inbox changes: watchdog (inotify) plus a periodic rescan.

`InboxWatcher` watches the directory of one inbox file (the file itself is replaced on every
write, so its inode changes) and sets an event when anything touches that file name: a rename
onto it (swarm's atomic writes), a modification or close-after-write (Claude Code's in-place
writes). inotify can drop events when its queue overflows, so waiters also wake every
`rescan_s` seconds and look for themselves; nothing depends on an event arriving.

When inotify cannot be had (the user's ``fs.inotify.max_user_instances`` or ``max_user_watches``
is used up by other processes), the watcher says so once (`degraded` holds why) and runs on its
rescan alone: slower to wake, never dead. Watched directories are made, and checked not to be
links, through `protocols.safefs`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from protocols import safefs

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

DEFAULT_RESCAN_S = 0.25
log = logging.getLogger(__name__)


class _Handler:
    """Sets `changed` for events on `names` (or on any file, when `names` is None), and notes
    the directory in `touched`. watchdog calls `dispatch` for each event: a plain class, so
    that importing this module does not load watchdog (commands that never wait stay quick)."""

    def __init__(
        self,
        directory: Path,
        names: set[str] | None,
        changed: threading.Event,
        touched: set[Path],
    ) -> None:
        self.directory = directory
        self.names = names
        self.changed = changed
        self.touched = touched

    def dispatch(self, event: Any) -> None:
        if self.names is None:
            self.touched.add(self.directory)
            self.changed.set()
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path and os.path.basename(os.fsdecode(path)) in self.names:
                self.touched.add(self.directory)
                self.changed.set()
                return


class InboxWatcher:
    """Context manager: ``with InboxWatcher(path) as w: w.wait(1.0)``.

    `paths` are files to watch by name; `directories` are watched for any file written in them
    (a teammate watches the task board's directory this way).
    """

    def __init__(
        self,
        *paths: Path,
        directories: tuple[Path, ...] = (),
        rescan_s: float = DEFAULT_RESCAN_S,
    ) -> None:
        if not paths and not directories:
            raise ValueError("InboxWatcher needs at least one path or directory")
        self.paths = [Path(p) for p in paths]
        self.directories = [Path(d) for d in directories]
        self.rescan_s = rescan_s
        self.changed = threading.Event()
        self._observer: BaseObserver | None = None
        self.degraded: str | None = None  # why inotify is not used (None: it is)
        self._touched: set[Path] = set()  # watched directories with events not yet taken

    def start(self) -> InboxWatcher:
        watched = self._watched()
        for directory in watched:
            safefs.makedirs(directory)  # refuses a link in place of a watched directory
        try:
            self._observer = _observe(watched, self.changed, self._touched)
        except OSError as exc:  # EMFILE / ENOSPC: inotify instances or watches used up
            self.degraded = (
                f"inotify is unavailable ({exc.strerror or exc}); checking every "
                f"{self.rescan_s:g} s instead (raise fs.inotify.max_user_instances / "
                "max_user_watches to get millisecond wake-ups back)"
            )
            log.warning("%s", self.degraded)
        return self

    def _watched(self) -> dict[Path, set[str] | None]:
        """Each directory to watch, with the file names that matter there (None: all)."""
        watched: dict[Path, set[str] | None] = {}
        for path in self.paths:
            watched.setdefault(path.parent, set())
        for path in self.paths:
            names = watched[path.parent]
            if names is not None:
                names.add(path.name)
        for directory in self.directories:
            watched[directory] = None
        return watched

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

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

    def wait(self, timeout: float) -> bool:
        """Block until the file changes or `min(timeout, rescan_s)` passes. True on a change."""
        return self.changed.wait(max(0.0, min(timeout, self.rescan_s)))


def _observe(
    watched: dict[Path, set[str] | None], changed: threading.Event, touched: set[Path]
) -> BaseObserver:
    from watchdog.events import FileClosedEvent, FileCreatedEvent, FileMovedEvent
    from watchdog.observers import Observer

    observer = Observer()
    try:
        for directory, names in watched.items():
            observer.schedule(
                _Handler(directory, names, changed, touched),  # type: ignore[arg-type]  # duck-typed
                str(directory),
                recursive=False,
                # inotify mask: a rename onto the inbox from .swarm-tmp/ arrives as IN_MOVED_TO
                # (reported as created, since its IN_MOVED_FROM is in another directory);
                # Claude Code's in-place writes as IN_CLOSE_WRITE
                event_filter=[FileCreatedEvent, FileMovedEvent, FileClosedEvent],
            )
        observer.daemon = True
        observer.start()
    except BaseException:
        with contextlib.suppress(Exception):
            observer.stop()
        raise
    return observer
