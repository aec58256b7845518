"""Code run in the child processes of the stress and crash tests, and helpers to inspect files.

Worker functions here are started by `multiprocessing` in fresh interpreters (the ``spawn``
context, or children forked from the ``forkserver``'s clean single-threaded server), never by
forking the pytest process. Every worker gets the test's config root as an argument and also sets
``CLAUDE_CONFIG_DIR`` to it first thing: a forkserver child inherits the environment of whichever
test started the server, not the current one.

Workers report through a `multiprocessing` queue or pipe. A worker that fails reports the
traceback instead of dying silently, so the test can show what went wrong.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
import random
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing import context as mp_context
from multiprocessing.connection import Connection
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from protocols import ClaimFailure, Mailbox, TaskBoard, TeamPaths
from protocols.fs import locks as locks_module
from protocols.fs.jsonio import TEMP_MARKER, temp_dir
from protocols.inbox import file as inbox_module
from protocols.watch.wakeup import InboxWatcher

TEAM = "t"
START_TIMEOUT_S = 60.0
ERROR_PREFIX = b"!"


def child_paths(root: str, team: str = TEAM) -> TeamPaths:
    """The team's paths in a child process, with ``CLAUDE_CONFIG_DIR`` set to the test's root."""
    os.environ["CLAUDE_CONFIG_DIR"] = root
    return TeamPaths(Path(root), team)


def forkserver_context() -> mp_context.ForkServerContext:
    """Children forked from a clean server that has `protocols` and the workers' modules
    imported: cheap to start (a ``spawn`` child imports them all again, ~0.4 s of CPU each).
    One server per pytest process, started by the first test that asks; `pg_procs` is
    imported where tests/pg is on the path (it is skipped where it is not)."""
    ctx = mp_context.ForkServerContext()
    ctx.set_forkserver_preload(["protocols", "procs", "pg_procs"])
    return ctx


def run_together(
    ctx: mp_context.BaseContext,
    workers: list[tuple[Callable[..., None], tuple[Any, ...]]],
    timeout_s: float,
) -> list[Any]:
    """Start every ``(function, args)`` at once and return their reports (in arrival order).

    Each function is called as ``function(start, results, *args)``: it waits at the `start`
    barrier (so all begin together, after the slow interpreter start-ups) and puts exactly one
    report on `results`. A report missing at the deadline fails the test (`queue.Empty`); a
    worker still alive then is killed.
    """
    start = ctx.Barrier(len(workers) + 1)
    results = ctx.Queue()
    processes = [ctx.Process(target=f, args=(start, results, *args)) for f, args in workers]
    for process in processes:
        process.start()
    deadline = time.monotonic() + timeout_s
    try:
        start.wait(START_TIMEOUT_S)
        reports = [results.get(timeout=max(0.1, deadline - time.monotonic())) for _ in processes]
    finally:
        for process in processes:
            process.join(max(0.1, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
    return reports


# inspecting an inbox from the test process


def live_items(paths: TeamPaths, agent: str) -> list[dict[str, Any]]:
    """The live inbox, parsed strictly (raises if it is not a JSON array of objects)."""
    items = json.loads(paths.inbox(agent).read_bytes())
    assert isinstance(items, list), f"the inbox of {agent} is not a JSON array"
    assert all(isinstance(i, dict) for i in items), f"the inbox of {agent} holds a non-object"
    return items


def archive_items(paths: TeamPaths, agent: str, torn_tail_ok: bool = False) -> list[dict[str, Any]]:
    """Every line of the archive, parsed strictly (raises on a torn or damaged line). With
    `torn_tail_ok`, a last line without its newline is left out instead: a writer killed in the
    middle of an append of more than a page leaves one, and the next append cuts it off
    (`protocols.fs.jsonio.append_durably`), which a strict read after that append checks."""
    try:
        data = paths.inbox_archive(agent).read_bytes()
    except FileNotFoundError:
        return []
    if torn_tail_ok and data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
    assert not data or data.endswith(b"\n"), f"the archive of {agent} ends in a torn line"
    return [json.loads(line) for line in data.splitlines()]


def orphan_temps(target: Path) -> list[str]:
    """Temporary files of `target` (see `protocols.fs.jsonio`) that exist right now: hidden beside
    it (written under its lock) or in ``.swarm-tmp/``."""
    found = [n for n in os.listdir(target.parent) if n.startswith(f".{target.name}{TEMP_MARKER}")]
    with contextlib.suppress(FileNotFoundError):
        names = os.listdir(temp_dir(target))
        found += [n for n in names if n.startswith(f"{target.name}{TEMP_MARKER}")]
    return sorted(found)


# mailbox stress


@dataclass
class SenderReport:
    sender: str
    sent: int = 0
    error: str | None = None


@dataclass
class ReaderReport:
    texts: list[str] = field(default_factory=list)
    short_marks: int = 0  # mark_read calls that marked fewer entries than were just read
    timed_out: bool = False
    error: str | None = None


def send_many(
    start: Barrier, results: Queue[Any], root: str, to: str, sender: str, count: int
) -> None:
    """Send `count` messages with unique texts ``<sender>:<n>`` to `to` once all workers start."""
    report = SenderReport(sender)
    try:
        mailbox = Mailbox(child_paths(root))
        start.wait(START_TIMEOUT_S)
        for n in range(count):
            mailbox.send(to, f"{sender}:{n}", sender=sender)
            report.sent += 1
    except Exception:
        report.error = traceback.format_exc()
    results.put(report)


def read_until(
    start: Barrier, results: Queue[Any], root: str, agent: str, expected: int, deadline_s: float
) -> None:
    """Wait for unread messages, record them and mark them read, until `expected` distinct texts."""
    report = ReaderReport()
    try:
        paths = child_paths(root)
        mailbox = Mailbox(paths)
        distinct: set[str] = set()
        with InboxWatcher(paths.inbox(agent)) as watcher:
            start.wait(START_TIMEOUT_S)
            deadline = time.monotonic() + deadline_s
            while len(distinct) < expected:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    report.timed_out = True
                    break
                entries = mailbox.wait(agent, remaining, watcher)
                report.texts.extend(e.text for e in entries)
                distinct.update(e.text for e in entries)
                if mailbox.mark_read(agent, entries) != len(entries):
                    report.short_marks += 1
    except Exception:
        report.error = traceback.format_exc()
    results.put(report)


def broadcast_many(
    start: Barrier, results: Queue[Any], root: str, me: str, count: int, read_every: int
) -> None:
    """Broadcast `count` messages ``<me>:<n>`` to ``"*"``, reading and marking my own inbox."""
    report = SenderReport(me)
    try:
        mailbox = Mailbox(child_paths(root))
        start.wait(START_TIMEOUT_S)
        for n in range(count):
            mailbox.send("*", f"{me}:{n}", sender=me)
            report.sent += 1
            if n % read_every == 0:
                mailbox.mark_read(me, mailbox.read_unread(me))
    except Exception:
        report.error = traceback.format_exc()
    results.put(report)


# crash rounds: the worker acknowledges each finished operation on a pipe until it is killed


def _until_killed(ack: Connection, step: Callable[[int], str | None]) -> None:
    """Run `step(0)`, `step(1)`, ... forever, sending each returned id on `ack` once done."""
    try:
        n = 0
        while True:
            done = step(n)
            if done is not None:
                ack.send_bytes(done.encode())
            n += 1
    except BaseException:
        ack.send_bytes(ERROR_PREFIX + traceback.format_exc().encode())
        raise


def write_until_killed(
    root: str, to: str, prefix: str, lock_timeout: float, ack: Connection
) -> None:
    """Send messages with ids ``<prefix>-<n>`` to `to`, acknowledging each after send() returns.

    Every third step also marks everything unread as read; with a small `compact_after` this
    moves entries into the archive often, so kills also land in the middle of compactions.
    """
    mailbox = Mailbox(child_paths(root), lock_timeout=lock_timeout, compact_after=4)

    def step(n: int) -> str | None:
        if n % 3 == 2:
            mailbox.mark_read(to, mailbox.read_unread(to))
            return None
        message_id = f"{prefix}-{n}"
        mailbox.send(to, f"text of {message_id}", sender="bob", message_id=message_id)
        return message_id

    _until_killed(ack, step)


def churn_tasks_until_killed(root: str, agent: str, lock_timeout: float, ack: Connection) -> None:
    """Create, link, claim, complete and edit tasks in a loop, acknowledging each operation."""
    board = TaskBoard(child_paths(root), lock_timeout=lock_timeout)
    rng = random.Random()
    created: list[str] = []

    def step(n: int) -> str | None:
        kind = n % 4
        if kind == 0 or not created:
            created.append(board.create(f"{agent} task {n}", "made to be killed").id)
            return f"create {created[-1]}"
        if kind == 1 and len(created) > 1:
            board.update(created[-1], addBlockedBy=[rng.choice(created[:-1])])
            return f"link {created[-1]}"
        if kind == 2:
            result = board.claim_next(agent)
            if result is None or not result.success or result.task is None:
                return "nothing to claim"
            board.update(result.task.id, status="completed", note=f"done at step {n}")
            return f"complete {result.task.id}"
        target = rng.choice(created)
        board.update(target, description=f"edited at step {n} " + "x" * rng.randrange(200))
        return f"edit {target}"

    _until_killed(ack, step)


def send_killed_as_the_lock_appears(root: str, to: str, before: bool) -> None:
    """Send, but SIGKILL this process in the narrowest windows of `FileGuard.acquire`: just
    before the lock directory is renamed into place as ``<inbox>.lock`` (`before`), or just
    after, before the directory's ctime is written into the ownership record."""
    rename = locks_module.rename_noreplace

    def rename_and_die(*args: Any) -> None:
        if not before:
            rename(*args)
        os.kill(os.getpid(), signal.SIGKILL)

    locks_module.rename_noreplace = rename_and_die
    Mailbox(child_paths(root)).send(to, "never stored", sender="bob")


def mark_read_killed_before_compacting(root: str, agent: str) -> None:
    """Mark every unread message read, compacting at once, but SIGKILL this process right after
    the read marks were written, before the live inbox was rewritten without those entries."""
    write = inbox_module.atomic_write_text

    def write_then_die(*args: Any, **kwargs: Any) -> None:
        write(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    inbox_module.atomic_write_text = write_then_die
    mailbox = Mailbox(child_paths(root), compact_after=0)
    mailbox.mark_read(agent, mailbox.read_unread(agent))


# task claims


@dataclass
class Claim:
    """One successful claim and the completion that followed (``time.monotonic_ns``)."""

    task_id: str
    worker: str
    claim_end: int
    complete_start: int


@dataclass
class ClaimReport:
    worker: str
    claims: list[Claim] = field(default_factory=list)
    open_blockers_seen: list[str] = field(default_factory=list)  # "task: blocker status"
    busy_answers: list[str] = field(default_factory=list)  # claim_next while holding a task
    refusals: list[str] = field(default_factory=list)  # claim_next refused a free worker
    timed_out: bool = False
    error: str | None = None


def claim_until_done(
    start: Barrier,
    results: Queue[Any],
    root: str,
    worker: str,
    probe_busy_every: int,
    deadline_s: float,
) -> None:
    """Claim the next task, check its blockers are completed, complete it; until none is pending.

    Every `probe_busy_every`-th claim, while still holding the task, asks `claim_next` again:
    the answer must be None (nothing free) or a refusal with `AGENT_BUSY`, never a second task.
    A pending task may be blocked by a task another worker holds: then the worker polls.
    """
    report = ClaimReport(worker)
    try:
        board = TaskBoard(child_paths(root))
        start.wait(START_TIMEOUT_S)
        deadline = time.monotonic() + deadline_s
        while True:
            if time.monotonic() > deadline:
                report.timed_out = True
                break
            result = board.claim_next(worker)
            claim_end = time.monotonic_ns()
            if result is None:
                if not any(task.status == "pending" for task in board.list()):
                    break
                time.sleep(0.005 + random.random() * 0.01)  # poll: a blocker is being worked on
                continue
            if not result.success or result.task is None:
                report.refusals.append(f"{result.reason}")
                continue
            task = result.task
            for blocker in task.blockedBy:
                seen = board.get(blocker)
                if seen is None or seen.status != "completed":
                    status = seen.status if seen else "missing"
                    report.open_blockers_seen.append(f"#{task.id}: #{blocker} {status}")
            if len(report.claims) % probe_busy_every == 0:
                again = board.claim_next(worker)
                if again is not None:
                    answer = "success" if again.success else str(again.reason)
                    report.busy_answers.append(answer)
            complete_start = time.monotonic_ns()
            board.update(task.id, status="completed")
            report.claims.append(Claim(task.id, worker, claim_end, complete_start))
    except Exception:
        report.error = traceback.format_exc()
    results.put(report)


@dataclass
class ClaimAnswer:
    """What one claim call answered, in plain values."""

    action: str
    success: bool
    task_id: str | None
    reason: ClaimFailure | None
    busy_with: list[str]


def claim_actions(
    start: Barrier, results: Queue[Any], root: str, agent: str, actions: list[tuple[str, str]]
) -> None:
    """Run ``("claim", id)``, ``("claim_next", "")`` and ``("complete", id)`` as `agent`.

    Reports one `ClaimAnswer` per claim action, or a traceback string if one raised.
    """
    answers: list[ClaimAnswer | str] = []
    try:
        board = TaskBoard(child_paths(root))
        start.wait(START_TIMEOUT_S)
        for action, task_id in actions:
            if action == "complete":
                board.update(task_id, status="completed")
                continue
            result = board.claim(task_id, agent) if action == "claim" else board.claim_next(agent)
            if result is None:
                answers.append(ClaimAnswer(action, False, None, None, []))
                continue
            found = result.task.id if result.task else None
            answers.append(
                ClaimAnswer(action, result.success, found, result.reason, result.busy_with)
            )
    except Exception:
        answers.append(traceback.format_exc())
    results.put(answers)


def claim_and_log(root: str, worker: str, log_path: str, deadline_s: float) -> None:
    """Claim, check the blockers, complete; until nothing is pending. Every step is a line in
    `log_path`, written before the next step, so a worker killed with SIGKILL at any moment
    leaves a log of what it did: ``claimed <id> <monotonic ns>``, ``early <id> <blocker> <status>`` (a blocker
    not completed right after the claim), ``completed <id>``, and ``done`` or ``timeout``."""
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log(line: str) -> None:
        os.write(fd, (line + "\n").encode())

    try:
        board = TaskBoard(child_paths(root))
        deadline = time.monotonic() + deadline_s
        while True:
            if time.monotonic() > deadline:
                log("timeout")
                return
            result = board.claim_next(worker)
            if result is None:
                if not any(task.status == "pending" for task in board.list()):
                    log("done")
                    return
                time.sleep(0.005 + random.random() * 0.01)  # poll: a blocker is being worked on
                continue
            if not result.success or result.task is None:
                log(f"refused {result.reason}")
                continue
            task = result.task
            log(f"claimed {task.id} {time.monotonic_ns()}")
            for blocker in task.blockedBy:
                seen = board.get(blocker)
                if seen is None or seen.status != "completed":
                    log(f"early {task.id} {blocker} {seen.status if seen else 'missing'}")
            board.update(task.id, status="completed")
            log(f"completed {task.id}")
    except Exception:
        log("error " + traceback.format_exc().replace("\n", " | "))
    finally:
        os.close(fd)


HOSTILE_FIRST = 9001  # ids of the hostile files `vandalise` plants


def _hostile(task_id: int) -> tuple[str, bytes | None]:
    """What `vandalise` plants as ``<task_id>.json``: a kind, and its bytes (None: not a file
    written with content)."""
    kinds: list[tuple[str, bytes | None]] = [
        ("torn", b'{"id": "%d", "subj' % task_id),
        ("wrong types", b'{"id": "%d", "subject": 5, "description": "", "status": "pending"}'),
        ("another id", json.dumps({"id": "1", "subject": "s", "description": ""}).encode()),
        ("link", None),
        ("fifo", None),
        ("nested", b"[" * 100_000 + b"]" * 100_000),
        ("directory", None),
        (
            "climbing blocker",
            json.dumps(
                {"id": str(task_id), "subject": "s", "description": "", "blockedBy": ["../x"]}
            ).encode(),
        ),
        ("not an object", json.dumps(list(range(200_000))).encode()),  # ~1.3 MB
    ]
    return kinds[(task_id - HOSTILE_FIRST) % len(kinds)]


def vandalise(
    start: Barrier, results: Queue[Any], root: str, outside: str, last_real: int, kinds: int
) -> None:
    """Plant hostile task files (`_hostile`) on the board and keep rewriting them (in place,
    by rename, removed and made again) until no real task (id <= `last_real`) is pending.
    Reports how many times it planted one, or a traceback."""
    planted = 0
    try:
        paths = child_paths(root)
        board = TaskBoard(paths)
        start.wait(START_TIMEOUT_S)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for task_id in range(HOSTILE_FIRST, HOSTILE_FIRST + kinds):
                _plant(paths.task(task_id), *_hostile(task_id), outside, planted)
                planted += 1
            if not any(t.status == "pending" and int(t.id) <= last_real for t in board.list()):
                break
            time.sleep(0.002)  # pace: the workers, not the vandal, should have the cores
    except Exception:
        results.put(traceback.format_exc())
        return
    results.put(planted)


def _plant(path: Path, kind: str, data: bytes | None, outside: str, round_: int) -> None:
    if kind in ("link", "fifo", "directory"):
        if not os.path.lexists(path):
            if kind == "link":
                os.symlink(outside, path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                os.mkdir(path)
        return
    assert data is not None
    if kind == "not an object" and path.exists():
        return  # big: written once (every worker reads it again at each change)
    if round_ % 3 == 0 and path.exists():
        path.unlink()  # removed, and made again below
    if round_ % 2 == 0:  # Claude Code's way: in place
        with open(path, "wb") as handle:
            handle.write(data)
    else:  # swarm's way: a new file renamed over it
        temp = path.with_name(f".{path.name}.vandal")
        temp.write_bytes(data)
        os.replace(temp, path)


def _hold_kernel_lock(target: str, ready: Event, release: Event) -> None:
    """Another swarm process holding a file's lock (its kernel part) until released."""
    fd = os.open(target, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    release.wait(30)


@contextlib.contextmanager
def another_process_holding(target: Path) -> Iterator[None]:
    """Inside: another process holds swarm's kernel lock of `target` (`flock` is per open
    file, so a thread of this process would not do: the guard's own checks see through it)."""
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(
        target=_hold_kernel_lock, args=(str(locks_module.flock_path_for(target)), ready, release)
    )
    holder.start()
    try:
        assert ready.wait(30), "the other process did not take the lock"
        yield
    finally:
        release.set()
        holder.join(30)
