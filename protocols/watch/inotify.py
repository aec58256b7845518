"""One inotify instance per process, shared by every watcher in it, read by one thread.

The kernel limits inotify *instances* per user (``fs.inotify.max_user_instances``, 128 by default)
far more tightly than *watches* (``max_user_watches``, about 8,000 per GiB of memory), so a process
takes one instance (`Notifier.shared`) and puts every watch on it: the inbox watchers
(`protocols.watch.wakeup`) and the task board's index (`protocols.watch.dirwatch`) alike. Its reader
thread blocks in ``poll(2)``: an idle process has no thread waking up.

A *passive* subscriber (the board's index) takes its events only through `sync`, when it looks.
While every subscriber of the process is passive the reader thread does not read at all: the
events wait in the kernel's queue for the next `sync` (a queue that overflows meanwhile is
reported like any other overflow), so a process that claims tasks is not woken for every lock
directory that every other process makes and removes beside the task files.

Files are watched themselves, not their directory: a teammate hears about its own inbox only,
not about every other inbox of the team (a broadcast to 200 members wakes each member once, not
200 times). An atomic write replaces the file (a new inode), which the old inode's watch
reports (``IN_ATTRIB``: its last link went); the watch is then moved to the new inode *before*
the watchers are told, so a write after their next read is always heard. A file that does not
exist yet is waited for through a watch on its directory. Directories are watched for files
created, renamed into or written in them; a subscriber may ask for more (`watch_dir`'s
`events`: files modified, removed, their attributes changed) or leave out hidden names
(``hidden``), and the kernel's watch asks for what its subscribers want together, each
subscriber hearing only its own kinds of event. The kernel cannot leave out subdirectories or
names: an event that no subscriber of its directory hears is dropped on its mask and the first
byte of its name, before anything else about it is decoded.

`sync` delivers, before it returns, every event the kernel has queued: the kernel queues an
event inside the system call that made the change, so after `sync` every change completed
before the call has reached its watchers (`protocols.watch.dirwatch` builds on this). The reader
thread and `sync` read under one lock, and hand the events to the watchers under it too.

What the kernel cannot deliver it says: a queue overflow (``IN_Q_OVERFLOW``) tells every
watcher that anything may have changed (name None), and every file watch is moved to its
path's current inode. A watched directory that goes away tells its watchers too; `repair`
re-arms what is missing (watchers call it when their safety-net rescan comes round), and a
directory watch armed again tells its watchers that anything may have changed meanwhile.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import select
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000  # in an event: about a subdirectory; in `watch_dir`'s events: wanted too
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = 0o2000000
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
# a file: written in place (Claude Code), replaced by a rename (its link count drops), gone
FILE_MASK = IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
# a directory, by default: a file renamed into it (swarm's atomic writes), created, or written
# in place; and its subdirectories' entries alike
DIR_EVENTS = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ISDIR
_DIR_SELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW  # every directory watch
DIR_MASK = (DIR_EVENTS & ~IN_ISDIR) | _DIR_SELF
APPEARED = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE
_EVENT = struct.Struct("iIII")
_BUFFER = 65536
# the largest event: its header and a name of NAME_MAX bytes, NUL-terminated and padded
_LARGEST = _EVENT.size + 256
_DOT = ord(".")
_LOUD = GONE | IN_Q_OVERFLOW  # events never dropped undecoded
_UNSEEN: tuple[int, int, bool] = (0, 0, False)  # a sieve not made yet (compared by identity)

Callback = Callable[[str | None], None]  # the name that changed; None: anything may have
Calls = list[tuple[Callback, str | None]]


@dataclass(eq=False)
class _Watch:
    path: str
    is_dir: bool
    wd: int | None = None
    mask: int = 0  # what the kernel's watch asks for (a directory: its subscribers' union)
    callbacks: dict[int, Callback] = field(default_factory=dict)
    events: dict[int, int] = field(default_factory=dict)  # a dir: what each subscriber hears
    # a dir: subscribers that hear no hidden names (``.x``: temporary files, private locks)
    no_hidden: set[int] = field(default_factory=set)
    pending: dict[str, _Watch] = field(default_factory=dict)  # a dir: files not there yet
    parent: _Watch | None = None  # a file not there yet: the dir watch that waits for it


def _wanted(events: int, mask: int) -> bool:
    """Whether a directory subscriber asking for `events` hears an event with `mask`."""
    if mask & IN_ISDIR and not events & IN_ISDIR:
        return False
    return bool(mask & events & ~IN_ISDIR)


Sieve = tuple[int, int, bool]  # kinds of event heard, kinds dropped, hidden names heard


def _sieve(watch: _Watch) -> Sieve:
    """What none of a directory watch's subscribers hears, so that `Notifier._handle` drops it
    before anything about it is decoded (a claim's lock directories and temporary files beside
    the task files make about twenty events, of which the board's index needs two): the kinds
    of event some subscriber (or a file waited for) hears, the kinds dropped (subdirectories,
    unless someone hears them), and whether hidden names are heard."""
    kinds = 0
    subdirectories = hidden = bool(watch.pending)  # a file waited for: as before, every event
    if watch.pending:
        kinds |= APPEARED
    for handle in watch.callbacks:
        events = watch.events.get(handle, DIR_EVENTS)
        kinds |= events
        subdirectories = subdirectories or bool(events & IN_ISDIR)
        hidden = hidden or handle not in watch.no_hidden
    return kinds & ~IN_ISDIR, 0 if subdirectories else IN_ISDIR, hidden


class Notifier:
    """The process's inotify instance (module doc). Callbacks run on the reader thread (or in
    `sync`, `repair`, `rearm`), one at a time, and must only note what happened (set an event,
    add to a set): never call back into the notifier."""

    _shared: Notifier | None = None
    _shared_pid = 0
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> Notifier:
        """This process's instance, made on first use. Raises OSError when inotify cannot be
        had (EMFILE: the user's instances are used up; ENOSYS: no inotify here); a later call
        tries again."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared_pid != os.getpid():  # a fork has no reader
                cls._shared = Notifier()
                cls._shared_pid = os.getpid()
            return cls._shared

    def __init__(self) -> None:
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
            init = self._libc.inotify_init1
        except (OSError, AttributeError) as exc:
            raise OSError(errno.ENOSYS, f"no inotify here ({exc})") from exc
        fd = init(IN_CLOEXEC | IN_NONBLOCK)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.fd = fd
        self._pid = os.getpid()  # a forked child's copy shares the descriptor: hands off
        self._lock = threading.Lock()  # the watches
        self._reading = threading.RLock()  # reading the descriptor and telling the watchers
        self._files: dict[str, _Watch] = {}
        self._dirs: dict[str, _Watch] = {}
        self._by_wd: dict[int, _Watch] = {}
        self._by_handle: dict[int, _Watch] = {}
        self._next_id = 0
        self._later: Calls = []  # calls noted under the lock, made once it is released
        self._dropped: deque[int] = deque()  # handles `unwatch_soon` could not unwatch at once
        self._passive: set[int] = set()  # handles whose events wait for `sync`
        self._reader_needed = threading.Event()  # set while some subscriber is not passive
        self.broken = 0  # watches whose path is gone (a deleted directory): `repair` retries
        threading.Thread(target=self._read_forever, name="swarm-inotify", daemon=True).start()

    # subscribing

    def watch_file(self, path: str, callback: Callback) -> int:
        """Call `callback(name)` whenever the file at `path` is written or replaced; returns
        a handle for `unwatch`."""
        with self._lock:
            self._drop_pending()
            watch = self._files.get(path)
            if watch is None:
                watch = self._files[path] = _Watch(path, is_dir=False)
                self._arm_file(watch)
            return self._subscribe(watch, callback)

    def watch_dir(
        self,
        path: str,
        callback: Callback,
        events: int = DIR_EVENTS,
        passive: bool = False,
        hidden: bool = True,
    ) -> int:
        """Call `callback(name)` whenever a file in the directory `path` has one of `events`
        (by default: it appeared or was written; with `IN_ISDIR`, subdirectories too), and
        `callback(None)` when the directory went away, was armed again or events were lost.
        `passive`: only when some thread calls `sync` (module doc). `hidden`: names that begin
        with a dot too (temporary files and private lock directories are hidden). Raises
        OSError if the directory cannot be watched (missing, a link, no watches left)."""
        try:
            with self._lock:
                self._drop_pending()
                watch = self._dir(path, must=True)
                handle = self._subscribe(watch, callback, passive)
                watch.events[handle] = events
                if not hidden:
                    watch.no_hidden.add(handle)
                try:
                    self._set_dir_mask(watch)
                except OSError:
                    self._unsubscribe(handle)
                    raise
                return handle
        finally:
            self._run_later()

    def unwatch(self, handle: int) -> None:
        with self._lock:
            self._drop_pending()
            self._unsubscribe(handle)
        self._run_later()

    def unwatch_soon(self, handle: int) -> None:
        """`unwatch` for a finalizer (a watcher collected): never blocks. The garbage collector
        runs finalizers in whatever thread allocates, at any point, even inside a block that
        holds this notifier's lock (which is not re-entrant: waiting for it there would wait for
        ever). So `handle` is unwatched now if the lock is free, else by whoever next takes it."""
        self._dropped.append(handle)
        if self._lock.acquire(blocking=False):
            try:
                self._drop_pending()
            finally:
                self._lock.release()

    def _drop_pending(self) -> None:
        """Unwatch what `unwatch_soon` left (under the lock)."""
        while self._dropped:
            self._unsubscribe(self._dropped.popleft())

    def armed(self, handle: int) -> bool:
        """Whether the watch of `handle` is in place (False: its path is gone, for now)."""
        with self._lock:
            watch = self._by_handle.get(handle)
            return watch is not None and watch.wd is not None

    def rearm(self, handle: int) -> bool:
        """Arm the watch of `handle` again if its path went away and is back (its subscribers
        are told that anything may have changed); whether it is in place now."""
        with self._lock:
            watch = self._by_handle.get(handle)
            if watch is not None and watch.wd is None:
                if watch.is_dir:
                    self._arm_dir(watch)
                elif watch.parent is None:
                    self._arm_file(watch)
            armed = watch is not None and watch.wd is not None
        self._run_later()
        return armed

    def repair(self) -> None:
        """Re-arm watches whose path went away and may be back (cheap when none did)."""
        if not self.broken:
            return
        with self._lock:
            self.broken = 0
            for watch in list(self._dirs.values()):
                if watch.wd is None:
                    self._arm_dir(watch)
            for watch in list(self._files.values()):
                if watch.wd is None and watch.parent is None:
                    self._arm_file(watch)
        self._run_later()

    # the watches (under the lock)

    def _subscribe(self, watch: _Watch, callback: Callback, passive: bool = False) -> int:
        self._next_id += 1
        watch.callbacks[self._next_id] = callback
        self._by_handle[self._next_id] = watch
        if passive:
            self._passive.add(self._next_id)
        else:
            self._reader_needed.set()
        return self._next_id

    def _unsubscribe(self, handle: int) -> None:
        watch = self._by_handle.pop(handle, None)
        if watch is None or watch.callbacks.pop(handle, None) is None:
            return
        self._passive.discard(handle)
        if len(self._passive) == len(self._by_handle):  # nobody left who waits for the reader
            self._reader_needed.clear()
        watch.events.pop(handle, None)
        watch.no_hidden.discard(handle)
        self._release(watch)
        if watch.callbacks and watch.is_dir:
            with contextlib.suppress(OSError):  # it asks for more than needed meanwhile
                self._set_dir_mask(watch)

    def _add(self, path: str, mask: int) -> int:
        if os.getpid() != self._pid:  # a forked child's copy: the descriptor is its parent's
            raise OSError(errno.EBADF, f"inotify instance of process {self._pid}: {path}")
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"{os.strerror(code)}: inotify watch on {path}")
        return int(wd)

    def _forget_wd(self, watch: _Watch, remove: bool) -> None:
        if watch.wd is not None:
            if self._by_wd.get(watch.wd) is watch:
                del self._by_wd[watch.wd]
            if remove and os.getpid() == self._pid:  # never a watch of the parent's
                self._libc.inotify_rm_watch(self.fd, watch.wd)
            watch.wd = None

    def _dir_mask(self, watch: _Watch) -> int:
        wanted = 0
        for events in watch.events.values():
            wanted |= events
        return DIR_MASK | (wanted & ~IN_ISDIR)

    def _dir(self, path: str, must: bool) -> _Watch:
        watch = self._dirs.get(path)
        if watch is None:
            watch = _Watch(path, is_dir=True)
            if must:
                watch.mask = self._dir_mask(watch)
                watch.wd = self._add(path, watch.mask)
                self._by_wd[watch.wd] = watch
            else:
                self._arm_dir(watch)
            self._dirs[path] = watch
        elif must and watch.wd is None:
            self._arm_dir(watch, strict=True)
        return watch

    def _set_dir_mask(self, watch: _Watch) -> None:
        """Ask the kernel for what the subscribers of an armed directory watch want now."""
        mask = self._dir_mask(watch)
        if watch.wd is None or mask == watch.mask:
            return
        wd = self._add(watch.path, mask)
        watch.mask = mask
        if wd != watch.wd:  # the path names another directory now: the old one went
            self._forget_wd(watch, remove=True)
            watch.wd = wd
            self._by_wd[wd] = watch
            self._later.extend((c, None) for c in watch.callbacks.values())

    def _arm_dir(self, watch: _Watch, strict: bool = False) -> None:
        """Watch the directory at `watch.path` (again). `strict`: raise if it cannot be."""
        again = bool(watch.callbacks) and watch.mask != 0  # it was armed before
        mask = self._dir_mask(watch)
        try:
            watch.wd = self._add(watch.path, mask)
        except OSError:
            if strict:
                raise
            self.broken += 1
            return
        watch.mask = mask
        self._by_wd[watch.wd] = watch
        if again:  # what changed while it was gone was heard by nobody
            self._later.extend((c, None) for c in watch.callbacks.values())
        for pending in list(watch.pending.values()):
            self._arm_file(pending)

    def _arm_file(self, watch: _Watch, gone: bool = False) -> None:
        """Watch the file now at `watch.path` (a new inode after a replace); if there is none,
        wait for it through its directory. `gone`: the old watch was removed by the kernel."""
        try:
            wd = self._add(watch.path, FILE_MASK)
        except OSError as exc:
            self._forget_wd(watch, remove=not gone)
            if exc.errno in (errno.ENOENT, errno.ENOTDIR) and watch.parent is None:
                self._wait_for_file(watch)
            elif watch.parent is None:
                self.broken += 1
            return
        if wd != watch.wd:
            self._forget_wd(watch, remove=not gone)
            watch.wd = wd
            self._by_wd[wd] = watch
        if watch.parent is not None:
            watch.parent.pending.pop(os.path.basename(watch.path), None)
            parent, watch.parent = watch.parent, None
            self._release(parent)

    def _wait_for_file(self, watch: _Watch) -> None:
        parent = self._dir(os.path.dirname(watch.path), must=False)
        parent.pending[os.path.basename(watch.path)] = watch
        watch.parent = parent
        self._arm_file(watch)  # it may have appeared before the directory was watched

    def _release(self, watch: _Watch) -> None:
        """Drop `watch` once nobody needs it."""
        if watch.callbacks or watch.pending:
            return
        self._forget_wd(watch, remove=True)
        if watch.is_dir:
            self._dirs.pop(watch.path, None)
            return
        self._files.pop(watch.path, None)
        if watch.parent is not None:
            watch.parent.pending.pop(os.path.basename(watch.path), None)
            parent, watch.parent = watch.parent, None
            self._release(parent)

    # reading

    def sync(self) -> None:
        """Deliver every event queued by now (module doc). Raises OSError if the descriptor
        cannot be read."""
        if os.getpid() != self._pid:
            return  # a forked child's copy: the events are its parent's to read
        if self._dropped:
            with self._lock:
                self._drop_pending()
        with self._reading:
            while True:
                try:
                    data = os.read(self.fd, _BUFFER)
                except BlockingIOError:
                    return
                try:
                    with self._lock:
                        calls = self._handle(data)
                except Exception:  # never lose the reader over one batch
                    log.exception("inotify: could not handle events")
                    continue
                for callback, name in calls:
                    callback(name)
                if len(data) <= _BUFFER - _LARGEST:
                    # a read stops early only when the queue is empty: whatever was queued
                    # when `sync` was called has been read (one system call, not two)
                    return

    def _run_later(self) -> None:
        """Make the calls noted under the lock (one caller at a time, like the reader's)."""
        if not self._later:
            return
        with self._reading:
            with self._lock:
                calls, self._later = self._later, []
            for callback, name in calls:
                callback(name)

    @property
    def reading(self) -> bool:
        """Whether the reader thread reads as events come (some subscriber is not passive)."""
        return self._reader_needed.is_set()

    def _read_forever(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            self._reader_needed.wait()  # only passive subscribers: their `sync` reads
            try:
                poller.poll()
                self.sync()
            except OSError as exc:
                log.error("inotify read failed (%s); watchers fall back on their rescans", exc)
                return

    def _handle(self, data: bytes) -> Calls:
        """The calls that the events in `data` make. A directory's event that none of its
        subscribers hears (`_sieve`) is dropped on its mask and the first byte of its name,
        before the name is decoded (the board's directory sees about twenty events per claim,
        most of them about lock directories and temporary files), in as few steps as can be:
        every process watching the board pays this for every claim of every other process."""
        calls: Calls = []
        offset = 0
        end = len(data)
        size = _EVENT.size
        unpack = _EVENT.unpack_from
        # per watch descriptor of this batch: (kinds heard, kinds dropped, hidden names heard)
        # of a directory watch, None for anything else (made under the lock: nothing changes,
        # but for a watch gone or armed again in this batch, after which they are made again)
        sieves: dict[int, Sieve | None] = {}
        while offset < end:
            wd, mask, _cookie, length = unpack(data, offset)
            start = offset + size
            offset = start + length
            if not mask & _LOUD:
                sieve = sieves.get(wd, _UNSEEN)
                if sieve is _UNSEEN:
                    sieve = sieves[wd] = self._sieve_of(wd)
                if sieve is not None:
                    kinds, dropped, hidden = sieve
                    if (
                        not mask & kinds
                        or mask & dropped
                        or not length  # the directory's own attributes: nothing in it changed
                        or (not hidden and data[start] == _DOT)
                    ):
                        continue
            else:
                sieves.clear()
                if mask & IN_Q_OVERFLOW:
                    calls.extend(self._overflowed())
                    continue
            watch = self._by_wd.get(wd)
            if watch is None:
                continue  # a watch already moved or dropped
            name = os.fsdecode(data[start:offset].rstrip(b"\0")) or None
            if watch.is_dir:
                calls.extend(self._dir_event(watch, mask, name))
            else:
                if mask & (IN_ATTRIB | GONE):
                    self._arm_file(watch, gone=bool(mask & IN_IGNORED))
                    sieves.clear()
                base = os.path.basename(watch.path)
                calls.extend((c, base) for c in watch.callbacks.values())
        if self._later:
            calls.extend(self._later)
            self._later = []
        return calls

    def _sieve_of(self, wd: int) -> Sieve | None:
        """`_sieve` of the directory watched as `wd` (None: no directory's)."""
        watch = self._by_wd.get(wd)
        return _sieve(watch) if watch is not None and watch.is_dir else None

    def _dir_event(self, watch: _Watch, mask: int, name: str | None) -> Calls:
        if mask & GONE:
            self._forget_wd(watch, remove=not mask & IN_IGNORED)
            self.broken += 1
            waiting = [c for p in watch.pending.values() for c in p.callbacks.values()]
            return [(c, None) for c in [*watch.callbacks.values(), *waiting]]
        if name is None:
            return []  # the directory's own attributes: nothing in it changed
        hidden = name.startswith(".")
        calls: Calls = [
            (c, name)
            for handle, c in watch.callbacks.items()
            if _wanted(watch.events.get(handle, DIR_EVENTS), mask)
            and not (hidden and handle in watch.no_hidden)
        ]
        pending = watch.pending.get(name)
        if pending is not None and mask & APPEARED:
            self._arm_file(pending)
            calls.extend((c, name) for c in pending.callbacks.values())
        return calls

    def _overflowed(self) -> Calls:
        log.warning("inotify queue overflowed: events were lost; every watcher looks again")
        for watch in list(self._files.values()):
            if watch.parent is None:
                with contextlib.suppress(OSError):
                    self._arm_file(watch)
        every = [*self._files.values(), *self._dirs.values()]
        return [(c, None) for watch in every for c in watch.callbacks.values()]
