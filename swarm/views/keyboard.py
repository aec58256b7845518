"""The keyboard of `swarm watch`: the terminal in cbreak mode, and a thread that reads keys.

`KeyReader` blocks in ``select`` on the terminal and on a pipe of its own, with no timeout: a
key is handed on the moment it is typed (`on_keys`, which wakes the dashboard), and `stop`
writes to the pipe, so the thread ends at once rather than at its next poll. It can be started
again after a stop: while tmux has the terminal (``t`` attaches to a member's pane) nothing here
reads a key meant for tmux. `away` gives the terminal back in its own mode for such a while.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import termios
import threading
import tty
from collections.abc import Callable, Iterator

from swarm.views.dashboard_keys import split_keys

Attributes = list  # what termios.tcgetattr returns


@contextlib.contextmanager
def cbreak(fd: int) -> Iterator[Attributes]:
    """The terminal in cbreak mode; TCSANOW keeps keys typed before (TCSAFLUSH drops them).
    Yields the terminal's own attributes, which `away` puts back for a while."""
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        yield saved
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@contextlib.contextmanager
def away(fd: int, saved: Attributes) -> Iterator[None]:
    """The terminal in its own mode (`saved`) inside, back in cbreak mode after."""
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    try:
        yield
    finally:
        tty.setcbreak(fd, termios.TCSANOW)


class KeyReader:
    """Keys read from `fd` on a thread, each batch handed to `on_keys` as it is typed."""

    def __init__(self, fd: int, on_keys: Callable[[list[str]], None]) -> None:
        self.fd = fd
        self.on_keys = on_keys
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
        self._stop = threading.Event()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._read, name="swarm-watch-keys", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread now (it reads no key after this returns)."""
        if self._thread is None:
            return
        self._stop.set()
        os.write(self._wake_w, b"\0")
        self._thread.join()
        self._thread = None
        with contextlib.suppress(BlockingIOError):
            os.set_blocking(self._wake_r, False)
            os.read(self._wake_r, 64)
        os.set_blocking(self._wake_r, True)

    def close(self) -> None:
        self.stop()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def __enter__(self) -> KeyReader:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # é is two bytes
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd, self._wake_r], [], [])
            if self._stop.is_set() or self.fd not in ready:
                continue
            data = os.read(self.fd, 1024)
            if not data:  # the terminal is gone
                return
            typed = decoder.decode(data)
            if typed:
                self.on_keys(split_keys(typed))
