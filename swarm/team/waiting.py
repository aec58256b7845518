"""Waiting for something to happen in a team, woken by inotify (`protocols.watch.wakeup`) or, on a
PostgreSQL team, by its notifications (`protocols.pg.watch`), never by a sleep loop: a task to
be completed, every task to be completed, a member to be idle, or a new message in an inbox.
What `swarm wait` runs, for scripts and agents that would otherwise poll.

Each condition is checked when a watched file changes and at each rescan (the watcher's safety
net), until it holds, fails for good (a failed task, a dead member), or the time is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocols.inbox.entry import InboxEntry
from protocols.paths import TeamPaths
from protocols.store.selection import STATUS, open_store
from protocols.values import MemberState, TaskStatus
from protocols.watch.wakeup import InboxWatcher
from swarm.errors import SwarmError
from swarm.team.liveness import liveness

MET, FAILED, TIMED_OUT = "met", "failed", "timed out"


@dataclass(frozen=True)
class Outcome:
    state: str  # met | failed | timed out
    detail: str
    messages: tuple[InboxEntry, ...] = ()


Check = Callable[[], Outcome | None]  # None: not yet


@dataclass(frozen=True)
class Watched:
    """What wakes a wait: these members' inboxes, the task board, the members (the team file
    and their status)."""

    inboxes: tuple[str, ...] = ()
    board: bool = False
    members: bool = False


def watcher(paths: TeamPaths, watched: Watched) -> Any:
    """A watcher of `watched` in the team's store: inotify on files, LISTEN on PostgreSQL."""
    store = open_store(paths)
    if store.kind == "files":
        files = tuple(paths.inbox(n) for n in watched.inboxes)
        files += (paths.config,) if watched.members else ()
        folders = ((paths.tasks_dir,) if watched.board else ()) + (
            (paths.agents_dir,) if watched.members else ()
        )
        return InboxWatcher(*files, directories=folders)
    status = [STATUS] if watched.members else []
    return store.watcher(inboxes=[*watched.inboxes, *status], board=watched.board)


def wait_until(check: Check, paths: TeamPaths, watched: Watched, timeout: float) -> Outcome:
    """Run `check` now and on every change of what is `watched`, until it says something or
    `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    with watcher(paths, watched) as waker:
        while True:
            waker.clear()
            found = check()
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                return Outcome(TIMED_OUT, f"not within {timeout:g} s")
            waker.wait(left)


def task_done(paths: TeamPaths, task_id: str) -> Check:
    board = open_store(paths).task_board()
    if board.get(task_id) is None:
        raise SwarmError(f"no task #{task_id} in team {paths.team!r}")

    def check() -> Outcome | None:
        task = board.get(task_id)
        if task is None:
            return Outcome(FAILED, f"task #{task_id} was deleted")
        if task.status == TaskStatus.COMPLETED:
            return Outcome(MET, f"#{task.id} completed: {task.subject}")
        if task.failed:
            return Outcome(FAILED, f"#{task.id} failed: {task.failure}")
        return None

    return check


def all_done(paths: TeamPaths) -> Check:
    board = open_store(paths).task_board()

    def check() -> Outcome | None:
        tasks = board.list()
        failed = [t for t in tasks if t.failed]
        if failed:
            return Outcome(FAILED, "; ".join(f"#{t.id} failed: {t.failure}" for t in failed))
        if all(t.status == TaskStatus.COMPLETED for t in tasks):
            return Outcome(MET, f"all {len(tasks)} tasks completed")
        return None

    return check


def member_idle(paths: TeamPaths, name: str) -> Check:
    team = open_store(paths).team_file()
    team.load().require(name)

    def check() -> Outcome | None:
        member = team.load().member(name)
        if member is None:
            return Outcome(FAILED, f"{name} left the team")
        state = liveness(paths).state(member)
        if state.gone:
            why = "stopped (swarm stop)" if state == MemberState.STOPPED else "dead"
            return Outcome(FAILED, f"{name} is {why}: its process is gone")
        status = open_store(paths).read_status(name)
        if status is not None and status.state == MemberState.IDLE:
            return Outcome(MET, f"{name} is idle")
        return None

    return check


def unread_message(paths: TeamPaths, name: str) -> Check:
    """An unread message in `name`'s inbox (at once if one is there already)."""
    open_store(paths).team_file().load().require(name)
    mailbox = open_store(paths).mailbox()

    def check() -> Outcome | None:
        unread = tuple(mailbox.peek_unread(name))  # a look without the inbox's lock
        if unread:
            return Outcome(MET, f"{len(unread)} unread message(s) for {name}", unread)
        return None

    return check
