"""A stop asked for by a signal that is never lost: the handler's raise, kept until it is taken.

A long-running swarm process (a teammate, a host agent) stops on SIGTERM by raising an exception
from its handler in the main thread, wherever that thread is: in a command's wait, a lock, a
retry. But Python runs a handler wherever the main thread happens to be, and where that is a
weakref callback or a finalizer (run by the cycle collector, or by an object's last reference
going), the exception is printed as "ignored" and lost, and the process goes on as if nothing
had come. So a `StopRequest` also keeps why the stop was asked for until the process takes it
(`take`), and rings a pipe whose read end (`open` returns it) the process's wait can poll, or a
thread can read, so that the wait ends and the loop raises the stop again (`check`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable


class StopRequest:
    """The stop of one process's main loop (module doc). `make(why)` is the exception raised
    (``why``: the signal's name)."""

    def __init__(self, make: Callable[[str], BaseException]) -> None:
        self.requested: str | None = None  # why a stop was asked for, until `take`
        self._make = make
        self._bell: int | None = None  # the pipe's write end, while open

    def open(self) -> int:
        """Make the pipe; its read end, for the caller to poll or read and then close: it is
        readable once a stop was asked for, and at its end once `close` was called. A write
        from the handler never blocks (a full pipe already holds a wake-up)."""
        read_end, self._bell = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self._bell, False)
        return read_end

    def close(self) -> None:
        """Close the pipe's write end (its reader sees the end)."""
        bell, self._bell = self._bell, None
        if bell is not None:
            os.close(bell)

    def ask(self, why: str) -> BaseException:
        """Record a stop asked for and ring the pipe (from a signal handler: it takes no lock);
        the exception for the handler to raise where the main thread is."""
        self.requested = why
        if self._bell is not None:
            with contextlib.suppress(OSError):
                os.write(self._bell, b"!")
        return self._make(why)

    def check(self) -> None:
        """Raise the stop asked for, if it was not taken: its first raise was lost."""
        why = self.requested
        if why is not None:
            raise self._make(why)

    def take(self) -> None:
        """The stop is under way: `check` raises no more."""
        self.requested = None
