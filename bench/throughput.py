"""Many writers, one inbox: delivered messages per second, and nothing lost or duplicated.

What it measures
    8 writer processes each send N unique messages (``w<writer>-<seq>``) to one inbox as fast as
    `Mailbox.send` returns; one reader process waits on the inbox (`Mailbox.wait` with one
    persistent `InboxWatcher`), takes every unread entry and marks it read (`Mailbox.mark_read`),
    until it has them all. All processes start together on one event.

Figures
    * msgs_per_s: distinct messages the reader received, per second of wall time from the start
      event to the reader's last receipt;
    * lost: messages whose `send` returned (acknowledged) that the reader never received;
    * duplicated: receipts beyond the first of the same message;
    * inbox_bytes: size of the live inbox file at the end (read entries are compacted into the
      archive ``<agent>.archive.jsonl``, so it should stay small), and the archive's line count;
    * how long each `send` call took (mostly waiting for the inbox lock) and the reader's batches.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR`` points there), never
``~/.claude``, with the default durability (fsync on) unless ``SWARM_DURABILITY`` says otherwise.
There is an overall deadline, so a stuck run ends and reports what it has. The last line printed
is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import cProfile
import fcntl
import json
import multiprocessing as mp
import os
import pstats
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

from benchkit import collect, percentile, verdict
from chart import Series, line_chart

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.fs.jsonio import default_durability
from protocols.watch.wakeup import InboxWatcher

TEAM = "bench"
PROFILE_ENV = "SWARM_BENCH_PROFILE"  # a directory: each process's profile goes there
READER = "alice"
WARM_UP = "warm-up"  # each writer's first send goes here, before the clock starts
TARGET_MSGS_PER_S = 2000.0  # issue 19: 8 writers, durable
TARGET_SWEEP_PER_S = 2000.0
TARGET_INBOX_BYTES = 256 * 1024
START_TIMEOUT_S = 60.0


@dataclass
class WriterResult:
    writer: int
    acked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    send_ns: list[int] = field(default_factory=list)
    cpu_s: float = 0.0  # CPU (user + system) from the start signal to its last send


@dataclass
class ReaderResult:
    counts: Counter[str] = field(default_factory=Counter)
    last_receipt_ns: int = 0
    batches: int = 0
    mark_read_ns: int = 0
    timed_out: bool = False
    cpu_s: float = 0.0  # CPU (user + system) from the start signal to its end


def message_text(writer: int, seq: int) -> str:
    return f"w{writer}-{seq:05d}"


def profiled(target: Callable[..., None], name: str) -> Callable[..., None]:
    """`target`, run under cProfile (CPU time) into ``$SWARM_BENCH_PROFILE/<name>-<pid>.prof``
    when that is set (``--profile DIR``), else `target` itself."""
    where = os.environ.get(PROFILE_ENV)
    if not where:
        return target

    def run(*args: object) -> None:
        # CPU time: nine processes on two cores spend much of their wall time waiting for one
        profile = cProfile.Profile(time.process_time)
        try:
            profile.runcall(target, *args)
        finally:
            profile.dump_stats(os.path.join(where, f"{name}-{os.getpid()}.prof"))

    return run


def writer_main(*args: object) -> None:
    profiled(_writer_main, "writer")(*args)


def reader_main(*args: object) -> None:
    profiled(_reader_main, "reader")(*args)


def _writer_main(
    root: str, writer: int, count: int, ready: Queue, go: Event, results: Queue, deadline_s: float
) -> None:
    """Send `count` messages to the reader; report which ones `send` acknowledged."""
    mailbox = Mailbox(TeamPaths(Path(root), TEAM))
    sender = f"writer-{writer}"
    result = WriterResult(writer)
    # warm: the first send of a process loads the message model (pydantic builds it: ~0.1 s);
    # a teammate has long done that before anyone sends it anything
    mailbox.send(WARM_UP, "warm-up", sender=sender)
    ready.put(sender)
    if not go.wait(START_TIMEOUT_S):
        raise SystemExit(f"{sender}: no start signal")
    deadline = time.monotonic() + deadline_s
    cpu_start = time.process_time()
    for seq in range(count):
        if time.monotonic() > deadline:
            result.errors.append(f"deadline reached after {seq} messages")
            break
        text = message_text(writer, seq)
        started = time.monotonic_ns()
        try:
            mailbox.send(READER, text, sender=sender)
        except Exception as exc:  # a failed send is reported, not acknowledged
            result.errors.append(f"{text}: {type(exc).__name__}: {exc}")
            continue
        result.send_ns.append(time.monotonic_ns() - started)
        result.acked.append(text)
    result.cpu_s = time.process_time() - cpu_start
    results.put(result)


def _reader_main(
    root: str,
    expected: int,
    ready: Queue,
    go: Event,
    writers_done: Event,
    results: Queue,
    deadline_s: float,
) -> None:
    """Receive until all `expected` messages arrived, or writers are done and nothing is unread."""
    paths = TeamPaths(Path(root), TEAM)
    mailbox = Mailbox(paths)
    result = ReaderResult()
    with InboxWatcher(paths.inbox(READER)) as watcher:
        ready.put(READER)
        if not go.wait(START_TIMEOUT_S):
            raise SystemExit("reader: no start signal")
        deadline = time.monotonic() + deadline_s
        cpu_start = time.process_time()
        while len(result.counts) < expected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.timed_out = True
                break
            finished = writers_done.is_set()  # set before this wait: every send already landed
            entries = mailbox.wait(READER, timeout=min(remaining, 0.5), watcher=watcher)
            if not entries:
                if finished:
                    break
                continue
            result.last_receipt_ns = time.monotonic_ns()
            result.batches += 1
            result.counts.update(entry.text for entry in entries)
            started = time.monotonic_ns()
            mailbox.mark_read(READER, entries)
            result.mark_read_ns += time.monotonic_ns() - started
        result.cpu_s = time.process_time() - cpu_start
    results.put(result)


@dataclass
class Run:
    """One run's figures."""

    writers: int
    messages: int
    msgs_per_s: float
    lost: int
    duplicated: int
    unexpected: int
    errors: list[str]
    send_ms: list[float]
    inbox_bytes: int
    live_entries: int
    archive_lines: int
    batches: int
    mark_read_s: float
    cpu_ms_per_msg: float  # the writers' and the reader's CPU, per message received
    wall_s: float
    writers_s: float
    timed_out: bool


def run_swarm(writers_count: int, messages: int, deadline: float) -> Run:
    """`writers_count` writer processes and one reader on one inbox, in a fresh config root."""
    total = writers_count * messages
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-throughput-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root  # inherited by the spawned processes
        paths = TeamPaths(Path(root), TEAM)
        team = TeamFile(paths)
        team.create(description="throughput benchmark")
        team.add_member(READER)
        team.add_member(WARM_UP)
        ready, results, writer_results = ctx.Queue(), ctx.Queue(), ctx.Queue()
        go, writers_done = ctx.Event(), ctx.Event()
        reader = ctx.Process(
            target=reader_main, args=(root, total, ready, go, writers_done, results, deadline)
        )
        writers = [
            ctx.Process(
                target=writer_main,
                args=(root, w, messages, ready, go, writer_results, deadline),
            )
            for w in range(writers_count)
        ]
        for process in (reader, *writers):
            process.start()
        if len(collect(ready, writers_count + 1, START_TIMEOUT_S)) < writers_count + 1:
            raise SystemExit("not every process started")

        started_ns = time.monotonic_ns()
        go.set()
        done: list[WriterResult] = collect(writer_results, writers_count, deadline + 30)
        writers_finished_ns = time.monotonic_ns()
        writers_done.set()
        got: list[ReaderResult] = collect(results, 1, 30)
        for process in (reader, *writers):
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        if len(done) < writers_count or not got:
            raise SystemExit(f"{len(done)}/{writers_count} writers, {len(got)}/1 reader reported")
        received = got[0]
        inbox_bytes = paths.inbox(READER).stat().st_size
        live = json.loads(paths.inbox(READER).read_text(encoding="utf-8"))
        archive = paths.inbox_archive(READER)
        archive_lines = archive.read_bytes().count(b"\n") if archive.exists() else 0

    acked = {text for result in done for text in result.acked}
    wall_s = max(received.last_receipt_ns - started_ns, 1) / 1e9
    return Run(
        writers=writers_count,
        messages=total,
        msgs_per_s=len(received.counts) / wall_s,
        lost=len(acked - received.counts.keys()),
        duplicated=sum(n - 1 for n in received.counts.values() if n > 1),
        unexpected=len(received.counts.keys() - acked),
        errors=[error for result in done for error in result.errors],
        send_ms=[ns / 1e6 for result in done for ns in result.send_ns],
        inbox_bytes=inbox_bytes,
        live_entries=len(live),
        archive_lines=archive_lines,
        batches=received.batches,
        mark_read_s=received.mark_read_ns / 1e9,
        cpu_ms_per_msg=1000
        * (received.cpu_s + sum(result.cpu_s for result in done))
        / max(len(received.counts), 1),
        wall_s=wall_s,
        writers_s=(writers_finished_ns - started_ns) / 1e9,
        timed_out=received.timed_out,
    )


def append_main(path: str, writer: int, count: int, ready: Queue, go: Event, done: Queue) -> None:
    """The baseline writer: append one line per message to one shared file, under a kernel
    lock, fsynced before the next (what any durable log does)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    ready.put(writer)
    go.wait(START_TIMEOUT_S)
    for seq in range(count):
        line = json.dumps({"from": f"writer-{writer}", "text": message_text(writer, seq)})
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.write(fd, line.encode() + b"\n")
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    done.put(writer)


def run_append(writers_count: int, messages: int) -> float:
    """Lines per second of `writers_count` processes appending to one fsynced file."""
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-append-") as root:
        path = str(Path(root) / "log.jsonl")
        ready, done, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        procs = [
            ctx.Process(target=append_main, args=(path, w, messages, ready, go, done))
            for w in range(writers_count)
        ]
        for process in procs:
            process.start()
        collect(ready, writers_count, START_TIMEOUT_S)
        started = time.monotonic()
        go.set()
        collect(done, writers_count, 300)
        elapsed = time.monotonic() - started
        for process in procs:
            process.join(timeout=10)
        lines = Path(path).read_bytes().count(b"\n")
    return lines / elapsed


def report(run: Run) -> None:
    timed_out = ", reader TIMED OUT" if run.timed_out else ""
    delivered = run.messages - run.lost
    print(
        f"  delivered {delivered} of {run.messages} in {run.wall_s:.2f} s "
        f"(writers done after {run.writers_s:.2f} s{timed_out})"
    )
    print(
        f"  msgs_per_s {run.msgs_per_s:10.0f}   target > {TARGET_MSGS_PER_S:g}   "
        f"{verdict(run.msgs_per_s > TARGET_MSGS_PER_S)}"
    )
    print(f"  lost       {run.lost:10d}   target 0     {verdict(run.lost == 0)}")
    print(f"  duplicated {run.duplicated:10d}   target 0     {verdict(run.duplicated == 0)}")
    print(
        f"  inbox_bytes {run.inbox_bytes:9d}   target < {TARGET_INBOX_BYTES}   "
        f"{verdict(run.inbox_bytes < TARGET_INBOX_BYTES)}"
    )
    print(
        f"  archive lines {run.archive_lines}, live entries {run.live_entries} "
        f"(sum {run.archive_lines + run.live_entries}, acknowledged sends "
        f"{run.messages - len(run.errors)})"
    )
    print(f"  send errors {len(run.errors)}, received but never acknowledged {run.unexpected}")
    for error in run.errors[:5]:
        print(f"    {error}")
    if run.send_ms:
        print(
            f"  send() call: p50 {percentile(run.send_ms, 50):.2f} ms, p99 "
            f"{percentile(run.send_ms, 99):.2f} ms, max {max(run.send_ms):.1f} ms"
        )
    cores = os.cpu_count() or 1
    print(
        f"  CPU per message {run.cpu_ms_per_msg:.3f} ms (writers and reader, user + system): "
        f"{cores} cores cap the rate at {1000 * cores / max(run.cpu_ms_per_msg, 1e-9):.0f}/s"
    )
    if run.batches:
        print(
            f"  reader: {run.batches} wake-ups, {delivered / run.batches:.1f} "
            f"messages each; mark_read took {run.mark_read_s:.2f} s in all"
        )


def sweep(counts: list[int], messages: int, deadline: float, png: Path | None) -> None:
    """msgs/s against writers, swarm beside a plain fsynced append in the same run."""
    rows = []
    for count in counts:
        per_writer = max(1, messages // count)
        run = run_swarm(count, per_writer, deadline)
        append = run_append(count, per_writer)
        rows.append((count, run, append))
        print(
            f"  {count:3d} writers: swarm {run.msgs_per_s:7.0f} msgs/s (lost {run.lost}, "
            f"duplicated {run.duplicated}); plain append {append:7.0f} lines/s",
            flush=True,
        )
    print("\nwriters | swarm msgs/s  lost  duplicated | plain fsynced append lines/s")
    for count, run, append in rows:
        print(
            f"{count:7d} | {run.msgs_per_s:12.0f}  {run.lost:4d}  {run.duplicated:10d} | "
            f"{append:12.0f}"
        )
    if png is not None:
        line_chart(
            png,
            f"durable sends into one inbox (durability {default_durability()})",
            "writer processes",
            "messages/s",
            [
                Series(
                    "swarm inbox (group commit)", "#1f77b4", [(c, r.msgs_per_s) for c, r, _ in rows]
                ),
                Series(
                    "plain fsynced append", "#7f7f7f", [(c, a) for c, _, a in rows], dashed=True
                ),
            ],
            target=("target 2,000/s", TARGET_SWEEP_PER_S),
        )
        print(f"chart: {png}")
    figures = " ".join(
        f"msgs_per_s_{c}={r.msgs_per_s:.0f} append_per_s_{c}={a:.0f}" for c, r, a in rows
    )
    ok = all(r.lost == 0 and r.duplicated == 0 for _, r, _ in rows)
    print(f"{figures} lost_or_duplicated={'none' if ok else 'SOME'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--messages", type=int, default=1250, help="messages per writer")
    parser.add_argument("--deadline", type=float, default=90.0, help="overall deadline, s")
    parser.add_argument(
        "--sweep",
        default="",
        help="writer counts, e.g. 1,4,16,64: msgs/s for each beside a plain fsynced append "
        "(--messages is then the total per run)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="profile every writer and the reader (cProfile) into this directory and print "
        "where the writers' time went, summed over them",
    )
    parser.add_argument("--png", type=Path, default=Path("docs/images/throughput.png"))
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    durability = default_durability()
    print(f"durability: {durability}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        os.environ[PROFILE_ENV] = str(args.profile.resolve())  # inherited by the processes
    if args.sweep:
        counts = [int(c) for c in args.sweep.split(",")]
        sweep(counts, args.messages, args.deadline, None if args.no_plot else args.png)
        return
    total = args.writers * args.messages
    print(
        f"{args.writers} writers x {args.messages} messages = {total} to one inbox, "
        "one reader (wait + mark_read) ..."
    )
    run = run_swarm(args.writers, args.messages, args.deadline)
    append = run_append(args.writers, args.messages)
    report(run)
    print(
        f"  baseline, same run: {args.writers} processes appending fsynced lines to one file: "
        f"{append:.0f} lines/s"
    )
    print(
        f"msgs_per_s={run.msgs_per_s:.0f} lost={run.lost} duplicated={run.duplicated} "
        f"inbox_bytes={run.inbox_bytes} archive_lines={run.archive_lines} messages={total} "
        f"writers={args.writers} append_per_s={append:.0f} "
        f"cpu_ms_per_msg={run.cpu_ms_per_msg:.3f} durability={durability}"
    )
    if args.profile:
        print_profile(args.profile, total)


def print_profile(where: Path, messages: int) -> None:
    """The writers' profiles summed: the functions that took the most time, per message."""
    files = sorted(str(f) for f in where.glob("writer-*.prof"))
    if not files:
        return
    stats = pstats.Stats(*files)
    print(f"\nwhere the writers' time went ({len(files)} profiles, {messages} messages):")
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
