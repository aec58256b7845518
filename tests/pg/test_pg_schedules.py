"""Schedules of a team on PostgreSQL, kept in its store (`swarm.schedule.pg_book`) and fired by
schedulers on two machines (config roots of their own) at once: each firing once, a row lock
standing for the file's lock; a scheduler killed with SIGKILL mid-pass loses and doubles
nothing; either machine lists and removes them; `swarm host serve` fires them too."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers import DEADLINE_S, wait_for
from machines import Machine, machine, serve, stop
from pg_cli import url_of

from protocols.pg import Database, PgTaskBoard
from swarm.schedule.firing import MARK
from swarm.schedule.pg_book import PgScheduleBook

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def pass_at(box: Machine, instant: datetime) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "swarm", "scheduler", "--once", "--now", instant.isoformat()]
    return subprocess.Popen(
        [*argv, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=box.env,
        cwd=box.work,
    )


def finish(proc: subprocess.Popen[str]) -> list[dict[str, object]]:
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


def marks(db: Database) -> Counter[str]:
    return Counter(str((t.metadata or {}).get(MARK)) for t in PgTaskBoard(db, "t").list())


def two_machines(
    tmp_path: Path, conninfo: str, schedules: int
) -> tuple[Machine, Machine, list[str]]:
    url = url_of(conninfo)
    a, b = machine(tmp_path, "a", url), machine(tmp_path, "b", url)
    a.swarm("team", "create", "t")
    ids = []
    for n in range(schedules):
        added = a.json("schedule", "add", "* * * * *", "--task", f"job {n}")
        assert added["team"] == "t"
        ids.append(added["id"])
    book = PgScheduleBook(url)  # as if added just before T0: they fire from then on
    since = (T0 - timedelta(seconds=30)).isoformat()
    for schedule_id in ids:
        book.update(schedule_id, lambda s: s.model_copy(update={"created": since}), 5)
    return a, b, ids


def test_two_machines_fire_each_firing_of_the_stores_schedules_once(
    tmp_path: Path, conninfo: str
) -> None:
    a, b, ids = two_machines(tmp_path, conninfo, 8)
    db = Database(conninfo, reconnect_s=60.0)
    try:
        assert not (a.root / "swarm" / "schedules").exists()  # kept in the store, not here
        listed = b.json("schedule", "list")  # the other machine sees them
        assert sorted(s["id"] for s in listed) == sorted(ids)
        assert {s["kept"] for s in listed} == {url_of(conninfo)}
        for minute in range(3):
            now = T0 + timedelta(minutes=minute)
            fired = [f for p in [pass_at(a, now), pass_at(b, now)] for f in finish(p)]
            assert sorted(str(f["schedule"]) for f in fired) == sorted(ids)
        want = [f"{i}@{(T0 + timedelta(minutes=m)).isoformat()}" for i in ids for m in range(3)]
        assert marks(db) == Counter(want)
        removed = b.json("schedule", "remove", ids[0])
        assert removed["id"] == ids[0]
        assert sorted(s["id"] for s in a.json("schedule", "list")) == sorted(ids[1:])
    finally:
        db.close()


def test_a_scheduler_killed_mid_pass_on_one_machine_is_finished_by_the_other(
    tmp_path: Path, conninfo: str
) -> None:
    a, b, ids = two_machines(tmp_path, conninfo, 12)
    db = Database(conninfo, reconnect_s=60.0)
    rng = random.Random(11)
    try:
        for minute in range(3):
            now = T0 + timedelta(minutes=minute)
            victim = pass_at(a, now)
            try:
                victim.wait(timeout=rng.uniform(0.4, 1.5))  # a kill at any point of its pass
            except subprocess.TimeoutExpired:
                victim.send_signal(signal.SIGKILL)
            victim.communicate()
            finish(pass_at(b, now))
        want = [f"{i}@{(T0 + timedelta(minutes=m)).isoformat()}" for i in ids for m in range(3)]
        assert marks(db) == Counter(want)
        for found in PgScheduleBook(url_of(conninfo)).all():
            assert [h.outcome for h in found.history] == ["fired"] * 3
    finally:
        db.close()


def test_a_host_serve_fires_the_stores_schedules(tmp_path: Path, conninfo: str) -> None:
    """`swarm host serve` runs the schedules too: one missed while no scheduler ran (its
    ``--missed once``) is fired at once when a host starts serving, on that host."""
    url = url_of(conninfo)
    a, b = machine(tmp_path, "a", url), machine(tmp_path, "b", url)
    a.swarm("team", "create", "t")
    added = a.json("schedule", "add", "*/5 * * * *", "--task", "nightly", "--missed", "once")
    since = (datetime.now(UTC) - timedelta(minutes=11)).isoformat()  # two firings missed
    PgScheduleBook(url).update(added["id"], lambda s: s.model_copy(update={"created": since}), 5)
    db = Database(conninfo, reconnect_s=60.0)
    agent = serve(b, "b1")
    try:
        fired = wait_for(lambda: [m for m in marks(db) if m.startswith(added["id"])], "a firing")
        assert len(fired) == 1 and marks(db)[fired[0]] == 1, marks(db)  # the last one, once
        assert "nightly" in [t.subject for t in PgTaskBoard(db, "t").list()]
    finally:
        stop(agent)
        db.close()
    assert agent.process.returncode == 0, agent.output()
