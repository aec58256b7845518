"""Stopping a team's processes when its store is out of reach (a PostgreSQL server gone, paused
or cut off): `swarm shutdown --force` and `swarm down` on a dead store.

Nothing that needs the store can be done then: no member can be asked to shut down (the request
is a message in the store), no member entry removed, no task returned. What can be done is on
this machine: every teammate holds its instance lock (`teammate.instance`) while it runs, and
the lock file names its pid; a lock that is held is a process that is running now, never a pid
that was reused. `stop_here` sends it SIGTERM (its stop hands its tasks back within a bounded
time, cut short on a dead store: `teammate.stopping`), waits for the lock to be let go, and
sends SIGKILL past that. The member's entry and its tasks stay in the store: its lease returns
the tasks when the store is back, and running the same command again then finishes the job.

`reach` runs one piece of store work given `STORE_CHECK_S` seconds and turns a store that does
not answer into `StoreOutOfReach`, so a command says so in seconds instead of waiting out the
store's own retries.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from protocols.errors import StoreUnavailable
from protocols.fs.locks import FLOCK_DIR
from protocols.names import validate_name
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.team.lifecycle import ShutdownResult
from teammate.instance import instance_lock
from teammate.stopping import handback_seconds

T = TypeVar("T")

UNREACHABLE = "store-unreachable"  # a shutdown's outcome when the store did not answer
STORE_CHECK_S = 5.0  # how long a command waits for the store before saying it is out of reach
KILL_GRACE_S = 5.0  # past its hand-back's time, how long a stopping teammate has to exit
# (its threads that wait on the store are given a second or so each as it goes)
POLL_S = 0.05
INSTANCE_SUFFIX = ".instance"


class StoreOutOfReach(SwarmError):
    """The team's store did not answer in time: nothing that needs it was done."""


@dataclass(frozen=True)
class StoppedHere:
    """A teammate process stopped on this machine without its store."""

    name: str
    pid: str
    exited: bool  # False: it still held its lock after SIGKILL (it is in the kernel's hands)
    killed: bool  # it did not exit on SIGTERM in time and was sent SIGKILL


def reach(paths: TeamPaths, work: Callable[[], T], what: str) -> T:
    """`work()` on the team's store within `STORE_CHECK_S` seconds, else `StoreOutOfReach`."""
    try:
        return open_store(paths).within(STORE_CHECK_S, work, what)
    except StoreUnavailable as exc:
        raise StoreOutOfReach(f"team {paths.team!r}: its store is out of reach ({exc})") from exc


def running_here(paths: TeamPaths) -> dict[str, str]:
    """The team's teammates running on this machine now (their instance locks are held): name
    to pid, as each lock file says it."""
    lock_dir = paths.team_dir / FLOCK_DIR
    try:
        entries = sorted(os.listdir(lock_dir))
    except OSError:
        return {}
    found = {}
    for entry in entries:
        name = entry.removesuffix(INSTANCE_SUFFIX)
        if entry.endswith(INSTANCE_SUFFIX) and (pid := holder(paths, name)) is not None:
            found[name] = pid
    return found


def holder(paths: TeamPaths, name: str) -> str | None:
    """The pid of the process holding `name`'s instance lock; None when nobody holds it."""
    validate_name(name, "agent name")
    with instance_lock(paths, name) as other:
        return other


def stop_here(paths: TeamPaths, name: str, pid: str) -> StoppedHere:
    """SIGTERM `name`'s process (`pid`, the holder of its instance lock), give its stop
    `handback_seconds()` and `KILL_GRACE_S` more to let go of the lock, then SIGKILL it."""
    killed = False
    for signum, seconds in (
        (signal.SIGTERM, handback_seconds() + KILL_GRACE_S),
        (signal.SIGKILL, KILL_GRACE_S),
    ):
        if _gone(paths, name, pid):
            return StoppedHere(name, pid, True, killed)
        if pid.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signum)
        killed = signum == signal.SIGKILL
        if _let_go(paths, name, pid, seconds):
            return StoppedHere(name, pid, True, killed)
    return StoppedHere(name, pid, False, killed)


def _let_go(paths: TeamPaths, name: str, pid: str, seconds: float) -> bool:
    """Whether `name`'s process let go of its lock and exited (it lets go a moment before it
    exits) within `seconds`."""
    deadline = time.monotonic() + seconds
    while not _gone(paths, name, pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)  # a lock has no event to wait on; its holder's exit frees it
    return True


def _gone(paths: TeamPaths, name: str, pid: str) -> bool:
    return holder(paths, name) is None and not (pid.isdigit() and pid_alive(int(pid)))


def stopped_text(stopped: StoppedHere) -> str:
    """What was done to one process, for a person."""
    how = "SIGKILL after SIGTERM" if stopped.killed else "SIGTERM"
    if not stopped.exited:
        return f"{stopped.name}: sent pid {stopped.pid} {how}; it is still running"
    return f"{stopped.name}: stopped pid {stopped.pid} on this machine ({how})"


STAYS = (
    "its member entry and its tasks stay in the store until it answers again (the lease returns "
    "the tasks then); run this again once the store is back to finish"
)


def shutdown_without_store(paths: TeamPaths, name: str) -> ShutdownResult:
    """`swarm shutdown --force NAME` on a store out of reach: stop its process if it runs on
    this machine; the member stays (`STAYS`), so the result says it was not stopped."""
    pid = holder(paths, name)
    if pid is None:
        why = f"no process of {name}'s runs on this machine; {STAYS}"
        return ShutdownResult(name, UNREACHABLE, why, False, [])
    stopped = stop_here(paths, name, pid)
    why = f"{stopped_text(stopped).removeprefix(name + ': ')}; {STAYS}"
    return ShutdownResult(name, UNREACHABLE, why, False, [])


def down_without_store(paths: TeamPaths) -> list[StoppedHere]:
    """`swarm down` or `swarm stop` on a store out of reach: stop every teammate of the team
    running on this machine, together (each gets its hand-back's time), delete nothing."""
    running = running_here(paths)
    if not running:
        return []
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(running)) as pool:
        return list(pool.map(lambda item: stop_here(paths, *item), running.items()))
