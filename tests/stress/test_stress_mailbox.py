"""Many real processes on one mailbox: nothing is lost, nothing is delivered twice, and the inbox
file parses at every moment.

- 8 sender processes each send 500 uniquely numbered messages to alice while a reader process
  waits, reads and marks read in a loop, and a checker thread in the test process keeps parsing
  the live inbox. The reader gets each of the 4,000 messages exactly once; the live inbox plus
  its archive hold each exactly once; the checker never saw a file that does not parse.
- Every member broadcasts to ``"*"`` at the same time, reading and marking its own inbox now and
  then: each member ends up with every other member's messages exactly once and none of its own.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from procs import (
    ReaderReport,
    SenderReport,
    archive_items,
    broadcast_many,
    forkserver_context,
    live_items,
    read_until,
    run_together,
    send_many,
)

from protocols import TeamFile, TeamPaths
from protocols.inbox.mailbox import Mailbox

pytestmark = pytest.mark.slow

SENDERS = 8
PER_SENDER = 500
BROADCAST_ROUNDS = 150
RUN_TIMEOUT_S = 150.0
# workers give up first, so their reports arrive before the test gives up
WORK_DEADLINE_S = 120.0


@dataclass
class ParseChecker:
    """A thread that parses one file over and over until stopped, and keeps what failed."""

    path: Path
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ParseChecker:
        self._thread = threading.Thread(target=self._run, name="inbox-parse-checker")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.001):  # pace: leave the CPU to the writers
            try:
                data = self.path.read_bytes()
            except FileNotFoundError as exc:  # replaced atomically: it must always exist
                self.failures.append(f"missing: {exc}")
                continue
            try:
                items = json.loads(data)
                if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                    self.failures.append(f"not an array of objects: {data[:200]!r}")
            except ValueError as exc:
                self.failures.append(f"{exc}: {data[:200]!r}...{data[-200:]!r}")
            self.checks += 1


def _no_errors(reports: list[SenderReport]) -> None:
    errors = [f"{r.sender}:\n{r.error}" for r in reports if r.error]
    assert not errors, "\n".join(errors)


def test_eight_senders_one_reader_every_message_exactly_once(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    root = str(config_root)
    expected = {f"w{k}:{n}" for k in range(SENDERS) for n in range(PER_SENDER)}
    ctx = forkserver_context()
    workers = [(send_many, (root, "alice", f"w{k}", PER_SENDER)) for k in range(SENDERS)]
    workers.append((read_until, (root, "alice", len(expected), WORK_DEADLINE_S)))

    with ParseChecker(paths.inbox("alice")) as checker:
        reports = run_together(ctx, workers, RUN_TIMEOUT_S)

    senders = [r for r in reports if isinstance(r, SenderReport)]
    (reader,) = [r for r in reports if isinstance(r, ReaderReport)]
    _no_errors(senders)
    assert reader.error is None, reader.error
    assert sum(r.sent for r in senders) == len(expected)

    # the reader: every message exactly once, each mark_read marked all it was given
    received = Counter(reader.texts)
    assert not reader.timed_out, f"reader timed out; missing {len(expected - set(received))}"
    assert {t for t, n in received.items() if n > 1} == set(), "delivered twice"
    assert set(received) == expected
    assert reader.short_marks == 0

    # the files: the record holds every message exactly once, the live inbox nothing else,
    # and the history says all were read
    stored = archive_items(paths, "alice")
    stored_texts = Counter(i["text"] for i in stored)
    assert {t for t, n in stored_texts.items() if n > 1} == set(), "stored twice"
    assert set(stored_texts) == expected
    assert len({i["id"] for i in stored}) == len(stored)
    assert {i["id"] for i in live_items(paths, "alice")} <= {i["id"] for i in stored}
    assert all(e.is_read for e in Mailbox(paths).peek_all("alice"))

    # the file always parsed
    assert checker.failures == []
    assert checker.checks > 0


def test_concurrent_broadcasts_reach_every_other_member_exactly_once(
    team: TeamFile, paths: TeamPaths, config_root: Path
) -> None:
    root = str(config_root)
    members = team.member_names()  # team-lead, alice, bob, carol
    ctx = forkserver_context()
    workers = [(broadcast_many, (root, me, BROADCAST_ROUNDS, 10)) for me in members]

    with ParseChecker(paths.inbox("alice")) as checker:
        reports = run_together(ctx, workers, RUN_TIMEOUT_S)

    _no_errors(reports)
    for member in members:
        stored = archive_items(paths, member)  # the record: every message, once
        assert {i["id"] for i in live_items(paths, member)} <= {i["id"] for i in stored}
        texts = Counter(i["text"] for i in stored)
        expected = {f"{o}:{n}" for o in members if o != member for n in range(BROADCAST_ROUNDS)}
        assert {t for t, n in texts.items() if n > 1} == set(), f"{member} got duplicates"
        assert set(texts) == expected, f"{member}: wrong set of messages"
        assert all(i["from"] != member for i in stored), f"{member} got its own broadcast"
        assert len({i["id"] for i in stored}) == len(stored)
    assert checker.failures == []
    assert checker.checks > 0
