"""Work on a team's store given a deadline, for whoever must not hang on a store that stopped
answering: a teammate that is stopping, `swarm shutdown --force`.

A store can stop answering in ways no timeout of its own covers: a PostgreSQL server that is
paused (or a host whose network is gone) leaves a query waiting on a connection that is still
open, and a file lock held by a paused process is waited for until the lock's own deadline. So
`within` runs the work on a thread of its own and waits for it at most `seconds`; past that it
raises `StoreTimeout` and leaves the thread behind (a daemon: it ends with the process, or
finishes by itself if the store comes back). A PostgreSQL store opens a connection per thread,
so the work never shares a connection that is stuck in another thread's query; `done` (the
store's: it closes that thread's connections) runs on the thread when the work is over.

The caller's thread waits on an event, which a signal interrupts: a handler that raises ends the
wait at once. Work left behind may still take effect later, so it must be safe to do again (the
stores' units of work are: a release, a removal, a message with its id).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from protocols.errors import StoreTimeout

T = TypeVar("T")


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


def within(
    seconds: float,
    work: Callable[[], T],
    what: str,
    *,
    done: Callable[[], None] | None = None,
    slow: tuple[float, Callable[[], None]] | None = None,
) -> T:
    """`work()`'s value, or what it raised, if it ends within `seconds`; else `StoreTimeout`
    naming `what` (the work goes on in the background: module doc). `slow`: (after how many
    seconds, what to call then) for a caller that says it is still waiting."""
    outcome: _Outcome[T] = _Outcome()

    def run() -> None:
        try:
            outcome.value = work()
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome.error = exc
        finally:
            outcome.done.set()
            if done is not None:  # tidying up after the work: never the caller's problem
                with contextlib.suppress(Exception):
                    done()

    threading.Thread(target=run, name=f"bounded: {what}", daemon=True).start()
    waited = 0.0
    if slow is not None and slow[0] < seconds and not outcome.done.wait(slow[0]):
        waited = slow[0]
        slow[1]()
    if not outcome.done.wait(max(0.0, seconds - waited)):
        raise StoreTimeout(
            f"{what}: the store did not answer within {seconds:g} s (it may still happen later; "
            "doing it again is safe)"
        )
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
