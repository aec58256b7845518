"""Schedules: cron expressions checked and stepped, what is due at an instant (on time, late,
missed while no scheduler ran), and firings that are done once however often they are tried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import swarm

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.team.file import TeamFile
from swarm.schedule.book import ScheduleBook
from swarm.schedule.cron import BadSchedule, Cron
from swarm.schedule.firing import MARK, fire
from swarm.schedule.model import Schedule, ScheduleNotFound
from swarm.schedule.scheduler import decide, run_due

MONDAY_9 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def schedule(cron: str = "0 9 * * *", **fields: object) -> Schedule:
    given = {"id": "s1", "zone": "UTC", "team": "t", "action": "task", "subject": "triage"}
    return Schedule.model_validate({**given, "cron": cron, **fields})


@pytest.mark.parametrize(
    ("expression", "said"),
    [
        ("61 * * * *", "bad minute"),
        ("* * *", "3 fields where five are needed"),
        ("0 0 * * * *", "6 fields where five are needed"),
        ("@dayly", "unknown nickname"),
        ("0 0 31 2 *", "bad day-of-month"),
        ("$(touch${IFS}x) * * * *", "bad minute"),
    ],
)
def test_a_bad_expression_is_refused_naming_what_is_wrong_and_what_is_allowed(
    expression: str, said: str
) -> None:
    with pytest.raises(BadSchedule) as caught:
        Cron(expression, "UTC")
    assert said in str(caught.value)
    assert "five fields, minute hour day-of-month month day-of-week" in str(caught.value)


def test_a_zone_that_does_not_exist_is_refused() -> None:
    with pytest.raises(BadSchedule, match="'Mars/Base' is not known; give an IANA name"):
        Cron("@daily", "Mars/Base")


def test_firings_follow_the_zone_and_its_daylight_saving() -> None:
    weekdays = Cron("0 9 * * mon-fri", "Europe/Paris")
    week = list(weekdays.firings(at("2026-11-27T00:00"), at("2026-12-02T00:00")))
    assert week == [at("2026-11-27T08:00"), at("2026-11-30T08:00"), at("2026-12-01T08:00")]
    summer = weekdays.next_after(at("2026-07-01T00:00"))
    assert summer == at("2026-07-01T07:00")  # 9:00 in Paris is 7:00 UTC in summer
    assert Cron("@hourly", "UTC").next_after(at("2026-01-01T09:00")) == at("2026-01-01T10:00")


def test_nothing_is_due_before_the_first_firing() -> None:
    found = schedule(created="2026-11-30T08:30:00Z")
    assert decide(found, at("2026-11-30T08:59")).settle is None


def test_a_firing_on_time_or_a_little_late_fires() -> None:
    found = schedule(created="2026-11-30T08:30:00Z")
    for now in (MONDAY_9, MONDAY_9 + timedelta(minutes=4)):
        decision = decide(found, now)
        assert (decision.fire, decision.missed, decision.settle) == (MONDAY_9, [], MONDAY_9)


def test_firings_missed_while_no_scheduler_ran_are_skipped_or_run_once() -> None:
    settled = {"created": "2026-11-27T08:00:00Z", "settled": "2026-11-27T09:00:00+00:00"}
    now = at("2026-11-30T12:00")  # three days down: 28th, 29th and 30th at 9:00 missed
    missed = [at("2026-11-28T09:00"), at("2026-11-29T09:00"), MONDAY_9]
    skip = decide(schedule(**settled), now)
    assert (skip.fire, skip.missed, skip.settle) == (None, missed, MONDAY_9)
    once = decide(schedule(missed="once", **settled), now)
    assert (once.fire, once.missed, once.settle) == (MONDAY_9, missed[:-1], MONDAY_9)


def test_a_firing_due_now_after_downtime_fires_and_the_older_ones_are_missed() -> None:
    found = schedule(created="2026-11-27T08:00:00Z", settled="2026-11-27T09:00:00+00:00")
    decision = decide(found, MONDAY_9)
    assert decision.fire == MONDAY_9
    assert decision.missed == [at("2026-11-28T09:00"), at("2026-11-29T09:00")]


def test_a_settled_firing_is_not_due_again() -> None:
    found = schedule(created="2026-11-30T08:00:00Z", settled=MONDAY_9.isoformat())
    assert decide(found, MONDAY_9 + timedelta(minutes=1)).settle is None


def test_schedules_are_found_by_a_unique_prefix_and_removed(config_root: Path) -> None:
    book = ScheduleBook(config_root)
    first = book.add(schedule())
    second = book.add(schedule("@hourly"))
    assert [s.id for s in book.all()] == [first.id, second.id]
    assert book.find(first.id[:9]).id == first.id
    with pytest.raises(ScheduleNotFound, match="matches several"):
        book.find("s")
    with pytest.raises(ScheduleNotFound, match="matches no schedule"):
        book.find("nope")
    assert book.remove(second.id).id == second.id
    assert [s.id for s in book.all()] == [first.id]


def test_a_bad_schedule_writes_nothing(config_root: Path) -> None:
    book = ScheduleBook(config_root)
    with pytest.raises(BadSchedule):
        book.add(schedule("* * *"))
    assert book.all() == []


def test_a_task_firing_done_twice_adds_the_task_once(
    config_root: Path, paths: TeamPaths, team: TeamFile
) -> None:
    found = ScheduleBook(config_root).add(schedule(command="echo hi"))
    assert fire(found, MONDAY_9, config_root) == "added task #1"
    assert fire(found, MONDAY_9, config_root) == "task #1 was added already"
    (task,) = open_store(paths).task_board().list()
    assert task.metadata is not None
    assert task.metadata[MARK] == f"{found.id}@{MONDAY_9.isoformat()}"
    assert fire(found, MONDAY_9 + timedelta(days=1), config_root) == "added task #2"


def test_a_message_firing_done_twice_is_delivered_once(
    config_root: Path, paths: TeamPaths, team: TeamFile
) -> None:
    found = ScheduleBook(config_root).add(schedule(action="send", to="alice", text="status?"))
    fire(found, MONDAY_9, config_root)
    fire(found, MONDAY_9, config_root)
    assert [e.text for e in Mailbox(paths).peek_all("alice")] == ["status?"]


def test_two_passes_at_one_instant_fire_once_and_a_failure_is_recorded(
    config_root: Path, team: TeamFile
) -> None:
    book = ScheduleBook(config_root)
    good = book.add(schedule(created="2026-11-30T08:00:00Z"))
    bad = book.add(schedule(action="send", to="nobody", text="hi", created="2026-11-30T08:00:00Z"))
    first = run_due(config_root, MONDAY_9, "test")
    assert sorted((d.schedule, d.firing.outcome) for d in first) == sorted(
        [(good.id, "fired"), (bad.id, "failed")]
    )
    assert run_due(config_root, MONDAY_9, "test") == []
    failed = book.find(bad.id).history[-1]
    assert "no member named 'nobody'" in failed.detail


def test_the_cli_refuses_a_second_action_and_task_options_without_a_task(team: TeamFile) -> None:
    both = swarm("schedule", "add", "@daily", "--task", "x", "--send", "a", "b")
    assert both.returncode == 2
    assert "give one of --task SUBJECT, --send NAME TEXT or --up FILE" in both.stderr
    stray = swarm("schedule", "add", "@daily", "--send", "alice", "hi", "-c", "x")
    assert stray.returncode == 2
    assert "--command go with --task" in stray.stderr
    bad = swarm("schedule", "add", "@often", "--task", "x")
    assert bad.returncode == 1
    assert "unknown nickname" in bad.stderr
    assert swarm("schedule", "list").stdout.strip() == "No schedules"
