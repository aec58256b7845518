"""Waiting for a kernel lock (`fcntl.flock`) without polling, with a deadline.

`fcntl.flock` either fails at once (``LOCK_NB``) or blocks with no timeout. Polling the first
answers late: a waiter that sleeps between tries notices the holder's release up to a sleep
later, and with sixteen workers taking turns at a task list's lock those sleeps add up.
`wait_for_flock` instead blocks in the kernel, in a helper thread on a duplicate of the
descriptor (so the lock is the caller's: flock locks belong to the open file, which both
descriptors share), and is woken the moment the holder lets go.

It serves claims on a task list (`bench/claims.py` compares it with polling; the figures are in
docs/perf-log.md). Not for a group-commit writer waiting to be carried
(`FileGuard.acquire_unless`): it would take the lock only to find its entry committed and hand
it on, and those hand-overs cost more than they save (`bench/throughput.py`); it keeps polling.

Helper threads are kept for the next wait (a few of them, idle in `_IDLE`), not started anew
for each: with sixteen workers on one board nearly every claim waits for the list lock, and a
thread started per wait costs several times the CPU of one kept (waiting on plain locks rather
than `threading.Event`s, whose timed wait is Python code).

If the wait ends without the lock (the deadline), the helper thread is told; should it still get
the lock later, it lets go of it at once, closes its descriptor and ends, so no lock is ever
left held by a caller that did not take it. An abandoned helper stays blocked (with its
descriptor) until the holder lets go: behind a holder that is paused for good, a caller that
keeps retrying would pile them up, so past `MAX_ABANDONED` of them, and where no thread can be
started (at interpreter shutdown), the wait polls instead (jittered backoff, 0.2 ms to 2 ms).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

MAX_ABANDONED = 32
MAX_IDLE = 4  # helper threads kept waiting for the next wait
_abandoned = 0  # helpers of this process still blocked for a caller that gave up
_count = threading.Lock()


class _Waiter:
    """One blocking flock in a helper thread, and who ends up owning its result. (Plain locks,
    not `threading.Event`s: a lock's wait with a timeout is one call into C.)"""

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)
        self.mutex = threading.Lock()
        self.done = threading.Lock()  # held until the flock call has returned
        self.done.acquire()
        self.finished = False
        self.abandoned = False
        self.error: OSError | None = None

    def run(self) -> None:
        global _abandoned
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = exc
        with self.mutex:
            if self.abandoned:
                if self.error is None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)  # nobody waits for it any more
                with _count:
                    _abandoned -= 1
            os.close(self.fd)
            self.finished = True
        self.done.release()

    def abandon(self) -> bool:
        """Give up the wait; True if the lock was taken meanwhile after all (then it is the
        caller's, as if the wait had succeeded)."""
        global _abandoned
        with self.mutex:
            if self.finished:
                return self.error is None
            self.abandoned = True
            with _count:
                _abandoned += 1
            return False


class _Helper:
    """A thread that takes flocks for waiters, one after another, until one of them gives up on
    it (it then ends, once its flock returned) or enough others are idle."""

    def __init__(self) -> None:
        self.job: _Waiter | None = None
        self.given = threading.Lock()  # released when a job is given
        self.given.acquire()
        self.pid = os.getpid()
        threading.Thread(target=self._serve, name="swarm-flock-wait", daemon=True).start()

    def give(self, waiter: _Waiter) -> None:
        self.job = waiter
        self.given.release()

    def _serve(self) -> None:
        while True:
            self.given.acquire()
            waiter, self.job = self.job, None
            if waiter is None:
                continue
            waiter.run()
            if waiter.abandoned or not _park(self):
                return


_IDLE: list[_Helper] = []  # helpers waiting for a wait to take on (this process's)
_idle_lock = threading.Lock()


def _park(helper: _Helper) -> bool:
    """Put `helper` back among the idle ones; False if enough are idle already."""
    with _idle_lock:
        if len(_IDLE) >= MAX_IDLE or helper.pid != os.getpid():
            return False
        _IDLE.append(helper)
        return True


def _helper() -> _Helper:
    """An idle helper, or a new one (RuntimeError where no thread can be started)."""
    with _idle_lock:
        while _IDLE:
            helper = _IDLE.pop()
            if helper.pid == os.getpid():  # a forked child has none of its parent's threads
                return helper
    return _Helper()


def wait_for_flock(fd: int, deadline: float) -> bool:
    """Take the exclusive flock on `fd`, blocking until it is free: True once it is held, False
    at the `deadline` (monotonic; nothing held). An `OSError` of the flock call itself is
    raised. After a wait that did not take the lock, close `fd` rather than wait on it again: a
    helper still blocked shares its open file, and a lock it takes later would be that file's."""
    if _abandoned >= MAX_ABANDONED:
        return _poll(fd, deadline)
    waiter = _Waiter(fd)
    try:
        _helper().give(waiter)
    except RuntimeError:  # no new threads (interpreter shutdown)
        os.close(waiter.fd)
        return _poll(fd, deadline)
    if waiter.done.acquire(timeout=max(0.0, deadline - time.monotonic())):
        if waiter.error is not None:
            raise waiter.error
        return True
    return waiter.abandon()  # True: taken meanwhile after all, and now held


def _poll(fd: int, deadline: float) -> bool:
    """`wait_for_flock` by trying again and again (jittered backoff, 0.2 ms to 2 ms)."""
    delay = 0.0002
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay * (0.5 + jitter()), remaining))
        delay = min(delay * 1.5, 0.002)


def jitter() -> float:
    """A random fraction in [0, 1) for a back-off (`random` loaded only by a process that
    waits: a look at the team never does)."""
    import random

    return random.random()
