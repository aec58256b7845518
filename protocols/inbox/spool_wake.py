"""A spooled writer woken the moment its send is handed back, instead of at its next poll.

A writer whose send waits in the spool (`protocols.inbox.spool_slot`) learns that it was carried by
looking: is its slot's file back under its idle name? Looking between sleeps (1 ms growing to
10 ms) notices a hand-back about a millisecond late, and each writer's next send starts that
much later: fewer sends in each commit, and fewer commits per second (`bench/throughput.py`).

So each slot has a *bell*: a Unix datagram socket bound to an abstract address named after the
slot (``\\0swarm-spool-<slot id>``: nothing on disk, gone when its process is). The committer,
right after it hands a slot back (`protocols.inbox.spool.Spool.remove`), sends one byte to that
address (`ring`): one system call, never blocking, its failure ignored. The waiting writer
blocks in ``poll(2)`` on its bell for as long as it would have slept (`Bell.wait`) and wakes at
once when rung.

A ring is only a hint, never a decision: the writer still decides by looking (`Slot.carried`).
Hence what happens when a ring goes wrong is only a matter of speed:

- no ring (a committer of an older swarm, another network namespace, abstract sockets refused,
  the address taken by someone else: `Bell.make` returns None): the writer sleeps and looks, as
  before;
- a ring that is not about a hand-back (a stale one, or one sent by any local process that
  guessed the address): the writer looks, finds nothing, and sleeps the rest of that wait out
  without listening, so a flood of rings makes it look at most once per wait.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket

PREFIX = b"\0swarm-spool-"
_DRAIN = 64  # rings read per wake-up at most (each is one byte)


class Bell:
    """The bell of one spool slot (module doc); close it with the slot."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._poll = select.poll()
        self._poll.register(sock.fileno(), select.POLLIN)

    @classmethod
    def make(cls, slot_id: str) -> Bell | None:
        """A bell bound to the slot's address; None where it cannot be (module doc)."""
        import socket  # here: ~3 ms that a ``swarm send`` which never waits need not pay

        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        except OSError:
            return None
        try:
            sock.bind(address(slot_id))
            sock.setblocking(False)
        except OSError:
            sock.close()
            return None
        return cls(sock)

    def wait(self, timeout: float) -> bool:
        """Block for up to `timeout` seconds; True if rung meanwhile (the rings are read)."""
        if timeout <= 0 or not self._poll.poll(timeout * 1000):
            return False
        self.drain()
        return True

    def drain(self) -> None:
        """Forget rings already received (a stale one would wake the next wait for nothing)."""
        for _ in range(_DRAIN):
            try:
                self._sock.recv(1)
            except OSError:  # BlockingIOError: none left
                return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._poll.unregister(self._sock.fileno())
        self._sock.close()


def address(slot_id: str) -> bytes:
    return PREFIX + os.fsencode(slot_id)


def ring(slot_id: str) -> None:
    """Wake the writer waiting on slot `slot_id`, if it listens; never blocks, never raises."""
    sender = _sender()
    if sender is None:
        return
    with contextlib.suppress(OSError):  # nobody bound (ECONNREFUSED), its queue full, ...
        sender.sendto(b"!", address(slot_id))


_lock = threading.Lock()
_socket: socket.socket | None = None
_socket_pid = 0
_refused = False


def _sender() -> socket.socket | None:
    """This process's unbound socket for rings (made on first use, again after a fork)."""
    global _socket, _socket_pid, _refused
    if _socket is not None and _socket_pid == os.getpid():
        return _socket
    with _lock:
        if _socket is None or _socket_pid != os.getpid():
            if _socket is not None:  # a forked child's copy of its parent's socket
                _socket.close()
                _socket = None
            if _refused:
                return None
            import socket  # as in `Bell.make`

            try:
                made = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                made.setblocking(False)
            except OSError:
                _refused = True
                return None
            _socket, _socket_pid = made, os.getpid()
        return _socket
