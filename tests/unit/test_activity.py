"""``isActive`` only for turns that last (`teammate.activity`): a short turn leaves config.json
alone, a long one is marked active once and idle at its end."""

from __future__ import annotations

import threading

from teammate.activity import Activity


class Recorder:
    def __init__(self) -> None:
        self.calls: list[bool] = []
        self.marked = threading.Event()

    def __call__(self, active: bool) -> None:
        self.calls.append(active)
        if active:
            self.marked.set()


def test_a_short_turn_never_marks_the_teammate_active() -> None:
    record = Recorder()
    activity = Activity(record, after_s=30.0)
    for _ in range(5):
        activity.begin()
        activity.end()
    assert True not in record.calls  # only "idle, if it is not already"
    assert set(record.calls) == {False}


def test_a_turn_that_lasts_is_marked_active_then_idle() -> None:
    record = Recorder()
    activity = Activity(record, after_s=0.01)
    activity.begin()
    assert record.marked.wait(30), "the lasting turn was never marked active"
    activity.end()
    assert record.calls == [True, False]


def test_a_new_turn_cancels_the_mark_of_the_one_before() -> None:
    record = Recorder()
    activity = Activity(record, after_s=30.0)
    activity.begin()
    activity.end()
    activity._after_s = 0.01  # the next turn lasts
    activity.begin()
    assert record.marked.wait(30)
    activity.end()
    assert record.calls == [False, True, False]
