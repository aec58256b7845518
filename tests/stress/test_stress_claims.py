"""Many real processes racing for one task board: every task is claimed exactly once, never
before its blockers are completed, and a worker holding an unfinished task cannot take another.

- 16 worker processes loop `claim_next`, complete what they claimed and go on, over 500 tasks of
  which about a quarter are blocked by one or two earlier tasks. Each task is claimed exactly
  once and ends completed by its claimer. No claim happened before its blockers were completed,
  seen two ways: inside the worker, right after the claim, every blocker reads as completed; and
  across workers, no claim returned before the completion of one of its blockers began
  (`time.monotonic_ns` is one clock for every process on Linux). Now and then a worker asks
  `claim_next` again while holding its task: the answer is never a second task.
- `agent_busy`: a worker that owns an unfinished task is refused by both `claim_next` and
  `claim`, while other workers are not; once its task is completed it may claim again.
- kill -9: 16 workers over 1,000 tasks, 4 of them killed with SIGKILL at different moments while
  claiming; their unfinished tasks are released as the leader does for a dead member. Every task
  ends completed, none was held by two live workers, none was claimed before its blockers were
  completed, and every task file parses. (Each process's board index lives in its memory only:
  a killed worker leaves nothing to repair.)
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.context import BaseContext
from pathlib import Path

import pytest
from procs import (
    HOSTILE_FIRST,
    ClaimAnswer,
    ClaimReport,
    claim_actions,
    claim_and_log,
    claim_until_done,
    forkserver_context,
    run_together,
    vandalise,
)

from protocols import ClaimFailure, TaskBoard, TeamFile, TeamPaths
from protocols.tasks.board import NewTask

pytestmark = pytest.mark.slow

WORKERS = 16
TASKS = 500
PROBE_BUSY_EVERY = 5
RUN_TIMEOUT_S = 150.0
# workers give up first, so their reports arrive before the test gives up
WORK_DEADLINE_S = 120.0


def blockers_of(n: int) -> list[int]:
    """The dependencies of task `n` (1-based): chains, and a few tasks waiting on two others."""
    blockers = []
    if n % 4 == 0:
        blockers.append(n - 1)
    if n % 20 == 0:
        blockers.append(n - 7)
    return blockers


def make_board(paths: TeamPaths) -> dict[str, list[str]]:
    """The tasks and their dependencies (setup only: written without fsync)."""
    board = TaskBoard(paths, durability="process")
    blocked_by: dict[str, list[str]] = {}
    for n in range(1, TASKS + 1):
        task = board.create(f"task {n}", f"stress task number {n}")
        assert task.id == str(n)
        blocked_by[task.id] = [str(b) for b in blockers_of(n)]
        if blocked_by[task.id]:
            board.update(task.id, addBlockedBy=blocked_by[task.id])
    return blocked_by


def test_sixteen_workers_claim_every_task_exactly_once_and_never_too_early(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    blocked_by = make_board(paths)
    ctx = forkserver_context()
    workers = [
        (claim_until_done, (str(config_root), f"w{k}", PROBE_BUSY_EVERY, WORK_DEADLINE_S))
        for k in range(WORKERS)
    ]

    reports: list[ClaimReport] = run_together(ctx, workers, RUN_TIMEOUT_S)

    errors = [f"{r.worker}:\n{r.error}" for r in reports if r.error]
    assert not errors, "\n".join(errors)
    assert [r.worker for r in reports if r.timed_out] == []
    claims = [c for r in reports for c in r.claims]

    # exactly once, and the files agree
    claimed = Counter(c.task_id for c in claims)
    assert {t for t, n in claimed.items() if n > 1} == set(), "claimed twice"
    assert set(claimed) == set(blocked_by), "never claimed"
    claimer = {c.task_id: c.worker for c in claims}
    final = TaskBoard(paths).list()
    assert len(final) == TASKS
    assert [t.id for t in final if t.status != "completed"] == []
    assert [t.id for t in final if t.owner != claimer[t.id]] == []

    # never before the blockers were completed
    assert [seen for r in reports for seen in r.open_blockers_seen] == []
    completion_began = {c.task_id: c.complete_start for c in claims}
    too_early = [
        f"#{c.task_id} claimed before #{b} was being completed"
        for c in claims
        for b in blocked_by[c.task_id]
        if c.claim_end < completion_began[b]
    ]
    assert too_early == []
    assert sum(1 for deps in blocked_by.values() if deps) > TASKS // 5  # the rule was exercised

    # a worker holding a task never got a second one, nor was a free worker refused
    answers = Counter(a for r in reports for a in r.busy_answers)
    assert set(answers) <= {str(ClaimFailure.AGENT_BUSY)}, answers
    assert answers[str(ClaimFailure.AGENT_BUSY)] > 0  # the rule was exercised
    assert [refusal for r in reports for refusal in r.refusals] == []


def run_as(
    ctx: BaseContext, root: Path, agent: str, actions: list[tuple[str, str]]
) -> list[ClaimAnswer]:
    """Run `actions` as `agent` in a process of its own; the answers of its claim actions."""
    (answers,) = run_together(ctx, [(claim_actions, (str(root), agent, actions))], 60.0)
    failures = [a for a in answers if isinstance(a, str)]
    assert failures == [], "\n".join(failures)
    return answers


def test_a_worker_holding_an_unfinished_task_is_refused_as_agent_busy(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    board = TaskBoard(paths)
    first, second, third = (board.create(f"task {n}") for n in range(1, 4))
    ctx = forkserver_context()

    (took,) = run_as(ctx, config_root, "w1", [("claim", first.id)])
    assert took.success and took.task_id == first.id

    busy_next, busy_claim = run_as(
        ctx, config_root, "w1", [("claim_next", ""), ("claim", second.id)]
    )
    for answer in (busy_next, busy_claim):
        assert not answer.success
        assert answer.reason is ClaimFailure.AGENT_BUSY
        assert answer.busy_with == [first.id]

    (other,) = run_as(ctx, config_root, "w2", [("claim_next", "")])
    assert other.success and other.task_id == second.id  # the lowest free one

    (again,) = run_as(ctx, config_root, "w1", [("complete", first.id), ("claim_next", "")])
    assert again.success and again.task_id == third.id
    owners = {t.id: (t.owner, t.status) for t in board.list()}
    assert owners == {
        first.id: ("w1", "completed"),
        second.id: ("w2", "in_progress"),
        third.id: ("w1", "in_progress"),
    }


KILL_TASKS = 1000
KILLED = ("k0", "k1", "k2", "k3")
KILL_AFTER_CLAIMS = (3, 8, 15, 25)  # each victim dies once its log shows this many claims
SETUP_BATCH = 250  # one create_many holds the list lock: keep each short


def make_big_board(paths: TeamPaths) -> None:
    """`KILL_TASKS` tasks with the dependencies of `blockers_of`, each in its file from the start."""
    board = TaskBoard(paths, durability="process")
    for first in range(1, KILL_TASKS + 1, SETUP_BATCH):
        specs = []
        for n in range(first, min(first + SETUP_BATCH, KILL_TASKS + 1)):
            earlier = tuple(str(b) for b in blockers_of(n) if b < first)
            in_batch = tuple(b - first for b in blockers_of(n) if b >= first)
            specs.append(NewTask(f"task {n}", blocked_by=earlier, after=in_batch))
        board.create_many(specs)


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_workers_killed_mid_run_lose_nothing_and_no_task_is_held_twice(
    team: TeamFile, paths: TeamPaths, config_root: Path, tmp_path: Path
) -> None:
    make_big_board(paths)
    ctx = forkserver_context()
    names = [*KILLED, *(f"w{k}" for k in range(WORKERS - len(KILLED)))]
    logs = {name: tmp_path / f"{name}.log" for name in names}
    processes = {
        name: ctx.Process(
            target=claim_and_log, args=(str(config_root), name, str(logs[name]), WORK_DEADLINE_S)
        )
        for name in names
    }
    for process in processes.values():
        process.start()
    killed_at: dict[str, int] = {}
    try:
        for victim, after in zip(KILLED, KILL_AFTER_CLAIMS, strict=True):
            wait_for(_claimed_at_least(logs[victim], after), 90.0, f"{victim}'s claims")
            pid = processes[victim].pid
            assert pid is not None
            killed_at[victim] = time.monotonic_ns()
            os.kill(pid, signal.SIGKILL)
            processes[victim].join(10)
            TaskBoard(paths).release_all(victim)  # what the leader does for a dead member
        for name, process in processes.items():
            process.join(RUN_TIMEOUT_S)
            assert not process.is_alive(), f"{name} still running"
    finally:
        for process in processes.values():
            if process.is_alive():
                process.kill()
                process.join()

    lines = {name: log_lines(path) for name, path in logs.items()}
    trouble = [f"{n}: {x}" for n, xs in lines.items() for x in xs if x.split()[0] in _TROUBLE]
    assert trouble == []
    survivors = [n for n in names if n not in KILLED]
    assert [n for n in survivors if lines[n][-1:] != ["done"]] == []

    # never claimed before its blockers were completed (seen by the claimer, right after)
    assert [x for xs in lines.values() for x in xs if x.startswith("early ")] == []

    # no task held by two live workers: a task is claimed again only after its previous claimer
    # was killed
    claims: dict[str, list[tuple[int, str]]] = {}
    for name, xs in lines.items():
        for x in xs:
            if x.startswith("claimed "):
                _, task_id, at = x.split()
                claims.setdefault(task_id, []).append((int(at), name))
    held_twice = [
        f"#{task_id}: {earlier[1]} then {later[1]}"
        for task_id, seq in claims.items()
        for earlier, later in zip(sorted(seq), sorted(seq)[1:], strict=False)
        if earlier[1] not in killed_at or later[0] < killed_at[earlier[1]]
    ]
    assert held_twice == []

    # nothing lost: every file parses, every task completed, by the survivor that claimed it
    files = sorted(paths.tasks_dir.glob("*.json"))
    assert len(files) == KILL_TASKS
    for path in files:
        json.loads(path.read_bytes())
    final = TaskBoard(paths).list()
    assert [t.id for t in final if t.status != "completed"] == []
    last = {task_id: max(seq)[1] for task_id, seq in claims.items()}
    assert [t.id for t in final if last.get(t.id) in survivors and t.owner != last[t.id]] == []


_TROUBLE = {"error", "timeout", "refused"}


def _claimed_at_least(log: Path, count: int) -> Callable[[], bool]:
    return lambda: sum(1 for x in log_lines(log) if x.startswith("claimed ")) >= count


def test_workers_on_a_board_that_a_vandal_keeps_rewriting_claim_only_real_tasks(
    team: TeamFile, paths: TeamPaths, config_root: Path, tmp_path: Path
) -> None:
    """Eight workers claim a board while another process keeps planting hostile task files
    beside the real ones (torn JSON, wrong types, another task's id, a link to a valid task
    outside, a FIFO, JSON nested 100,000 deep, a directory, a blocker that climbs out, a 1 MB
    array), rewriting them in place and by rename, removing and making them again: no worker
    fails or hangs, every real task is claimed exactly once and never too early, no hostile
    file is ever claimed, and the file the link points to is untouched."""
    board = TaskBoard(paths, durability="process")
    last_real = 200
    blocked_by: dict[str, list[str]] = {}
    for n in range(1, last_real + 1):
        task = board.create(f"task {n}", blocked_by=[str(b) for b in blockers_of(n)])
        blocked_by[task.id] = list(task.blockedBy)
    outside = tmp_path / "outside.json"
    valid = {"id": str(HOSTILE_FIRST + 3), "subject": "outside", "description": ""}
    outside.write_text(json.dumps(valid))
    ctx = forkserver_context()
    kinds = 9
    workers = [
        (claim_until_done, (str(config_root), f"w{k}", PROBE_BUSY_EVERY, WORK_DEADLINE_S))
        for k in range(8)
    ]
    workers.append((vandalise, (str(config_root), str(outside), last_real, kinds)))

    reports = run_together(ctx, workers, RUN_TIMEOUT_S)

    planted = [r for r in reports if not isinstance(r, ClaimReport)]
    assert len(planted) == 1 and isinstance(planted[0], int), planted
    assert planted[0] >= kinds  # every kind was planted at least once
    claim_reports = [r for r in reports if isinstance(r, ClaimReport)]
    errors = [f"{r.worker}:\n{r.error}" for r in claim_reports if r.error]
    assert not errors, "\n".join(errors)
    assert [r.worker for r in claim_reports if r.timed_out] == []
    claims = [c for r in claim_reports for c in r.claims]
    claimed = Counter(c.task_id for c in claims)
    assert {t for t, n in claimed.items() if n > 1} == set(), "claimed twice"
    assert set(claimed) == set(blocked_by), "a hostile file claimed, or a real task never"
    assert [seen for r in claim_reports for seen in r.open_blockers_seen] == []
    completion_began = {c.task_id: c.complete_start for c in claims}
    too_early = [
        (c.task_id, b)
        for c in claims
        for b in blocked_by[c.task_id]
        if c.claim_end < completion_began[b]
    ]
    assert too_early == []
    assert outside.read_text() == json.dumps(valid)
    final = {t.id: t for t in TaskBoard(paths).list()}
    assert set(final) == set(blocked_by)  # the hostile files are skipped, as invalid
    assert all(t.status == "completed" for t in final.values())
