"""Signals turned into a call in an ordinary thread (`relayed`), for the loops that a signal ends
or wakes: `swarm watch` (a terminal resize redraws), `swarm bridge` (SIGTERM and Ctrl-C stop).

A Python signal handler runs in the main thread between any two of its steps, even while the
main thread holds a lock: a handler that takes that lock (a `threading.Event`'s ``set`` does,
and those loops clear and wait on their events all the time) waits for ever, and the program
hangs. So the handler here does nothing. The signal's number reaches a pipe, written by the
interpreter's C-level handler (`signal.set_wakeup_fd`), and a thread blocked on that pipe makes
the call. The thread takes no CPU between signals: it blocks in ``select``, with no timeout,
until a signal or the end of the block writes to the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable, Collection, Iterator

JOIN_S = 5.0  # how long the block's end waits for a call in progress to return


@contextlib.contextmanager
def relayed(signals: Collection[int], call: Callable[[int], object]) -> Iterator[None]:
    """`call(signum)`, in a thread of its own, for each of `signals` received while inside;
    their previous handlers are back afterwards. Outside the main thread (where signals cannot
    be handled) nothing is set up and nothing is called."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    stop = threading.Event()
    relay = threading.Thread(
        target=_relay, args=(read_fd, frozenset(signals), stop, call), name="swarm-signals"
    )
    relay.daemon = True
    previous = {signum: signal.signal(signum, _nothing) for signum in signals}
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        relay.start()
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        stop.set()
        with contextlib.suppress(BlockingIOError):  # full: the relay has bytes to wake to
            os.write(write_fd, b"\0")
        if relay.is_alive():
            relay.join(JOIN_S)
        if not relay.is_alive():  # one stuck in its call keeps the pipe it may still read
            os.close(read_fd)
            os.close(write_fd)


def _nothing(signum: int, frame: object) -> None:
    """The Python-level handler: none of the work (module doc)."""


def _relay(
    read_fd: int, signals: frozenset[int], stop: threading.Event, call: Callable[[int], object]
) -> None:
    while not stop.is_set():
        select.select([read_fd], [], [])
        try:
            numbers = os.read(read_fd, 512)
        except BlockingIOError:
            continue
        for signum in dict.fromkeys(numbers):  # each once, in the order they came
            if signum in signals and not stop.is_set():
                call(signum)
