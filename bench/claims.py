"""Many workers, one task board: claims per second, and no task claimed twice or too early.

What it measures
    The board gets N tasks (default 1,000); every 10th task is blocked by the one before it. Then
    W worker processes (default 16) look at the board once (a teammate that has been running a
    while knows it) and start together, looping `TaskBoard.claim_next(worker)`; after each
    successful claim the worker at once marks the task completed
    (`TaskBoard.update(id, status="completed")`) and records the task id with the times
    (``time.monotonic_ns()``, one clock for the whole machine on Linux) of the claim and the
    completion. A worker stops when `claim_next` returns None and no task is pending any more,
    at the deadline, or when ``--cap`` seconds of claiming have passed (then the rate is what was
    claimed in that time, and tasks left over are expected).

Curves (``--sweep``, what ``make bench`` runs)
    The same run at 100, 1,000 and 10,000 tasks with 1, 4 and 16 workers, each cell twice, side by
    side: with this tree's `protocols` and with the baseline's (``--baseline-ref``, by default the
    commit before the board had its index; extracted with ``git archive`` into a temporary
    directory and put first on ``PYTHONPATH`` of a child run of this same script). It prints the
    table and draws the curves into ``docs/images/claims.png`` (``--png``).

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
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from benchkit import collect, percentile, verdict

from protocols import TaskBoard, TeamFile, TeamPaths
from protocols.fs.jsonio import default_durability
from protocols.tasks.board import NewTask

TEAM = "bench"
START_TIMEOUT_S = 120.0
IDLE_SLEEP_S = 0.02
REPO = Path(__file__).resolve().parent.parent
# the board before it had an index: every claim looked at every task file
BASELINE_REF = "202e4c1"
SWEEP_TASKS = (100, 1000, 10000)
SWEEP_WORKERS = (1, 4, 16)
TARGET_PER_S = 1000.0
SETUP_BATCH = 250


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
    capped: bool = False
    watched: bool | None = None  # whether its board index had inotify (None: no index)
    full_looks: int = 0  # how often its index looked at every file
    cpu_s: float = 0.0  # CPU (user + system) the worker spent from the start signal to its end
    system_s: float = 0.0  # of which in the kernel


def make_board(paths: TeamPaths, tasks: int, block_every: int) -> dict[str, list[str]]:
    """Create the tasks in batches (setup: no fsync); every `block_every`-th is blocked by the
    one before. Returns the dependencies."""
    board = TaskBoard(paths, durability="process")
    blocked_by: dict[str, list[str]] = {}
    for first in range(1, tasks + 1, SETUP_BATCH):
        specs = []
        for n in range(first, min(first + SETUP_BATCH, tasks + 1)):
            spec = NewTask(f"task {n}", f"benchmark task number {n}")
            if n % block_every == 0 and n > 1:  # blocked by n - 1: in this batch or before it
                before = n - 1 - first
                spec = spec._replace(after=(before,)) if before >= 0 else spec
                spec = spec if before >= 0 else spec._replace(blocked_by=(str(n - 1),))
            specs.append(spec)
        for task in board.create_many(specs):
            blocked_by[task.id] = list(task.blockedBy)
    return blocked_by


def worker_main(
    root: str,
    worker: str,
    ready: Queue,
    go: Event,
    results: Queue,
    deadline_s: float,
    cap_s: float,
    profile_dir: str | None = None,
) -> None:
    """Claim, complete, repeat, until nothing is pending, the deadline or the cap. With
    `profile_dir`, the claiming loop (from the start signal, as the CPU figure: not the
    worker's first look at the board, nor its imports) runs under cProfile and its stats go
    there: CPU time (16 workers on 2 cores spend most of their wall time waiting for a core),
    unless ``SWARM_PROFILE_WALL`` is set."""
    profiler = None
    if profile_dir is not None:
        import cProfile

        timer = time.perf_counter if os.environ.get("SWARM_PROFILE_WALL") else time.process_time
        profiler = cProfile.Profile(timer)
    _work(root, worker, ready, go, results, deadline_s, cap_s, profiler)
    if profiler is not None and profile_dir is not None:
        profiler.dump_stats(os.path.join(profile_dir, f"{worker}.prof"))


def _work(
    root: str,
    worker: str,
    ready: Queue,
    go: Event,
    results: Queue,
    deadline_s: float,
    cap_s: float,
    profiler: Any = None,
) -> None:
    board = TaskBoard(TeamPaths(Path(root), TEAM))
    board.list()  # a running teammate has looked at the board before
    result = WorkerResult(worker)
    ready.put(worker)
    if not go.wait(START_TIMEOUT_S):
        raise SystemExit(f"{worker}: no start signal")
    deadline = time.monotonic() + deadline_s
    cap = time.monotonic() + cap_s
    cpu_start = time.process_time()
    system_start = os.times().system
    if profiler is not None:
        profiler.enable()
    while True:
        now = time.monotonic()
        if now > deadline:
            result.timed_out = True
            break
        if now > cap:
            result.capped = True
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
    result.cpu_s = time.process_time() - cpu_start
    result.system_s = os.times().system - system_start
    if profiler is not None:
        profiler.disable()
    index = getattr(board, "_index", None)  # the baseline's board has none
    if index is not None:
        result.watched = index.watch.available
        result.full_looks = index.rebuilds
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


def run_case(
    tasks: int,
    workers: int,
    block_every: int,
    deadline_s: float,
    cap_s: float,
    quiet: bool,
    profile_dir: str | None = None,
) -> dict[str, Any]:
    """One run: the board, the workers, and the figures (printed unless `quiet`)."""
    say = (lambda *_: None) if quiet else print
    durability = default_durability()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-claims-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root  # inherited by the spawned processes
        paths = TeamPaths(Path(root), TEAM)
        TeamFile(paths).create(description="claims benchmark")
        say(f"config root: {root} (temporary)  durability: {durability}")
        setup_start = time.monotonic()
        blocked_by = make_board(paths, tasks, block_every)
        say(
            f"created {tasks} tasks ({sum(map(bool, blocked_by.values()))} blocked) "
            f"in {time.monotonic() - setup_start:.1f} s"
        )
        say(f"{workers} workers: claim_next, then update(status=completed) ...")

        ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        processes = [
            ctx.Process(
                target=worker_main,
                args=(root, f"worker-{w}", ready, go, results, deadline_s, cap_s, profile_dir),
            )
            for w in range(workers)
        ]
        for process in processes:
            process.start()
        if len(collect(ready, workers, START_TIMEOUT_S)) < workers:
            raise SystemExit("not every worker started")
        started_ns = time.monotonic_ns()
        go.set()
        done: list[WorkerResult] = collect(results, workers, deadline_s + 60)
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        if len(done) < workers:
            raise SystemExit(f"only {len(done)} of {workers} workers reported")
        final = {task.id: task for task in TaskBoard(paths).list(include_internal=True)}

    claims = [claim for result in done for claim in result.claims]
    per_task = Counter(claim.task_id for claim in claims)
    capped = any(result.capped for result in done)
    wall_s = max(max((c.complete_end for c in claims), default=0) - started_ns, 1) / 1e9
    claim_next_ms = [ns / 1e6 for result in done for ns in result.claim_next_ns]
    figures: dict[str, Any] = {
        "tasks": tasks,
        "workers": workers,
        "claims": len(claims),
        "wall_s": wall_s,
        "claims_per_s": len(claims) / wall_s,
        "double_claims": sum(1 for n in per_task.values() if n > 1),
        # claimed but not completed by its claimer in the files at the end
        "lost": sum(
            1
            for claim in claims
            if claim.task_id not in final
            or final[claim.task_id].unfinished
            or final[claim.task_id].owner not in (claim.worker, None)
        ),
        "unclaimed": sum(1 for task_id in blocked_by if task_id not in per_task),
        "capped": capped,
        "blocked_violations": blocked_violations(claims, blocked_by),
        "claim_next_p50_ms": percentile(claim_next_ms, 50) if claim_next_ms else 0.0,
        "claim_next_p99_ms": percentile(claim_next_ms, 99) if claim_next_ms else 0.0,
        "errors": [error for result in done for error in result.errors][:5],
        "timed_out": sum(result.timed_out for result in done),
        # workers whose index had inotify; without it every refresh looks at every file
        "watched": sum(1 for result in done if result.watched),
        "full_looks": sum(result.full_looks for result in done),
        # the workers' CPU (user + system, all of them) per successful claim and completion
        "cpu_ms_per_claim": 1000 * sum(r.cpu_s for r in done) / max(len(claims), 1),
        "system_ms_per_claim": 1000 * sum(r.system_s for r in done) / max(len(claims), 1),
        "durability": durability,
    }
    per_worker = sorted(len(result.claims) for result in done)
    refused = sum((result.refused for result in done), Counter())
    say(f"  {len(claims)} claims in {wall_s:.2f} s" + ("  (capped)" if capped else ""))
    say(f"  claims_per_s       {figures['claims_per_s']:8.1f}")
    say(
        f"  double_claims      {figures['double_claims']:8d}   target 0   "
        f"{verdict(figures['double_claims'] == 0)}"
    )
    say(f"  unclaimed          {figures['unclaimed']:8d}" + ("  (capped run)" if capped else ""))
    say(f"  lost               {figures['lost']:8d}   (claimed, not completed by its claimer)")
    say(f"  blocked_violations {figures['blocked_violations']:8d}")
    say(
        f"  claim_next(): p50 {figures['claim_next_p50_ms']:.1f} ms, "
        f"p99 {figures['claim_next_p99_ms']:.1f} ms ({len(claim_next_ms)} calls)"
    )
    say(
        f"  claims per worker: min {per_worker[0]}, max {per_worker[-1]}; "
        f"'nothing to claim' answers {sum(r.nothing_to_claim for r in done)}, "
        f"refusals {dict(refused) or 0}, timed out {figures['timed_out']}"
    )
    if any(result.watched is not None for result in done):
        say(
            f"  board index: inotify in {figures['watched']} of {workers} workers, "
            f"{figures['full_looks']} looks at every file"
        )
    cores = os.cpu_count() or 1
    say(
        f"  CPU per claim + completion {figures['cpu_ms_per_claim']:.2f} ms (the workers', "
        f"user + system; system {figures['system_ms_per_claim']:.2f}): "
        f"{cores} cores cap the rate at "
        f"{1000 * cores / max(figures['cpu_ms_per_claim'], 1e-9):.0f}/s"
    )
    say(f"  errors {len(figures['errors'])}")
    for error in figures["errors"]:
        say(f"    {error}")
    return figures


def show_profile(directory: Path) -> None:
    """The workers' profiles added up: where the time of the claiming loops went, by own time
    and by time in a function and what it calls."""
    import pstats

    files = sorted(str(p) for p in directory.glob("*.prof"))
    if files:
        clock = "wall" if os.environ.get("SWARM_PROFILE_WALL") else "CPU"
        stats = pstats.Stats(*files, stream=sys.stdout)
        stats.strip_dirs()
        for order in ("tottime", "cumulative"):
            print(f"profile of {len(files)} workers ({clock} time, summed), by {order}:")
            stats.sort_stats(order).print_stats(20)


def baseline_tree(ref: str, into: Path) -> Path | None:
    """`ref`'s ``protocols`` package extracted under `into` (None: no git or no such ref)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", ref, "protocols"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"no baseline: cannot extract {ref}: {exc}")
        return None
    return into


def run_child(tree: Path, tasks: int, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """One cell, run by this script in a child whose `protocols` comes from `tree`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(REPO)]))
    argv = [sys.executable, str(Path(__file__).resolve()), "--json"]
    argv += ["--tasks", str(tasks), "--workers", str(workers), "--cap", str(args.cap)]
    argv += ["--block-every", str(args.block_every), "--deadline", str(args.deadline)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {tasks} tasks, {workers} workers failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def sweep(args: argparse.Namespace) -> None:
    """The curves: every cell with this tree and with the baseline, side by side."""
    with tempfile.TemporaryDirectory(prefix="swarm-bench-baseline-") as tmp:
        old = baseline_tree(args.baseline_ref, Path(tmp))
        trees = {"index": REPO} | ({"baseline": old} if old is not None else {})
        cells: dict[tuple[str, int, int], dict[str, Any]] = {}
        print(f"claims per second, {args.cap:g} s cap per run, durability {default_durability()}")
        print(
            f"baseline: protocols of {args.baseline_ref}, same script; {args.rounds} run(s) of"
            f" each cell per tree (medians); load {_load()}"
        )
        print(
            f"{'tasks':>6} {'workers':>7} {'baseline/s':>11} {'this/s':>9} {'ratio':>6}"
            f" {'CPU ms/claim':>14}  checks"
        )
        cell = 0
        for tasks in args.sweep_tasks:
            for workers in args.sweep_workers:
                runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
                for _ in range(args.rounds):
                    # side by side, each tree first in every other run: on a disk that frees
                    # inodes slowly (ext4 without a journal), a run pays for the one before it
                    order = sorted(trees) if cell % 2 == 0 else sorted(trees, reverse=True)
                    cell += 1
                    for label in order:
                        runs[label].append(run_child(trees[label], tasks, workers, args))
                for label, done in runs.items():
                    cells[(label, tasks, workers)] = _median_run(done)
                new = cells[("index", tasks, workers)]
                base = cells.get(("baseline", tasks, workers))
                watched = f"{new['watched']}/{workers}"
                if base is not None:  # without inotify a look at the board reads every file
                    watched = f"{base['watched']}/{workers} and {watched}"
                checks = (
                    f"double {new['double_claims']}, early {new['blocked_violations']}, "
                    f"lost {new['lost']}; inotify {watched}" + (", capped" if new["capped"] else "")
                )
                base_rate = f"{base['claims_per_s']:11.0f}" if base else f"{'-':>11}"
                ratio = f"{new['claims_per_s'] / base['claims_per_s']:5.1f}x" if base else "     -"
                cpu = f"{base['cpu_ms_per_claim']:.2f} / " if base else ""
                cpu += f"{new['cpu_ms_per_claim']:.2f}"
                print(
                    f"{tasks:>6} {workers:>7} {base_rate} {new['claims_per_s']:9.0f} {ratio}"
                    f" {cpu:>14}  {checks}; load {_load()}",
                    flush=True,
                )
    if args.png:
        draw(cells, args)
        print(f"curves: {args.png}")
    index_cells = [v for (label, _, _), v in cells.items() if label == "index"]
    at_16 = {
        t: cells[("index", t, 16)]["claims_per_s"]
        for t in args.sweep_tasks
        if 16 in args.sweep_workers
    }
    line = {f"claims_per_s_{_short(t)}_16": f"{rate:.0f}" for t, rate in at_16.items()}
    for t in args.sweep_tasks:
        if ("baseline", t, 16) in cells:
            line[f"baseline_{_short(t)}_16"] = f"{cells[('baseline', t, 16)]['claims_per_s']:.0f}"
    line["min_claims_per_s"] = f"{min(v['claims_per_s'] for v in index_cells):.0f}"
    for key in ("double_claims", "blocked_violations", "lost"):
        line[key] = str(sum(v[key] for v in index_cells))
    line["durability"] = default_durability()
    print(" ".join(f"{k}={v}" for k, v in line.items()))


def draw(cells: dict[tuple[str, int, int], dict[str, Any]], args: argparse.Namespace) -> None:
    from chart import Series, line_chart

    colours = {1: "#1f77b4", 4: "#2ca02c", 16: "#d62728"}
    series = []
    for label, dashed in (("index", False), ("baseline", True)):
        for workers in args.sweep_workers:
            points = [
                (float(t), cells[(label, t, workers)]["claims_per_s"])
                for t in args.sweep_tasks
                if (label, t, workers) in cells
            ]
            if points:
                tree = "this tree" if label == "index" else args.baseline_ref
                name = f"{tree}, {workers} w"
                series.append(Series(name, colours.get(workers, "black"), points, dashed))
    line_chart(
        Path(args.png),
        f"TaskBoard.claim_next + complete: claims/s (durability {default_durability()}, "
        f"board in {tempfile.gettempdir()})",
        "tasks on the board",
        "claims/s",
        series,
        target=("target 1,000/s", TARGET_PER_S),
    )


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell's runs as one: the median claims/s and CPU per claim, the checks added up."""
    cell = dict(runs[0])
    for key in ("claims_per_s", "cpu_ms_per_claim", "system_ms_per_claim"):
        cell[key] = statistics.median(run[key] for run in runs)
    for key in ("double_claims", "blocked_violations", "lost"):
        cell[key] = sum(run[key] for run in runs)
    cell["watched"] = min(run["watched"] for run in runs)
    cell["capped"] = any(run["capped"] for run in runs)
    return cell


def _load() -> str:
    """The machine's load average over the last minute (the sweep is noisy when it is high)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def _short(tasks: int) -> str:
    return f"{tasks // 1000}k" if tasks >= 1000 and tasks % 1000 == 0 else str(tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--block-every", type=int, default=10, help="every Nth task is blocked")
    parser.add_argument("--deadline", type=float, default=90.0, help="workers' deadline, s")
    parser.add_argument("--cap", type=float, default=1e9, help="stop claiming after this, s")
    parser.add_argument("--json", action="store_true", help="figures as one JSON line, last")
    parser.add_argument("--sweep", action="store_true", help="the curves, with the baseline")
    parser.add_argument("--sweep-tasks", type=int, nargs="+", default=list(SWEEP_TASKS))
    parser.add_argument("--sweep-workers", type=int, nargs="+", default=list(SWEEP_WORKERS))
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument(
        "--rounds", type=int, default=1, help="sweep: runs of each cell per tree (medians)"
    )
    parser.add_argument("--profile", help="profile the workers (CPU time) into this directory")
    parser.add_argument("--png", default=str(REPO / "docs" / "images" / "claims.png"))
    args = parser.parse_args()
    if args.sweep:
        if args.cap == 1e9:
            args.cap = 8.0
        sweep(args)
        return
    figures = run_case(
        args.tasks, args.workers, args.block_every, args.deadline, args.cap, args.json, args.profile
    )
    if args.profile:
        show_profile(Path(args.profile))
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"claims_per_s={figures['claims_per_s']:.0f} double_claims={figures['double_claims']} "
        f"unclaimed={0 if figures['capped'] else figures['unclaimed']} "
        f"blocked_violations={figures['blocked_violations']} lost={figures['lost']} "
        f"cpu_ms_per_claim={figures['cpu_ms_per_claim']:.2f} "
        f"tasks={args.tasks} workers={args.workers} durability={figures['durability']}"
    )


if __name__ == "__main__":
    main()
