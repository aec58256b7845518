"""Scheduled runs with real processes: schedulers racing for the same firings, a scheduler
killed with SIGKILL in the middle of a pass, downtime and restarts, a scheduled `swarm up`, and
two `swarm scheduler` services firing as the minutes come. Each firing must be done once: a
task on the board once, with its firing's mark."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import DEADLINE_S, LeadSession, swarm, wait_for

from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.team.file import TeamFile
from swarm.schedule.book import ScheduleBook
from swarm.schedule.firing import MARK
from swarm.schedule.model import Firing

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def scheduler(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "swarm", "scheduler", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SWARM_TEAM": ""},
    )


def once_at(instant: datetime) -> subprocess.Popen[str]:
    return scheduler("--once", "--now", instant.isoformat(), "--json")


def add_schedules(count: int, cron: str = "* * * * *", missed: str = "skip") -> list[str]:
    ids = []
    for n in range(count):
        added = swarm(
            "schedule", "add", cron, "--task", f"job {n}", "--missed", missed, "--json"
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        ids.append(json.loads(added.stdout)["id"])
    return ids


def backdate(root: Path, ids: list[str], created: datetime) -> None:
    """The schedules as if added at `created` (they fire from then on)."""
    book = ScheduleBook(root)
    for schedule_id in ids:
        book.update(
            schedule_id, lambda s: s.model_copy(update={"created": created.isoformat()}), 5
        )  # fmt: skip


def marks(paths: TeamPaths) -> Counter[str]:
    """How many tasks of the board carry each firing's mark."""
    tasks = open_store(paths).task_board().list()
    return Counter(str((t.metadata or {}).get(MARK)) for t in tasks)


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, err
    return out


def test_two_schedulers_at_once_fire_each_firing_once(
    config_root: Path, paths: TeamPaths, team: TeamFile
) -> None:
    ids = add_schedules(12)
    backdate(config_root, ids, T0 - timedelta(seconds=30))
    for minute in range(3):
        now = T0 + timedelta(minutes=minute)
        outputs = [finish(p) for p in [once_at(now), once_at(now)]]
        fired = [json.loads(line) for out in outputs for line in out.splitlines()]
        assert sorted(f["schedule"] for f in fired) == sorted(ids)  # each by one of the two
        assert {f["outcome"] for f in fired} == {"fired"}
    want = {f"{i}@{(T0 + timedelta(minutes=m)).isoformat()}" for i in ids for m in range(3)}
    assert marks(paths) == Counter(want)  # every firing's task, and once
    for found in ScheduleBook(config_root).all():
        assert [h.outcome for h in found.history] == ["fired"] * 3


def test_a_scheduler_killed_mid_pass_loses_and_doubles_nothing(
    config_root: Path, paths: TeamPaths, team: TeamFile
) -> None:
    ids = add_schedules(20)
    backdate(config_root, ids, T0 - timedelta(seconds=30))
    rng = random.Random(7)
    for minute in range(4):
        now = T0 + timedelta(minutes=minute)
        victim = once_at(now)
        with contextlib.suppress(subprocess.TimeoutExpired):  # a kill at any point of its pass
            victim.wait(timeout=rng.uniform(0.3, 1.2))
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
        finish(once_at(now))  # the next scheduler finishes what the killed one left
    want = {f"{i}@{(T0 + timedelta(minutes=m)).isoformat()}" for i in ids for m in range(4)}
    assert marks(paths) == Counter(want)
    for found in ScheduleBook(config_root).all():  # every file parses, and says so
        assert [h.outcome for h in found.history] == ["fired"] * 4


def test_after_downtime_missed_firings_are_skipped_or_run_once(
    config_root: Path, paths: TeamPaths, team: TeamFile
) -> None:
    (skip,) = add_schedules(1, "*/10 * * * *", "skip")
    (once,) = add_schedules(1, "*/10 * * * *", "once")
    backdate(config_root, [skip, once], T0 - timedelta(seconds=30))
    finish(once_at(T0))
    restart = T0 + timedelta(hours=2, minutes=7)  # down 9:00 to 11:07: 12 missed, 11:00 too late
    finish(once_at(restart))
    finish(once_at(restart))  # a second scheduler after the restart: nothing more
    last_missed = (T0 + timedelta(hours=2)).isoformat()
    assert marks(paths) == Counter(
        [f"{skip}@{T0.isoformat()}", f"{once}@{T0.isoformat()}", f"{once}@{last_missed}"]
    )
    book = ScheduleBook(config_root)
    skipped = book.find(skip).history
    assert [h.outcome for h in skipped] == ["fired", "skipped"]
    assert skipped[-1].detail.startswith("12 firings missed (2026-11-30 09:10 UTC to ")
    assert [h.outcome for h in book.find(once).history] == ["fired", "skipped", "fired"]


def test_a_scheduled_up_brings_the_team_up_once_and_back_up_after(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    team_file = work / "nightly.yaml"
    team_file.write_text(
        "team: nightly\n"
        "defaults: {model: shell, backend: subprocess}\n"
        "members:\n  - {name: ann, prompt: Work the board.}\n"
        'tasks:\n  - {subject: count, command: "echo run >> runs.txt"}\n'
    )
    added = swarm("schedule", "add", "0 2 * * *", "--up", str(team_file), "--json", team=None)
    assert added.returncode == 0, added.stderr
    schedule_id = json.loads(added.stdout)["id"]
    backdate(config_root, [schedule_id], T0 - timedelta(days=1))
    night = T0.replace(hour=2)
    first = [json.loads(line) for line in finish(once_at(night)).splitlines()]
    assert [(f["outcome"], f["detail"]) for f in first] == [
        ("fired", "team 'nightly' is up: 1 members, 1 tasks")
    ]
    paths = TeamPaths(config_root, "nightly")
    try:
        wait_for(lambda: (work / "runs.txt").exists(), "the team's task to run")
        second = finish(once_at(night + timedelta(days=1)))
        (again,) = [json.loads(line) for line in second.splitlines()]
        assert again["outcome"] == "fired", again
        assert again["detail"].startswith("team 'nightly' was up: 0 members started again")
        assert [t.subject for t in open_store(paths).task_board().list()] == ["count"]
    finally:
        swarm("down", "nightly", "--json", team=None)


@pytest.mark.slow
def test_the_lead_fires_schedules_and_with_a_scheduler_beside_it_each_minute_once(
    config_root: Path, paths: TeamPaths, team: TeamFile, tmp_path: Path
) -> None:
    (every_minute,) = add_schedules(1)
    book = ScheduleBook(config_root)

    def fired() -> list[Firing]:
        return [h for h in book.find(every_minute).history if h.outcome == "fired"]

    lead = LeadSession(None, tmp_path)  # no API key: the console, and its scheduler thread
    service: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: fired(), "the lead's firing (at the next minute)", timeout=90)
        assert fired()[0].by.startswith("swarm lead on "), fired()
        service = scheduler("--json")  # a second scheduler for the next minute
        wait_for(lambda: len(fired()) >= 2, "the next minute's firing", timeout=90)
    finally:
        lead.close()
        if service is not None:
            service.send_signal(signal.SIGTERM)
            service.communicate(timeout=DEADLINE_S)
    dues = [h.due for h in fired()]
    assert len(dues) == len(set(dues)), fired()  # each minute fired once, by one of the two
    assert all(count == 1 for count in marks(paths).values()), marks(paths)
    assert sorted(marks(paths)) == sorted(f"{every_minute}@{due}" for due in dues)
