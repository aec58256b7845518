"""``isActive`` in config.json for one teammate: set only for turns that last.

Every write of config.json is a lock, a parse and a rewrite of the whole team, which every
member's writes queue behind: a broadcast to 200 teammates that each flip ``isActive`` on and
off again is 400 rewrites of a 200-member file, seconds of queueing for a message each of them
handles in milliseconds. So a turn marks its teammate active only once it has lasted
`ACTIVE_AFTER_S` (a timer; a model request or a long command), and the end of a turn writes
``isActive: false`` only if the file says otherwise. A turn shorter than that leaves
config.json alone; by the time anyone could have looked, it was over. The status file
(`teammate.reporter`) still says "working" from the first moment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

ACTIVE_AFTER_S = 0.5


class Activity:
    """Begin and end of the turns of one teammate; `set_active(bool)` writes config.json (it
    skips a write that changes nothing, and never raises)."""

    def __init__(self, set_active: Callable[[bool], None], after_s: float = ACTIVE_AFTER_S) -> None:
        self._set_active = set_active
        self._after_s = after_s
        self._lock = threading.Lock()
        self._turn = 0
        self._in_turn = False
        self._timer: threading.Timer | None = None

    def begin(self) -> None:
        """A turn has started: mark the teammate active if it is still going `after_s` on."""
        with self._lock:
            self._cancel()
            self._turn += 1
            self._in_turn = True
            timer = threading.Timer(self._after_s, self._mark, args=(self._turn,))
            timer.name = "swarm-active-mark"
            timer.daemon = True
            self._timer = timer
            timer.start()

    def end(self) -> None:
        """The turn is over (idle, or stopping): ``isActive`` false, if it is not already."""
        with self._lock:
            self._cancel()
            self._in_turn = False
            self._set_active(False)

    def _mark(self, turn: int) -> None:
        with self._lock:
            if self._in_turn and self._turn == turn:
                self._set_active(True)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
