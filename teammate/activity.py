"""A teammate's turns, as others see them: ``isActive`` in config.json and "working" in its
status file, written only for turns that last.

Every write of config.json is a lock, a parse and a rewrite of the whole team, which every
member's writes queue behind: a broadcast to 200 teammates that each flip ``isActive`` on and
off again is 400 rewrites of a 200-member file, seconds of queueing for a message each of them
handles in milliseconds. So a turn is marked (``isActive: true``, and the status file written
with the "working" state the teammate holds in memory from the turn's first moment) only once it
has lasted `ACTIVE_AFTER_S` (a model request or a long command), and the end of a turn writes
``isActive: false`` only if the file says otherwise. A turn shorter than that writes neither
(its end writes the status file once, "idle"): by the time anyone could have looked, it was over.

One thread, started with the first turn and kept, waits for the turns' deadlines (a thread
started per turn cost about 1 ms of each message's handling on a loaded machine, profiled).
Turns come one after another and their deadlines only move later, so a turn that begins while
the thread waits for an earlier deadline does not wake it: it wakes at that deadline and waits
again for the new one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

ACTIVE_AFTER_S = 0.5


class Activity:
    """Begin and end of the turns of one teammate. `mark(True)` is called, from the activity
    thread, for a turn that is still going `after_s` after it began; `mark(False)` at every
    end (it skips a write that changes nothing, and never raises). The two never overlap, and
    a turn's `mark(True)` is never called after its end."""

    def __init__(self, mark: Callable[[bool], None], after_s: float = ACTIVE_AFTER_S) -> None:
        self._mark = mark
        self._after_s = after_s
        self._cond = threading.Condition(threading.Lock())
        self._due: float | None = None  # when the current turn counts as lasting; None: none
        self._waiting_until: float | None = None  # the thread's wait (None: until told)
        self._thread: threading.Thread | None = None
        self._closed = False

    def begin(self) -> None:
        """A turn has started: it is marked if it is still going `after_s` on."""
        with self._cond:
            self._due = due = time.monotonic() + self._after_s
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="swarm-active-mark", daemon=True
                )
                self._thread.start()
            elif self._waiting_until is None or due < self._waiting_until:
                self._cond.notify()  # it waits for no turn, or for a later deadline

    def end(self) -> None:
        """The turn is over (idle, or stopping): ``isActive`` false, if it is not already."""
        with self._cond:
            self._due = None
            self._mark(False)

    def close(self, timeout: float | None = None) -> None:
        """Let the thread go (a stopping teammate; tests), waiting for it at most `timeout`
        seconds (None: as long as it takes): a mark stuck on a store that stopped answering
        holds the thread, a daemon, and is left behind."""
        if not self._cond.acquire(timeout=-1 if timeout is None else timeout):
            return
        try:
            self._closed = True
            self._due = None
            self._cond.notify()
        finally:
            self._cond.release()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                due = self._due
                left = None if due is None else due - time.monotonic()
                if left is not None and left <= 0:
                    self._due = None  # once per turn
                    self._mark(True)
                    continue
                self._waiting_until = due
                self._cond.wait(left)
                self._waiting_until = None
