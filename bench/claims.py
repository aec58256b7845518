"""Many workers, one task board: claims per second, and no task claimed twice or too early.

What it measures
    The board gets N tasks (default 1,000); every 10th task is blocked by the one before it
    (``addBlockedBy``). Then W worker processes (default 16) start together and loop
    `TaskBoard.claim_next(worker)`; after each successful claim the worker at once marks the task
    completed (`TaskBoard.update(id, status="completed")`) and records the task id with the times
    (``time.monotonic_ns()``, one clock for the whole machine on Linux) of the claim and the
    completion. A worker stops when `claim_next` returns None and no task is pending any more,
    or at the deadline.

Figures
    * claims_per_s: successful claims per second of wall time, from the start event to the last
      completion;
    * double_claims: tasks claimed more than once (by one worker or by several);
    * unclaimed: tasks never claimed, or not completed at the end;
    * blocked_violations: claims of a task whose blocker's completion had not even started when
      the claim returned (the claim certainly saw the blocker incomplete);
    * how long `claim_next` and `update` calls took, and how evenly the workers shared the work.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR`` points there), never
``~/.claude``, with the default durability (fsync on) unless ``SWARM_DURABILITY`` says otherwise.
The last line printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

from benchkit import collect, percentile, verdict

from protocols import TaskBoard, TeamFile, TeamPaths
from protocols.jsonio import default_durability

TEAM = "bench"
START_TIMEOUT_S = 60.0
IDLE_SLEEP_S = 0.02


@dataclass
class Claim:
    """One successful claim and the completion that followed it (monotonic ns)."""

    task_id: str
    worker: str
    claim_start: int
    claim_end: int
    complete_start: int
    complete_end: int


@dataclass
class WorkerResult:
    worker: str
    claims: list[Claim] = field(default_factory=list)
    claim_next_ns: list[int] = field(default_factory=list)
    nothing_to_claim: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    timed_out: bool = False


def make_board(board: TaskBoard, tasks: int, block_every: int) -> dict[str, list[str]]:
    """Create the tasks; every `block_every`-th is blocked by the one before. Returns the deps."""
    blocked_by: dict[str, list[str]] = {}
    for n in range(1, tasks + 1):
        task = board.create(f"task {n}", f"benchmark task number {n}")
        blocked_by[task.id] = []
    for n in range(block_every, tasks + 1, block_every):
        if n > 1:
            board.update(str(n), addBlockedBy=[str(n - 1)])
            blocked_by[str(n)] = [str(n - 1)]
    return blocked_by


def worker_main(
    root: str, worker: str, ready: Queue, go: Event, results: Queue, deadline_s: float
) -> None:
    """Claim, complete, repeat, until nothing is pending or the deadline passes."""
    board = TaskBoard(TeamPaths(Path(root), TEAM))
    result = WorkerResult(worker)
    ready.put(worker)
    if not go.wait(START_TIMEOUT_S):
        raise SystemExit(f"{worker}: no start signal")
    deadline = time.monotonic() + deadline_s
    while True:
        if time.monotonic() > deadline:
            result.timed_out = True
            break
        try:
            claim_start = time.monotonic_ns()
            claimed = board.claim_next(worker)
            claim_end = time.monotonic_ns()
            result.claim_next_ns.append(claim_end - claim_start)
            if claimed is None:
                result.nothing_to_claim += 1
                if not any(task.status == "pending" for task in board.list()):
                    break
                time.sleep(IDLE_SLEEP_S)  # pending tasks wait for a blocker held by someone
                continue
            if not claimed.success or claimed.task is None:
                result.refused[str(claimed.reason)] += 1
                time.sleep(IDLE_SLEEP_S)
                continue
            complete_start = time.monotonic_ns()
            board.update(claimed.task.id, status="completed")
            complete_end = time.monotonic_ns()
        except Exception as exc:  # reported, and the worker goes on
            result.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(IDLE_SLEEP_S)
            continue
        result.claims.append(
            Claim(claimed.task.id, worker, claim_start, claim_end, complete_start, complete_end)
        )
    results.put(result)


def blocked_violations(claims: list[Claim], blocked_by: dict[str, list[str]]) -> int:
    """Claims that returned before one of the task's blockers even began to be completed."""
    completed_at: dict[str, int] = {}
    for claim in claims:
        first = completed_at.get(claim.task_id, claim.complete_start)
        completed_at[claim.task_id] = min(first, claim.complete_start)
    violations = 0
    for claim in claims:
        for blocker in blocked_by.get(claim.task_id, []):
            done = completed_at.get(blocker)
            if done is None or claim.claim_end < done:
                violations += 1
    return violations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--block-every", type=int, default=10, help="every Nth task is blocked")
    parser.add_argument("--deadline", type=float, default=90.0, help="workers' deadline, s")
    args = parser.parse_args()

    durability = default_durability()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-claims-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root  # inherited by the spawned processes
        paths = TeamPaths(Path(root), TEAM)
        TeamFile(paths).create(description="claims benchmark")
        board = TaskBoard(paths)
        print(f"config root: {root} (temporary)  durability: {durability}")
        setup_start = time.monotonic()
        blocked_by = make_board(board, args.tasks, args.block_every)
        print(
            f"created {args.tasks} tasks ({sum(map(bool, blocked_by.values()))} blocked) "
            f"in {time.monotonic() - setup_start:.1f} s"
        )
        print(f"{args.workers} workers: claim_next, then update(status=completed) ...")

        ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        workers = [
            ctx.Process(
                target=worker_main, args=(root, f"worker-{w}", ready, go, results, args.deadline)
            )
            for w in range(args.workers)
        ]
        for process in workers:
            process.start()
        if len(collect(ready, args.workers, START_TIMEOUT_S)) < args.workers:
            raise SystemExit("not every worker started")
        started_ns = time.monotonic_ns()
        go.set()
        done: list[WorkerResult] = collect(results, args.workers, args.deadline + 60)
        for process in workers:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        if len(done) < args.workers:
            raise SystemExit(f"only {len(done)} of {args.workers} workers reported")
        final = {task.id: task for task in board.list(include_internal=True)}

    claims = [claim for result in done for claim in result.claims]
    per_task = Counter(claim.task_id for claim in claims)
    double_claims = sum(1 for n in per_task.values() if n > 1)
    unclaimed = sum(
        1
        for task_id in blocked_by
        if task_id not in per_task or task_id not in final or final[task_id].unfinished
    )
    violations = blocked_violations(claims, blocked_by)
    owner_mismatch = sum(
        1
        for claim in claims
        if claim.task_id in final and final[claim.task_id].owner not in (claim.worker, None)
    )
    wall_s = max(max((c.complete_end for c in claims), default=0) - started_ns, 1) / 1e9
    claims_per_s = len(claims) / wall_s
    claim_next_ms = [ns / 1e6 for result in done for ns in result.claim_next_ns]
    update_ms = [(c.complete_end - c.complete_start) / 1e6 for c in claims]
    per_worker = sorted(len(result.claims) for result in done)
    errors = [error for result in done for error in result.errors]
    refused = sum((result.refused for result in done), Counter())

    print(f"  {len(claims)} claims in {wall_s:.2f} s")
    print(f"  claims_per_s       {claims_per_s:8.1f}")
    print(f"  double_claims      {double_claims:8d}   target 0   {verdict(double_claims == 0)}")
    print(f"  unclaimed          {unclaimed:8d}")
    print(f"  blocked_violations {violations:8d}")
    print(f"  final owner differs from the claimer: {owner_mismatch}")
    if claim_next_ms and update_ms:
        print(
            f"  claim_next(): p50 {percentile(claim_next_ms, 50):.1f} ms, p99 "
            f"{percentile(claim_next_ms, 99):.1f} ms ({len(claim_next_ms)} calls); "
            f"update(): p50 {percentile(update_ms, 50):.1f} ms"
        )
    print(
        f"  claims per worker: min {per_worker[0]}, max {per_worker[-1]}; "
        f"'nothing to claim' answers {sum(r.nothing_to_claim for r in done)}, "
        f"refusals {dict(refused) or 0}, timed out {sum(r.timed_out for r in done)}"
    )
    print(f"  errors {len(errors)}")
    for error in errors[:5]:
        print(f"    {error}")
    print(
        f"claims_per_s={claims_per_s:.0f} double_claims={double_claims} unclaimed={unclaimed} "
        f"blocked_violations={violations} tasks={args.tasks} workers={args.workers} "
        f"durability={durability}"
    )


if __name__ == "__main__":
    main()
