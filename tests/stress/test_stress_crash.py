"""kill -9 at random moments loses nothing acknowledged, tears no file, and blocks nobody.

- Writer processes are killed with SIGKILL at random moments, 150 rounds. A writer sends
  messages (and now and then marks them read, so compactions into the archive are killed too)
  and acknowledges each id on a pipe once `send()` returned. After every kill: the live inbox and
  every archive line parse; every acknowledged id is stored (live + archive); no id is stored
  twice, except in the one state a kill between "append to archive" and "rewrite the live file"
  leaves (the entry read in the live file and in the archive), which the next compaction
  resolves. Then the test process, as the next writer, sends with a lock timeout well inside the
  10 s stale window: a lock directory left by the killed writer is recognised at once as a dead
  swarm holder's, and the send removes the killed writer's orphan temporary files.
- Two kills at chosen points (the child SIGKILLs itself there), the narrow windows a random
  kill hits only now and then: right after a writer made the lock directory, before it recorded
  owning it (the next writer must still not wait out the stale window); and right after a
  reader's compaction appended to the archive, before the live inbox was rewritten (no message
  may be stored twice, nor handed out unread again once archived as read).
- Task-board workers (create, link, claim, complete, edit) are killed the same way: every task
  file still parses and validates, and the list and task locks they held are taken over at once.
- Claude Code's own lock directories: a stale one (11 s old) is removed and the send succeeds; a
  fresh one held past the lock timeout makes the send raise `LockTimeout` with nothing written.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import context as mp_context
from pathlib import Path
from typing import Any

import pytest
from procs import (
    ERROR_PREFIX,
    archive_items,
    churn_tasks_until_killed,
    forkserver_context,
    live_items,
    mark_read_killed_before_compacting,
    orphan_temps,
    send_killed_as_the_lock_appears,
    write_until_killed,
)

from protocols import Mailbox, TaskBoard, TeamFile, TeamPaths
from protocols.errors import LockTimeout
from protocols.fs.locks import STALE_S, lock_dir_for
from protocols.tasks.model import Task

pytestmark = pytest.mark.slow

WRITER_ROUNDS = 150
TASK_ROUNDS = 30
MAX_KILL_DELAY_S = 0.02
FIRST_ACK_TIMEOUT_S = 30.0
# well inside the 10 s stale window: a lock left by a dead swarm process must not make us wait it out
NEXT_WRITER_LOCK_TIMEOUT_S = 3.0
assert NEXT_WRITER_LOCK_TIMEOUT_S < STALE_S


@dataclass
class Killed:
    """What one killed worker acknowledged before it died."""

    acks: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_and_kill(
    ctx: mp_context.ForkServerContext,
    target: Callable[..., None],
    args: tuple[Any, ...],
    delay_s: float,
) -> Killed:
    """Start `target(*args, ack)`, wait for its first acknowledgement, SIGKILL it `delay_s` later.

    Returns every acknowledgement it sent (a pipe write is one system call, so a kill never
    leaves half of one) and any traceback it reported instead.
    """
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=target, args=(*args, sender))
    process.start()
    sender.close()
    try:
        assert receiver.poll(FIRST_ACK_TIMEOUT_S), "the worker acknowledged nothing"
        time.sleep(delay_s)  # the random kill moment
        process.kill()
    finally:
        process.kill()
        process.join()  # reaped: its pid is gone, as a dead lock holder's pid is
    killed = Killed()
    while receiver.poll():
        try:
            ack = receiver.recv_bytes()
        except EOFError:
            break
        if ack.startswith(ERROR_PREFIX):
            killed.errors.append(ack[len(ERROR_PREFIX) :].decode())
        else:
            killed.acks.append(ack.decode())
    receiver.close()
    assert killed.errors == [], "\n".join(killed.errors)
    assert process.exitcode == -9, f"the worker ended on its own (exit code {process.exitcode})"
    return killed


def test_writers_killed_at_random_moments_lose_nothing_acknowledged(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    ctx = forkserver_context()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    inbox = paths.inbox("alice")
    next_writer = Mailbox(paths, lock_timeout=NEXT_WRITER_LOCK_TIMEOUT_S)
    acknowledged: set[str] = set()
    probes: set[str] = set()
    locks_left = temps_left = unrecorded_after_kill = 0

    for round_no in range(WRITER_ROUNDS):
        where = f"round {round_no} (seed {seed})"
        killed = run_and_kill(
            ctx,
            write_until_killed,
            (str(config_root), "alice", f"r{round_no}", 30.0),
            rng.uniform(0, MAX_KILL_DELAY_S),
        )
        acknowledged.update(killed.acks)

        live = live_items(paths, "alice")  # parses, or the test fails here
        archive = archive_items(paths, "alice", torn_tail_ok=True)  # cut by the next append
        live_ids = Counter(i["id"] for i in live)
        archive_ids = Counter(i["id"] for i in archive)
        assert max(live_ids.values(), default=1) == 1, f"{where}: an id twice in the live inbox"
        assert max(archive_ids.values(), default=1) == 1, f"{where}: an id twice in the archive"
        missing = (acknowledged | probes) - set(live_ids) - set(archive_ids)
        assert not missing, f"{where}: acknowledged but not stored: {sorted(missing)[:10]}"
        # the record lags the live inbox only by what the killed writer had not appended yet
        unrecorded_after_kill += bool(set(live_ids) - set(archive_ids))

        # the next writer: takes the lock at once, clears the orphans, and records what the
        # killed one had written to the inbox but not to the record
        locks_left += lock_dir_for(inbox).exists()
        temps_left += len(orphan_temps(inbox))
        probe = f"probe-{round_no}"
        next_writer.send("alice", "after the kill", sender="team-lead", message_id=probe)
        probes.add(probe)
        assert orphan_temps(inbox) == [], where
        assert not lock_dir_for(inbox).exists(), where
        recorded = {i["id"] for i in archive_items(paths, "alice")}
        unrecorded = (acknowledged | probes) - recorded
        assert not unrecorded, f"{where}: not in the record: {sorted(unrecorded)[:10]}"

    # every message is in the record exactly once, and nothing live is missing from it
    next_writer.compact("alice")
    stored = Counter(i["id"] for i in archive_items(paths, "alice"))
    assert {i for i, n in stored.items() if n > 1} == set()
    assert acknowledged | probes <= set(stored)
    assert {i["id"] for i in live_items(paths, "alice")} <= set(stored)
    assert orphan_temps(inbox) == []
    print(
        f"seed {seed}: {len(acknowledged)} acknowledged sends in {WRITER_ROUNDS} rounds; "
        f"kills left the lock directory {locks_left} times, {temps_left} temporary files, "
        f"a kill between the inbox write and the record {unrecorded_after_kill} times"
    )
    # the kills did land inside the lock: otherwise this test proved little about recovery
    assert locks_left > 0 and temps_left > 0


def run_to_death(
    ctx: mp_context.ForkServerContext, target: Callable[..., None], args: tuple[Any, ...]
) -> None:
    """Run `target(*args)`, which SIGKILLs itself at a chosen point, and reap it."""
    process = ctx.Process(target=target, args=args)
    process.start()
    process.join(FIRST_ACK_TIMEOUT_S)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail("the worker did not reach the point where it kills itself")
    assert process.exitcode == -9, f"the worker ended on its own (exit code {process.exitcode})"


@pytest.mark.parametrize("before", [True, False], ids=["before-rename", "after-rename"])
def test_a_writer_killed_as_its_lock_directory_appears_blocks_nobody(
    team: TeamFile, paths: TeamPaths, config_root: Path, before: bool
) -> None:
    mailbox = Mailbox(paths, lock_timeout=NEXT_WRITER_LOCK_TIMEOUT_S)
    mailbox.send("alice", "earlier", sender="bob")  # the flock file holds an old, released record
    run_to_death(
        forkserver_context(),
        send_killed_as_the_lock_appears,
        (str(config_root), "alice", before),
    )
    # after the rename the killed writer's lock directory is left behind; before it, only its
    # private directory in .swarm-locks/
    assert lock_dir_for(paths.inbox("alice")).is_dir() is not before

    mailbox.send("alice", "next", sender="team-lead")

    assert [i["text"] for i in live_items(paths, "alice")] == ["earlier", "next"]


def test_a_reader_killed_before_compacting_duplicates_nothing(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    mailbox = Mailbox(paths, compact_after=0)
    for text in ("message a", "message b"):
        mailbox.send("alice", text, sender="bob")
    run_to_death(
        forkserver_context(), mark_read_killed_before_compacting, (str(config_root), "alice")
    )

    live = live_items(paths, "alice")
    assert [(i["text"], i["read"]) for i in live] == [("message a", True), ("message b", True)]
    # the next reader handles a new message first, then everything else that is unread
    (c,) = mailbox.send("alice", "message c", sender="bob")
    mailbox.mark_read("alice", [c])
    handed_out_again = [e.text for e in mailbox.read_unread("alice")]
    recorded = Counter(i["text"] for i in archive_items(paths, "alice"))
    recorded_twice = sorted(t for t, n in recorded.items() if n > 1)

    assert set(recorded) == {"message a", "message b", "message c"}
    assert live_items(paths, "alice") == []  # the compaction the killed reader left is done
    assert (handed_out_again, recorded_twice) == ([], [])


def _check_task_files(paths: TeamPaths, where: str) -> list[Task]:
    """Every task file parses and validates; the tasks by id."""
    tasks = []
    names = [n for n in os.listdir(paths.tasks_dir) if n.endswith(".json")]
    for name in sorted(names, key=lambda n: int(n.removesuffix(".json"))):
        raw = json.loads((paths.tasks_dir / name).read_bytes())
        tasks.append(Task.from_json_dict(raw))
        assert f"{tasks[-1].id}.json" == name, where
    highwatermark = paths.highwatermark.read_text() if paths.highwatermark.exists() else "0"
    assert int(highwatermark) <= max((int(t.id) for t in tasks), default=0), where
    return tasks


def test_task_workers_killed_at_random_moments_leave_every_task_file_whole(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    ctx = forkserver_context()
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    board = TaskBoard(paths, lock_timeout=NEXT_WRITER_LOCK_TIMEOUT_S)
    one_sided = 0
    for round_no in range(TASK_ROUNDS):
        where = f"round {round_no} (seed {seed})"
        run_and_kill(
            ctx,
            churn_tasks_until_killed,
            (str(config_root), f"worker{round_no}", 30.0),
            rng.uniform(0, MAX_KILL_DELAY_S * 2),
        )
        tasks = {t.id: t for t in _check_task_files(paths, where)}
        assert [t.id for t in board.list()] == list(tasks)  # the board agrees with the files

        # the next writer takes every lock the killed worker may have held, at once
        probe = board.create("after the kill")
        for task_id in tasks:
            if lock_dir_for(paths.task(task_id)).exists():
                board.update(task_id, description="lock taken over")
        assert not lock_dir_for(paths.tasks_lock_target).exists(), where
        assert not any(lock_dir_for(paths.task(t)).exists() for t in tasks), where
        board.update(probe.id, status="completed")

        # a kill between the two halves of addBlockedBy leaves a one-sided link (not an error)
        one_sided += sum(
            1 for t in tasks.values() for b in t.blockedBy if t.id not in tasks[b].blocks
        )
    _check_task_files(paths, "at the end")
    print(f"seed {seed}: {len(board.list())} tasks; one-sided links left by kills: {one_sided}")


def test_a_stale_claude_code_lock_directory_is_removed_and_the_send_succeeds(
    team: TeamFile, paths: TeamPaths
) -> None:
    lock_dir = lock_dir_for(paths.inbox("alice"))
    os.mkdir(lock_dir)  # as Claude Code's proper-lockfile makes it; no swarm ownership record
    old = time.time() - (STALE_S + 1)
    os.utime(lock_dir, (old, old))

    (entry,) = Mailbox(paths, lock_timeout=NEXT_WRITER_LOCK_TIMEOUT_S).send(
        "alice", "through a stale lock", sender="bob"
    )

    assert [i["id"] for i in live_items(paths, "alice")] == [entry.id]
    assert not lock_dir.exists()


def test_a_fresh_claude_code_lock_held_too_long_makes_send_fail_and_write_nothing(
    team: TeamFile, paths: TeamPaths
) -> None:
    inbox = paths.inbox("alice")
    mailbox = Mailbox(paths)
    mailbox.send("alice", "before", sender="bob")
    before = inbox.read_bytes()
    recorded = paths.inbox_archive("alice").read_bytes()
    lock_dir = lock_dir_for(inbox)
    os.mkdir(lock_dir)  # Claude Code holds the inbox right now

    with pytest.raises(LockTimeout, match="nothing was written"):
        Mailbox(paths, lock_timeout=0.5).send("alice", "refused", sender="bob")

    assert inbox.read_bytes() == before
    assert paths.inbox_archive("alice").read_bytes() == recorded
    assert orphan_temps(inbox) == []
    assert lock_dir.is_dir()  # a live foreign lock is never broken
    os.rmdir(lock_dir)  # Claude Code is done: the next send goes through
    mailbox.send("alice", "after", sender="bob")
    assert [i["text"] for i in live_items(paths, "alice")] == ["before", "after"]
