"""Waiting for a kernel lock (`fcntl.flock`) without polling, with a deadline and a way out.

`fcntl.flock` either fails at once (``LOCK_NB``) or blocks with no timeout. Polling the first
costs a wake-up per try and answers late: a group-commit writer (`protocols.spool`) that sleeps
between tries notices the holder's release a few ms after it happened, and those ms, not the
commit, set how many sends per second eight writers make. `wait_for_flock` instead blocks in
the kernel, in a helper thread on a duplicate of the descriptor (so the lock is the caller's:
flock locks belong to the open file, which both descriptors share), and is woken the moment
the holder lets go. Meanwhile the caller's thread asks `done()` now and then (backing off from
2 ms to 50 ms): a writer whose entry another holder has already committed leaves without the
lock.

If the wait ends without the lock (done, or the deadline), the helper thread is told; should it
still get the lock later, it lets go of it at once and closes its descriptor. Either way no lock
is ever left held by a caller that did not take it.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable

FIRST_CHECK_S = 0.002
LAST_CHECK_S = 0.05


class _Waiter:
    """One blocking flock in a helper thread, and who ends up owning its result."""

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)
        self.mutex = threading.Lock()
        self.taken = threading.Event()
        self.abandoned = False
        self.error: OSError | None = None

    def run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError as exc:
            self.error = exc
        with self.mutex:
            if self.abandoned and self.error is None:
                fcntl.flock(self.fd, fcntl.LOCK_UN)  # nobody waits for it any more
            os.close(self.fd)
            self.taken.set()

    def abandon(self) -> bool:
        """Give up the wait; True if the lock was taken meanwhile after all (then it is the
        caller's, as if the wait had succeeded)."""
        with self.mutex:
            if self.taken.is_set():
                return self.error is None
            self.abandoned = True
            return False


def wait_for_flock(fd: int, deadline: float, done: Callable[[], bool]) -> bool | None:
    """Take the exclusive flock on `fd`, blocking until it is free: True once it is held; False
    if `done()` turned true first (nothing held); None at the `deadline` (monotonic; nothing
    held). An `OSError` of the flock call itself is raised."""
    waiter = _Waiter(fd)
    threading.Thread(target=waiter.run, name="swarm-flock-wait", daemon=True).start()
    check = FIRST_CHECK_S
    while True:
        remaining = deadline - time.monotonic()
        if waiter.taken.wait(max(0.0, min(check, remaining))):
            if waiter.error is not None:
                raise waiter.error
            return True
        if done():
            return waiter.abandon()  # True: taken meanwhile after all, and now held
        if remaining <= check:
            return True if waiter.abandon() else None
        check = min(check * 2, LAST_CHECK_S)
