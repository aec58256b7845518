"""Terminal resizes (``SIGWINCH``) turned into a call in an ordinary thread, for `swarm watch`.

A Python signal handler runs in the main thread between any two of its steps, even while the
main thread holds a lock: a handler that takes that lock (an `threading.Event`'s ``set`` does,
and the dashboard's loop clears and waits on that event all the time) waits for ever, and the
dashboard hangs. So the handler here does nothing. The signal's number reaches a pipe, written
by the interpreter's C-level handler (`signal.set_wakeup_fd`), and a thread blocked on that
pipe makes the call. The thread takes no CPU between resizes: it blocks in ``select``, with no
timeout, until a signal or the end of the block writes to the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def on_resize(wake: Callable[[], object]) -> Iterator[None]:
    """`wake()`, in a thread of its own, whenever the terminal is resized while inside. Outside
    the main thread (where signals cannot be handled) there is nothing to relay: no call."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    stop = threading.Event()
    relay = threading.Thread(
        target=_relay, args=(read_fd, stop, wake), name="swarm-resize", daemon=True
    )
    previous = signal.signal(signal.SIGWINCH, _nothing)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        relay.start()
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGWINCH, previous)
        stop.set()
        with contextlib.suppress(BlockingIOError):  # full: the relay has a byte to wake to
            os.write(write_fd, b"\0")
        if relay.is_alive():
            relay.join()
        os.close(read_fd)
        os.close(write_fd)


def _nothing(signum: int, frame: object) -> None:
    """The Python-level handler: none of the work (module doc)."""


def _relay(read_fd: int, stop: threading.Event, wake: Callable[[], object]) -> None:
    while not stop.is_set():
        select.select([read_fd], [], [])
        try:
            numbers = os.read(read_fd, 512)
        except BlockingIOError:
            continue
        if signal.SIGWINCH in numbers and not stop.is_set():
            wake()
