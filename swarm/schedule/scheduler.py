"""Firing what is due, exactly once however many schedulers share the schedules.

A pass (`run_due`) looks at every schedule (the config root's files, and the stores of its
teams on PostgreSQL: `swarm.schedule.book.books`); one with a firing due since it was last
settled is taken under its lock (the file's, or its row's in the store; waiting `LOCK_WAIT_S` at
most: a scheduler that holds it is firing it), read again, decided again (`decide`), fired
(`swarm.schedule.firing`) and written back settled, all under that lock. A second scheduler
finds it settled and does nothing; a scheduler killed part way leaves it unsettled and its lock
released (by the kernel, or by the server when its connection drops), and the next pass does
the firing again, which the actions make harmless.

Firings missed while no scheduler ran: a firing more than `GRACE` late is missed; the
schedule's ``missed`` says whether the last missed one runs once (``once``) or none does
(``skip``); either way they are recorded in its history. `serve` runs a pass at the start of
every minute until told to stop: `swarm scheduler`, and a thread of `swarm lead` and of `swarm
host serve` (`in_background`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from protocols.clock import now_iso
from protocols.errors import Error, LockTimeout, StoreUnavailable
from swarm.schedule.book import books
from swarm.schedule.firing import fire
from swarm.schedule.model import Firing, Outcome, Schedule

GRACE = timedelta(minutes=5)  # a firing this late still fires as usual
LOCK_WAIT_S = 1.0
AGAIN = (StoreUnavailable, LockTimeout)  # the next pass fires it instead
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    """What a pass does with one schedule at one instant: the firing to do (None: none), the
    firings missed and not done, and the instant it is settled up to (None: nothing due)."""

    fire: datetime | None = None
    missed: list[datetime] = field(default_factory=list)
    settle: datetime | None = None


def decide(schedule: Schedule, now: datetime) -> Decision:
    """What is due for `schedule` at `now` (module doc)."""
    since = instant(schedule.settled or schedule.created) or now
    firings = list(schedule.cron_of().firings(since, now))
    if not firings:
        return Decision()
    latest = firings[-1]
    if now - latest <= GRACE or schedule.missed == "once":
        return Decision(latest, firings[:-1], latest)
    return Decision(None, firings, latest)


@dataclass(frozen=True)
class Done:
    """One firing a pass settled, as `swarm scheduler` prints it."""

    schedule: str
    what: str
    firing: Firing

    def to_json(self) -> dict[str, object]:
        return {"schedule": self.schedule, "what": self.what, **self.firing.model_dump()}

    def line(self) -> str:
        """``s1a2b3c4 fired (task "triage", due 2026-12-01T08:00:00+00:00): added task #1``"""
        firing = self.firing
        return f"{self.schedule} {firing.outcome} ({self.what}, due {firing.due}): {firing.detail}"


def run_due(root: Path, now: datetime, by: str, stores: Iterable[str] = ()) -> list[Done]:
    """One pass at `now` (UTC) over the schedules under `root` and in the stores its teams on
    PostgreSQL (and `stores`) name (`swarm.schedule.book.books`); what it settled."""
    done: list[Done] = []
    for book in books(root, stores):
        # the lock held by another scheduler (it fires it), or the store away: the next pass
        with contextlib.suppress(*AGAIN):
            for schedule in book.all():
                if decide(schedule, now).settle is None:  # the usual case, without the lock
                    continue
                with contextlib.suppress(*AGAIN):
                    fired = functools.partial(_settle, now=now, by=by, root=root, done=done,
                                              store=book.store)  # fmt: skip
                    book.update(schedule.id, fired, LOCK_WAIT_S)
    return done


def _settle(
    schedule: Schedule,
    *,
    now: datetime,
    by: str,
    root: Path,
    done: list[Done],
    store: str | None,
) -> Schedule:
    decision = decide(schedule, now)  # again, under the lock: another pass may have settled it
    if decision.settle is None:
        return schedule
    records: list[Firing] = []
    if decision.missed:
        first, last = decision.missed[0], decision.missed[-1]
        count = len(decision.missed)
        span = _when(first) if count == 1 else f"{_when(first)} to {_when(last)}"
        detail = f"{count} firing{'s' * (count != 1)} missed ({span}): no scheduler ran"
        records.append(Firing(due=last.isoformat(), at=now_iso(), by=by, outcome="skipped",
                              detail=detail))  # fmt: skip
    if decision.fire is not None:
        outcome: Outcome = "fired"
        try:
            said = fire(schedule, decision.fire, root, store)
        except AGAIN:
            raise  # nothing settled: the next pass
        except (Error, OSError) as exc:  # a team gone, a member unknown, a bad file
            said, outcome = str(exc), "failed"
        records.append(Firing(due=decision.fire.isoformat(), at=now_iso(), by=by,
                              outcome=outcome, detail=said))  # fmt: skip
    done.extend(Done(schedule.id, schedule.what(), r) for r in records)
    return schedule.model_copy(
        update={"settled": decision.settle.isoformat(), "history": schedule.history + records}
    )


def runner_name(kind: str) -> str:
    """Who fires, as the history records it: ``swarm scheduler on HOST (pid N)``."""
    return f"{kind} on {socket.gethostname()} (pid {os.getpid()})"


def serve(
    root: Path,
    stop: threading.Event,
    by: str,
    say: Callable[[Done], None],
    stores: Iterable[str] = (),
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """A pass at the start of every minute until `stop` is set; `say` gets each firing."""
    while not stop.is_set():
        for one in run_due(root, clock(), by, stores):
            say(one)
        now = clock()  # after the pass, however long it took
        stop.wait(60 - now.second - now.microsecond / 1e6 + 0.2)  # the next minute has begun


@contextlib.contextmanager
def in_background(
    root: Path, kind: str, say: Callable[[Done], None], stores: Iterable[str] = ()
) -> Iterator[None]:
    """`serve` on a daemon thread for as long as the context lasts (`swarm lead`, `swarm host
    serve`, with their team's store); an error in a pass is logged, never raised into the host
    process, and the next minute tries again."""
    urls = list(stores)
    stop = threading.Event()
    by = runner_name(kind)

    def run() -> None:
        while not stop.is_set():
            try:
                serve(root, stop, by, say, urls)
            except Exception:  # the thread must not die of it: the host would fire nothing
                log.exception("a pass over the schedules failed; the next minute tries again")
                stop.wait(60)

    thread = threading.Thread(target=run, name="swarm-scheduler", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)


def instant(text: str) -> datetime | None:
    """An ISO 8601 time (UTC when it names no zone); None if `text` is none."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _when(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M UTC")
