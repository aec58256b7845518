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
import json
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

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.jsonio import default_durability
from protocols.watch import InboxWatcher

TEAM = "bench"
READER = "alice"
TARGET_MSGS_PER_S = 500.0
TARGET_INBOX_BYTES = 256 * 1024
START_TIMEOUT_S = 60.0


@dataclass
class WriterResult:
    writer: int
    acked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    send_ns: list[int] = field(default_factory=list)


@dataclass
class ReaderResult:
    counts: Counter[str] = field(default_factory=Counter)
    last_receipt_ns: int = 0
    batches: int = 0
    mark_read_ns: int = 0
    timed_out: bool = False


def message_text(writer: int, seq: int) -> str:
    return f"w{writer}-{seq:05d}"


def writer_main(
    root: str, writer: int, count: int, ready: Queue, go: Event, results: Queue, deadline_s: float
) -> None:
    """Send `count` messages to the reader; report which ones `send` acknowledged."""
    mailbox = Mailbox(TeamPaths(Path(root), TEAM))
    sender = f"writer-{writer}"
    result = WriterResult(writer)
    ready.put(sender)
    if not go.wait(START_TIMEOUT_S):
        raise SystemExit(f"{sender}: no start signal")
    deadline = time.monotonic() + deadline_s
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
    results.put(result)


def reader_main(
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
    results.put(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--messages", type=int, default=1250, help="messages per writer")
    parser.add_argument("--deadline", type=float, default=90.0, help="overall deadline, s")
    args = parser.parse_args()
    total = args.writers * args.messages

    durability = default_durability()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-throughput-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root  # inherited by the spawned processes
        paths = TeamPaths(Path(root), TEAM)
        team = TeamFile(paths)
        team.create(description="throughput benchmark")
        team.add_member(READER)
        print(f"config root: {root} (temporary)  durability: {durability}")
        print(
            f"{args.writers} writers x {args.messages} messages = {total} to one inbox, "
            "one reader (wait + mark_read) ..."
        )

        ready, results, writer_results = ctx.Queue(), ctx.Queue(), ctx.Queue()
        go, writers_done = ctx.Event(), ctx.Event()
        reader = ctx.Process(
            target=reader_main,
            args=(root, total, ready, go, writers_done, results, args.deadline),
        )
        writers = [
            ctx.Process(
                target=writer_main,
                args=(root, w, args.messages, ready, go, writer_results, args.deadline),
            )
            for w in range(args.writers)
        ]
        for process in (reader, *writers):
            process.start()
        if len(collect(ready, args.writers + 1, START_TIMEOUT_S)) < args.writers + 1:
            raise SystemExit("not every process started")

        started_ns = time.monotonic_ns()
        go.set()
        done: list[WriterResult] = collect(writer_results, args.writers, args.deadline + 30)
        writers_finished_ns = time.monotonic_ns()
        writers_done.set()
        got: list[ReaderResult] = collect(results, 1, 30)
        for process in (reader, *writers):
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        if len(done) < args.writers or not got:
            raise SystemExit(f"{len(done)}/{args.writers} writers, {len(got)}/1 reader reported")
        received = got[0]

        inbox_bytes = paths.inbox(READER).stat().st_size
        live = json.loads(paths.inbox(READER).read_text(encoding="utf-8"))
        archive = paths.inbox_archive(READER)
        archive_lines = archive.read_bytes().count(b"\n") if archive.exists() else 0

    acked = {text for result in done for text in result.acked}
    errors = [error for result in done for error in result.errors]
    send_ms = [ns / 1e6 for result in done for ns in result.send_ns]
    lost = len(acked - received.counts.keys())
    duplicated = sum(n - 1 for n in received.counts.values() if n > 1)
    unexpected = len(received.counts.keys() - acked)
    delivered = len(received.counts)
    wall_s = max(received.last_receipt_ns - started_ns, 1) / 1e9
    msgs_per_s = delivered / wall_s
    writers_s = (writers_finished_ns - started_ns) / 1e9

    timed_out = ", reader TIMED OUT" if received.timed_out else ""
    print(
        f"  delivered {delivered} of {total} in {wall_s:.2f} s "
        f"(writers done after {writers_s:.2f} s{timed_out})"
    )
    print(
        f"  msgs_per_s {msgs_per_s:10.0f}   target > {TARGET_MSGS_PER_S:g}   "
        f"{verdict(msgs_per_s > TARGET_MSGS_PER_S)}"
    )
    print(f"  lost       {lost:10d}   target 0     {verdict(lost == 0)}")
    print(f"  duplicated {duplicated:10d}   target 0     {verdict(duplicated == 0)}")
    print(
        f"  inbox_bytes {inbox_bytes:9d}   target < {TARGET_INBOX_BYTES}   "
        f"{verdict(inbox_bytes < TARGET_INBOX_BYTES)}"
    )
    print(
        f"  archive lines {archive_lines}, live entries {len(live)} "
        f"(sum {archive_lines + len(live)}, acknowledged sends {len(acked)})"
    )
    print(f"  send errors {len(errors)}, received but never acknowledged {unexpected}")
    for error in errors[:5]:
        print(f"    {error}")
    if send_ms:
        print(
            f"  send() call: p50 {percentile(send_ms, 50):.2f} ms, p99 "
            f"{percentile(send_ms, 99):.2f} ms, max {max(send_ms):.1f} ms"
        )
    if received.batches:
        print(
            f"  reader: {received.batches} wake-ups, {delivered / received.batches:.1f} "
            f"messages each; mark_read took {received.mark_read_ns / 1e9:.2f} s in all"
        )
    print(
        f"msgs_per_s={msgs_per_s:.0f} lost={lost} duplicated={duplicated} "
        f"inbox_bytes={inbox_bytes} archive_lines={archive_lines} messages={total} "
        f"writers={args.writers} durability={durability}"
    )


if __name__ == "__main__":
    main()
