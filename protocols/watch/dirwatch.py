"""Which names in one directory changed since the last look, from the process's inotify instance.

`DirWatch(path).changes()` returns the names created, written, renamed or removed in the
directory since the previous call, or None when it cannot tell (the caller then looks at every
file itself): the first call, no inotify instance for this process (not Linux, or the user's
``fs.inotify.max_user_instances``, 128 by default, used up by other processes), the kernel's
queue overflowed, the directory does not exist yet or was removed or replaced. A watch that was
lost is set up again on the next call, before it answers None, so nothing changed between the
two goes unseen. A process that could not have an inotify instance asks again every `RETRY_S`
seconds, and until then every call answers None: the caller's full look (a ``stat`` of every
file) is the fallback.

The watch is one more watch on the process's one instance (`protocols.watch.inotify.Notifier`),
beside the inbox watchers: a directory costs a watch, not an instance. It hears what changes a
file's content or whether it is there (`EVENTS`: created, closed after a write, renamed in or out,
removed), and nothing of subdirectories (the lock directories ``<N>.json.lock``) or hidden names
(temporary files ``.<N>.json.tmp-*``, private lock directories ``.<N>.json.lock.new``): of the
twenty-odd events a claim and its completion make in the directory, the two that name a task file.
The others are dropped by the notifier on their mask and first byte, undecoded. It is a passive
subscriber: it reads what it heard when asked, so the instance's reader thread is not woken for it
(in a process that only claims tasks it does not read at all).

Why this can be trusted for a compare-and-set's inputs: the kernel queues the event inside the
system call that made the change (``rename``, ``link``, ``unlink``, and the ``close`` that ends
a write in place), before that call returns, and `changes()` first has every queued event
delivered (`Notifier.sync`). So every change that was complete when it was called has been
reported, whoever made it (Claude Code writes task files in place: its write is complete when
it closes the file, under the task's lock; swarm renames new files over them). A write not yet
closed is not reported until it is: a look then reads the file once it is whole, not half
written. File times are not used: they are coarse, and a rewrite in the same tick with the same
size would look unchanged.
"""

from __future__ import annotations

import os
import threading
import time
import weakref

from protocols.watch.inotify import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    Notifier,
)

# what changes a file's content or whether it is there (module doc): created (swarm's new task
# files are hard-linked into place: IN_CREATE alone), closed after a write (Claude Code writes in
# place), renamed in (swarm's writes) or out, removed. Not each write (IN_MODIFY: its close
# follows), nor attributes (IN_ATTRIB: times, modes, link counts; no content).
EVENTS = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE
RETRY_S = 10.0  # how long to go without inotify before asking for an instance again


class _Heard:
    """What the notifier's reader told one watch. Apart from `DirWatch`, so that the notifier
    holds no reference to the watch itself (it unsubscribes when it is collected)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()
        self._lost = False

    def note(self, name: str | None) -> None:
        with self._lock:
            if name is None:
                self._lost = True
            else:
                self._names.add(name)

    def take(self) -> tuple[set[str], bool]:
        with self._lock:
            names, lost = self._names, self._lost
            self._names, self._lost = set(), False
        return names, lost


class DirWatch:
    """Changes to the entries of one directory (not its subdirectories)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._notifier: Notifier | None = None  # taken by the first `changes()`
        self._handle: int | None = None
        self._heard = _Heard()
        self._pid = os.getpid()
        self._next_try = 0.0  # monotonic time to try for an instance again
        self._finalizer: weakref.finalize[[int], DirWatch] | None = None

    @property
    def available(self) -> bool:
        """Whether this watch has an inotify instance (after the first `changes()`)."""
        return self._notifier is not None

    def changes(self) -> set[str] | None:
        """Names changed since the last call; None when every file must be looked at."""
        if self._pid != os.getpid():  # a forked child: its parent's instance is not its own
            self._forget()
        if self._notifier is None:
            if time.monotonic() < self._next_try:
                return None
            try:
                self._notifier = Notifier.shared()
            except OSError:  # used up by other processes, perhaps only for now
                self._next_try = time.monotonic() + RETRY_S
                return None
        notifier = self._notifier
        if self._handle is None:
            self._subscribe(notifier)
            return None  # watched from now on (or not there yet): the caller looks once
        try:
            notifier.sync()
        except OSError:
            return None
        names, lost = self._heard.take()
        if lost or not notifier.armed(self._handle):
            notifier.rearm(self._handle)  # watch again first: the full look comes after
            self._heard.take()  # what it heard until now, the caller's full look covers
            return None
        return names

    def close(self) -> None:
        """Stop watching (also done when the watch is collected)."""
        finalizer, self._finalizer = self._finalizer, None
        alive = finalizer is not None and finalizer.detach() is not None
        if alive and self._notifier is not None and self._handle is not None:
            self._notifier.unwatch(self._handle)  # at once: not in a finalizer, free to wait
        self._handle = None

    def _subscribe(self, notifier: Notifier) -> None:
        try:
            self._handle = notifier.watch_dir(
                self.path, self._heard.note, EVENTS, passive=True, hidden=False
            )
        except OSError:  # not there yet, a link, or no watches left: asked again next time
            return
        self._finalizer = weakref.finalize(self, notifier.unwatch_soon, self._handle)

    def _forget(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()  # the parent's watch: not the child's to remove
        self._finalizer = None
        self._notifier = None
        self._handle = None
        self._heard = _Heard()
        self._pid = os.getpid()
        self._next_try = 0.0
