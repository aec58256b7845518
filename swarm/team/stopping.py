"""Stopping several members at once while a person watches (`swarm down`, `swarm stop`, `swarm
team delete --force`), and deleting a team's files.

`stop_together` asks every member named to shut down (the shutdown protocol, each in a thread of
its own, so ten members take one wait, not ten), tells `progress` each departure as it happens
and, every `REMIND_S` seconds, who is still awaited; whoever has not answered within the wait
is stopped anyway. Ctrl-C is obeyed at once: the waits are abandoned (their threads are daemons:
a wait writes nothing), members whose answer came and who are being stopped are let finish (at
most the few seconds a stop takes; a second Ctrl-C does not wait for them either), and
`StopInterrupted` says who went and who was only asked. Running the command again finishes the
job: a member that approved meanwhile has stopped, one that did not is asked again.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protocols.errors import Error
from protocols.fs import safefs
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.team.lifecycle import NotRemoved, ShutdownResult, request_shutdown
from swarm.team.liveness import liveness
from swarm.team.members import stop_member

REMIND_S = 3.0  # how often `progress` hears who is still awaited
FINISH_S = 10.0  # on Ctrl-C: how long members already leaving are given to be gone
STOP_REASON = "the team is being stopped (swarm stop); it will be started again"
DELETE_WAIT_S = 10.0  # how long `swarm team delete --force` waits for the members' answers


class StopInterrupted(SwarmError):
    """Ctrl-C while members were being stopped; the message says who went and who was only
    asked, and how to finish. Exit code 130, as a shell gives a command ended by SIGINT."""

    exit_code = 130

    def __init__(self, message: str, results: dict[str, ShutdownResult | Error]) -> None:
        super().__init__(message)
        self.results = results


@dataclass
class _Waiter:
    """One member being asked: its thread, whether its request is written (a paused process
    holding its inbox's lock can hold that up), and whether its answer came (it is being
    stopped)."""

    name: str
    thread: threading.Thread | None = None
    asked: bool = False
    answered: bool = False


def stop_together(
    paths: TeamPaths,
    names: Sequence[str],
    reason: str,
    wait_s: float,
    progress: Callable[[str], None] | None = None,
    *,
    keep: bool = False,
    what: str = "stop",
    clock: Callable[[], float] = time.monotonic,
) -> list[ShutdownResult | Error]:
    """`request_shutdown` with force of every member in `names`, all at once; a result per
    name, in order (an `Error` for one that could not be stopped). `keep`: the members stay in
    the team, stopped (`swarm stop`), rather than being removed. `what` names the command in
    the note of an interruption (``swarm down`` can be run again)."""
    if not names:
        return []
    say = progress or (lambda _line: None)
    results: dict[str, ShutdownResult | Error] = {}
    done: queue.Queue[tuple[str, ShutdownResult | Error]] = queue.Queue()
    waiters = {name: _Waiter(name) for name in names}

    def ask(waiter: _Waiter) -> None:
        def asked() -> None:
            waiter.asked = True

        def answered() -> None:
            waiter.answered = True

        try:
            result: ShutdownResult | Error = request_shutdown(
                paths,
                waiter.name,
                reason,
                wait_s,
                True,
                keep=keep,
                on_asked=asked,
                on_answer=answered,
            )
        except Error as exc:
            result = exc
        done.put((waiter.name, result))

    say(f"asking {_names(names)} to shut down; waiting up to {wait_s:g} s for the answers")
    started = clock()
    for waiter in waiters.values():
        waiter.thread = threading.Thread(
            target=ask, args=(waiter,), name=f"stop-{waiter.name}", daemon=True
        )
        waiter.thread.start()
    try:
        reminded = started
        while len(results) < len(names):
            try:
                name, result = done.get(timeout=REMIND_S / 3)
            except queue.Empty:
                if clock() - reminded >= REMIND_S:
                    reminded = clock()
                    say(_still(names, results, waiters, clock() - started, wait_s))
                continue
            results[name] = result
            say(departure_text(name, result, wait_s))
    except KeyboardInterrupt:
        _let_leavers_finish(waiters, results, done)
        text = _interrupted(names, results, waiters, what, keep)
        raise StopInterrupted(text, dict(results)) from None
    return [results[name] for name in names]


def _let_leavers_finish(
    waiters: dict[str, _Waiter],
    results: dict[str, ShutdownResult | Error],
    done: queue.Queue[tuple[str, ShutdownResult | Error]],
) -> None:
    """Wait (at most `FINISH_S`, and not past a second Ctrl-C) for the members whose answer
    came: they are being stopped and removed, and that is best not cut in half."""
    deadline = time.monotonic() + FINISH_S
    try:
        for waiter in waiters.values():
            if waiter.answered and waiter.thread is not None and waiter.name not in results:
                waiter.thread.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:
        pass
    while not done.empty():
        name, result = done.get_nowait()
        results[name] = result


def departure_text(name: str, result: ShutdownResult | Error, wait_s: float) -> str:
    """What happened to one member, in a line."""
    if isinstance(result, NotRemoved):
        return printable_line(str(result))  # it names the member
    if isinstance(result, Error):
        return printable_line(f"{name}: could not be stopped: {result}")
    why = f": {result.reason}" if result.reason else ""
    text = {
        "approved": "agreed to shut down; stopped",
        "rejected": f"refused to shut down{why}; stopped",
        "no-answer": f"did not answer within {wait_s:g} s; stopped",
        "dead": "had already stopped",
        "removed": "an MCP session; removed",
    }.get(result.outcome, f"{result.outcome}{why}")
    return printable_line(f"{name}: {text}")


def _still(
    names: Sequence[str],
    results: dict[str, ShutdownResult | Error],
    waiters: dict[str, _Waiter],
    elapsed: float,
    wait_s: float,
) -> str:
    awaited = [n for n in names if n not in results and not waiters[n].answered]
    leaving = [n for n in names if n not in results and waiters[n].answered]
    parts = []
    if awaited:
        left = max(0.0, wait_s - elapsed)
        then = f"{left:.0f} s before they are stopped" if left else "stopping them now"
        parts.append(f"still waiting for {_names(awaited)} ({then})")
    if leaving:
        parts.append(f"{_names(leaving)} answered, stopping")
    return printable_line("; ".join(parts) + " (Ctrl-C to stop waiting)")


def _interrupted(
    names: Sequence[str],
    results: dict[str, ShutdownResult | Error],
    waiters: dict[str, _Waiter],
    what: str,
    keep: bool,
) -> str:
    gone = [n for n in names if isinstance(results.get(n), ShutdownResult)]
    failed = [n for n in names if isinstance(results.get(n), Error)]
    asked = [n for n in names if n not in results and waiters[n].asked]
    unasked = [n for n in names if n not in results and not waiters[n].asked]
    lines = ["interrupted"]
    if gone:
        lines.append(f"stopped: {_names(gone, every=True)}")
    if failed:
        lines.append(f"could not be stopped: {_names(failed, every=True)}")
    if asked:
        lines.append(
            f"asked to shut down, still running: {_names(asked, every=True)} "
            "(each stops by itself if it agrees)"
        )
    if unasked:
        lines.append(
            f"not asked yet (its request was still being written): {_names(unasked, every=True)}"
        )
    kept = "the team's files are kept" if not keep else "nothing was deleted"
    lines.append(f"{kept}; run `{what}` again to finish (--wait 0 stops the rest at once)")
    return printable_line("; ".join(lines))


def _names(names: Sequence[str], every: bool = False) -> str:
    if every or len(names) <= 5:
        return ", ".join(names)
    return f"{', '.join(names[:5])} and {len(names) - 5} more"


def stop_team(
    paths: TeamPaths, wait_s: float, progress: Callable[[str], None] | None = None
) -> list[tuple[str, ShutdownResult | Error]]:
    """`swarm stop`: every live member stopped and kept in the team, marked stopped, with the
    tasks it held still its own (`request_shutdown` with `keep`); the files stay."""
    names = live_names(paths)
    results = stop_together(
        paths, names, STOP_REASON, wait_s, progress, keep=True, what="swarm stop"
    )
    return list(zip(names, results, strict=True))


def live_names(paths: TeamPaths) -> list[str]:
    """The teammates whose process runs (working or idle), in the team's order."""
    judge = liveness(paths)
    return [
        m.name
        for m in open_store(paths).team_file().load().members
        if m.name != LEAD_NAME and judge.state(m).live
    ]


def delete_team(
    paths: TeamPaths,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    wait_s: float = DELETE_WAIT_S,
    what: str = "swarm team delete --force",
) -> list[ShutdownResult]:
    """Remove ``teams/<team>`` and ``tasks/<team>``. Refuses while members are alive, unless
    `force`, which shuts them down first (`stop_together`: the protocol, then stopping those
    that do not go within `wait_s`; Ctrl-C raises `StopInterrupted` and deletes nothing)."""
    names = live_names(paths)
    if names and not force:
        raise SwarmError(
            f"team {paths.team!r} has live members ({', '.join(names)}); "
            "shut them down first (swarm shutdown NAME), or use --force"
        )
    outcomes = stop_together(paths, names, "the team is being deleted", wait_s, progress, what=what)
    failed = [o for o in outcomes if isinstance(o, Error)]
    if failed:
        raise failed[0]
    for member in open_store(paths).team_file().load().members:  # stopped, dead or starting:
        if member.name != LEAD_NAME:  # what they left running
            stop_member(paths, member)
    remove_team_files(paths)
    return [o for o in outcomes if not isinstance(o, Error)]


def remove_team_files(paths: TeamPaths) -> None:
    """Delete what the team has in its store and on disk (safe to run again on what is left
    of a deletion cut short)."""
    store = open_store(paths)
    if store.kind != "files" or safefs.exists(paths.config):
        store.delete_team()  # PostgreSQL: the team's rows; files: the directories below
    safefs.rmtree(paths.team_dir, missing_ok=True)  # its pointer file, logs
    with contextlib.suppress(OSError):
        safefs.rmtree(paths.tasks_dir, missing_ok=True)
    with contextlib.suppress(OSError):  # swarm's caches of what was just deleted
        safefs.rmtree(paths.record_summaries, missing_ok=True)
    with contextlib.suppress(OSError):
        safefs.unlink(paths.task_summary, missing_ok=True)


def leftovers(paths: TeamPaths) -> bool:
    """Whether a files team whose config is gone left files behind (a deletion cut short)."""
    return paths.store is None and (safefs.exists(paths.team_dir) or safefs.exists(paths.tasks_dir))
