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
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from multiprocessing.context import BaseContext
from pathlib import Path

import pytest
from procs import ClaimAnswer, ClaimReport, claim_actions, claim_until_done, run_together

from protocols import ClaimFailure, TaskBoard, TeamFile, TeamPaths

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
    ctx = multiprocessing.get_context("spawn")
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
    ctx = multiprocessing.get_context("spawn")

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
