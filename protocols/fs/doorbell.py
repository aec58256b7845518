"""Doorbells: waking a reader that has no inotify, without a fast poll.

inotify instances are per user (``fs.inotify.max_user_instances``, 128 by default) and each
swarm process needs one, so on a machine with more than about 120 swarm processes the rest
cannot be woken by the kernel. Checking their files every half second instead would make
nearly all of an idle team's CPU (at 200 idle teammates, 72 of them polling). So such a reader
rings for itself: it makes a named pipe (a FIFO) per watched file or directory,
``<directory>/.swarm-doorbells/<name>.<pid>-<random>`` (``*`` for "anything in the directory"),
and waits on it with `select`. Every swarm write that replaces a file (`protocols.fs.jsonio`'s
atomic writes: inboxes, tasks, config.json, status files) rings the bells of that file and of
its directory (`ring`): one byte written to each, without blocking. The reader wakes at once;
it still looks at its files every few seconds for writers that ring no bell (Claude Code).

What keeps it safe:

- a bell is made under a ``.new-`` name, opened for reading and writing (so it never reads as
  closed, and a ring never blocks), and only then renamed to the name ringers look for; a
  ringer that finds a bell nobody has open (``ENXIO``: its reader died) removes it;
- a ringer opens each bell without following links and without blocking, and writes only into
  a FIFO: a planted file, link or directory there is never written to;
- a full pipe (``EAGAIN``) means the reader has been rung already; nothing else can fail a write
  that rings: ringing is best effort, the reader's own look is the safety net.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
from pathlib import Path

from protocols.fs import safefs
from protocols.logs import logger

log = logger(__name__)

BELL_DIR = ".swarm-doorbells"
ANY = "*"  # the key of a bell for anything written in its directory
NEW = ".new-"


class Doorbell:
    """A reader's bell for one file (by name) or for everything in one directory (`ANY`)."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = key
        self.name = f"{key}.{os.getpid()}-{os.urandom(4).hex()}"
        self.fd = -1

    def open(self) -> Doorbell:
        """Make the bell and hang it where ringers look (`OSError` if that cannot be done)."""
        folder = self.directory / BELL_DIR
        safefs.makedirs(folder)
        dir_fd = safefs.open_dir(folder)
        try:
            _remove_silent_bells(dir_fd)
            new = NEW + self.name
            os.mkfifo(new, 0o600, dir_fd=dir_fd)
            try:
                flags = os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
                self.fd = os.open(new, flags, dir_fd=dir_fd)
                os.rename(new, self.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                self.close()
                with contextlib.suppress(OSError):
                    os.unlink(new, dir_fd=dir_fd)
                raise
        finally:
            os.close(dir_fd)
        return self

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> bool:
        """Empty the pipe; whether it had been rung."""
        rung = False
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                return rung
            if not chunk:
                return rung
            rung = True

    def close(self) -> None:
        """Take the bell down (its name is removed; a ring meanwhile goes nowhere)."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            dir_fd = safefs.open_dir(self.directory / BELL_DIR)
            try:
                os.unlink(self.name, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        os.close(self.fd)
        self.fd = -1


def wait_any(bells: list[Doorbell], timeout: float) -> list[Doorbell]:
    """Block until one of `bells` rings or `timeout` passes; the bells that rang (drained)."""
    ready, _, _ = select.select([b for b in bells if b.fd >= 0], [], [], max(0.0, timeout))
    return [b for b in ready if b.drain()]


def ring(dir_fd: int, name: str) -> int:
    """Ring the bells of file `name` and of anything in the directory open at `dir_fd`; how
    many rang. Never raises: a reader that misses a ring finds the change at its next look."""
    try:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        bells_fd = os.open(BELL_DIR, flags, dir_fd=dir_fd)
    except OSError:
        return 0  # no reader without inotify here (the usual case): one failed open
    rang = 0
    try:
        for bell in os.listdir(bells_fd):
            key = bell.rpartition(".")[0]
            if key in (name, ANY) and not bell.startswith(NEW):
                rang += _ring_one(bells_fd, bell)
    except OSError as exc:
        log.debug("doorbells beside %s: %s", name, exc)
    finally:
        os.close(bells_fd)
    return rang


def _ring_one(bells_fd: int, bell: str) -> int:
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(bell, flags, dir_fd=bells_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads: its reader died
            with contextlib.suppress(OSError):
                os.unlink(bell, dir_fd=bells_fd)
        return 0
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return 0  # not a bell (planted): never written to
        with contextlib.suppress(BlockingIOError):  # full: rung already
            os.write(fd, b"\0")
        return 1
    except OSError:
        return 0
    finally:
        os.close(fd)


def _remove_silent_bells(bells_fd: int) -> None:
    """Remove bells nobody reads any more (their readers were killed), so they do not pile up
    where nobody rings (a directory written rarely)."""
    for bell in os.listdir(bells_fd):
        if bell.startswith(NEW):
            continue
        flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            os.close(os.open(bell, flags, dir_fd=bells_fd))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                with contextlib.suppress(OSError):
                    os.unlink(bell, dir_fd=bells_fd)
