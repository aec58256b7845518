"""How a teammate stops: the signals that start a stop, and the stop's bounded time.

SIGTERM, or SIGHUP (its pane closed under it), raises `Stop` in the main thread wherever it
waits: a task's command, a lock, the store's retries while the store is out of reach. A raise
that Python lost (the handler ran inside a finalizer: `protocols.stop_request`) is kept until
the teammate takes it (`begin`); a thread of the handlers' own wakes the teammate's wait
(`nudge`), whose loop raises it again (`check`). From then on the teammate is stopping
(`StopSignals`):

- a SIGHUP is ignored (a closing pane's, after its lead's SIGTERM);
- a second SIGTERM ends the process at once, exit status 143: what it started is killed, and its
  tasks are left where they are, for its lease or the lead to return (below). A stop that began
  otherwise (a SIGHUP, an approved shutdown) takes a SIGTERM as its first: said, and the next
  one ends it.

The stop hands back the teammate's tasks (after a signal; an approved shutdown handed them back
as it approved) and writes its status, on a thread of its own given `handback_seconds()` (5 s,
or ``$SWARM_HANDBACK_S``): a store that does not answer in that time (a PostgreSQL server gone,
paused or cut off; a task lock held by a paused process) cuts it short, the log says so
(`cut_short`), and the process exits anyway. Nothing is lost: on PostgreSQL the member's lease
runs out and a live member's sweep (or `swarm reap`) returns its tasks to pending at a new epoch,
so nothing it might still send is taken; on files the lead's reaping (or `swarm reap`) returns
them once its process is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

from protocols.pids import carrying_token
from protocols.printable import printable
from protocols.stop_request import StopRequest

DEFAULT_HANDBACK_S = 5.0
HANDBACK_ENV = "SWARM_HANDBACK_S"
SLOW_S = 0.5  # a hand-back that takes longer is said to be waiting for the store
EXIT_AT_ONCE = 128 + signal.SIGTERM  # a second SIGTERM's exit status, as a shell reports it


class Stop(BaseException):
    """Raised by the SIGTERM and SIGHUP handlers: stop after releasing what this teammate
    holds. (Not an `Exception`, so no handler meant for errors swallows it.)"""

    def __init__(self, why: str = "SIGTERM") -> None:
        super().__init__(why)
        self.why = why


class TeamGone(Stop):
    """The team's directory is gone: a Claude Code lead session (2.1.178 and later) deletes
    its team when it exits. The task list stays, so what this teammate held is released."""


def handback_seconds(env: Mapping[str, str] | None = None) -> float:
    """How long a stop gives its store: ``$SWARM_HANDBACK_S`` when it is a number of seconds
    above 0, else 5."""
    value = (os.environ if env is None else env).get(HANDBACK_ENV, "")
    try:
        seconds = float(value)
    except ValueError:
        return DEFAULT_HANDBACK_S
    return seconds if 0 < seconds < float("inf") else DEFAULT_HANDBACK_S


class StopSignals:
    """The teammate's SIGTERM and SIGHUP handlers (module doc), installed while the block runs
    and the previous ones put back after. `token`: its ``SWARM_PROCESS_TOKEN``, whose carriers
    (the commands it started) a second SIGTERM kills on the way out. `nudge`: called on a
    thread of its own after a signal that asked for a stop, to end the wait in progress."""

    def __init__(
        self, token: Callable[[], str] = lambda: "", nudge: Callable[[], None] = lambda: None
    ) -> None:
        self.stopping = False
        self.request = StopRequest(Stop)  # a signal's stop, until `begin` takes it
        self._terms = 0  # SIGTERMs since the stop began
        self._token = token
        self._nudge = nudge
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        # the relay reads the request's pipe until its write end is closed (`__exit__`)
        relay = threading.Thread(target=self._relay, args=(self.request.open(),), name="stop-relay")
        relay.daemon = True
        relay.start()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        self.request.close()

    def begin(self) -> None:
        """The stop has begun (an approved shutdown's, or a signal's): from now on a SIGTERM no
        longer raises `Stop`, and a signal's stop is taken."""
        self.stopping = True
        self.request.take()

    def check(self) -> None:
        """Raise the stop a signal asked for, if its own raise was lost (module doc)."""
        self.request.check()

    def _relay(self, read_end: int) -> None:
        try:
            while os.read(read_end, 64):
                self._nudge()
        except OSError:
            pass
        finally:
            os.close(read_end)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        is_term = signum == signal.SIGTERM
        if not self.stopping:
            self.stopping = True
            self._terms += is_term
            raise self.request.ask(signal.Signals(signum).name)
        if not is_term:
            return  # a closing pane's SIGHUP: the stop goes on
        self._terms += 1
        if self._terms == 1:
            _line("SIGTERM while stopping: the stop goes on; another SIGTERM ends it at once")
            return
        self._exit_now()

    def _exit_now(self) -> None:
        """A second SIGTERM: what it started is killed, and the process ends now."""
        _line(
            "a second SIGTERM: stopping at once; what it has not handed back is returned by "
            "its lease or the lead"
        )
        token = self._token()
        for pid in carrying_token(token) if token else []:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        os._exit(EXIT_AT_ONCE)


def _line(text: str) -> None:
    """A line in its pane or log, from a signal handler: written straight to the descriptor
    (the handler may have interrupted a ``print``, whose buffer it must not enter again)."""
    with contextlib.suppress(OSError):
        os.write(1, f"[{time.strftime('%H:%M:%S')}] {printable(text)}\n".encode())


def waiting_text(why: str | None, seconds: float) -> str:
    """What a stop says when its hand-back is slow (the store may be out of reach)."""
    start = f"stopping ({why})" if why else "stopping"
    return (
        f"{start}: waiting up to {seconds:g} s for the store to take back its tasks "
        "(another SIGTERM stops it at once)"
    )


def cut_short(why: str | None, store_kind: str, problem: str, handing_back: bool) -> str:
    """What a stop says when the store did not take its hand-back (or its status) in time."""
    start = f"stopped: {why}" if why else "stopped"
    if not handing_back:  # an approved shutdown: its tasks went back as it approved
        return f"{start}; its status could not be written: {problem}"
    if store_kind == "postgresql":
        after = (
            "its tasks go back to pending when its lease runs out (any live member's sweep, or "
            "swarm reap)"
        )
    else:
        after = "its tasks go back to pending when the lead (or swarm reap) finds it gone"
    return f"{start}; hand-back cut short: {problem}; {after}"
