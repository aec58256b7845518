"""``isActive`` (and the status file's "working") only for turns that last (`teammate.activity`):
a short turn leaves config.json alone, a long one is marked active once and idle at its end."""

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
    activity.close()
    assert True not in record.calls  # only "idle, if it is not already"
    assert set(record.calls) == {False}


def test_a_turn_that_lasts_is_marked_active_then_idle() -> None:
    record = Recorder()
    activity = Activity(record, after_s=0.01)
    activity.begin()
    assert record.marked.wait(30), "the lasting turn was never marked active"
    activity.end()
    activity.close()
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
    activity.close()
    assert record.calls == [False, True, False]


def test_turns_one_after_another_share_one_thread_and_only_the_lasting_one_is_marked() -> None:
    record = Recorder()
    activity = Activity(record, after_s=30.0)
    before = threading.active_count()
    activity.begin()
    activity.end()
    thread = activity._thread
    for _ in range(19):  # quick turns: the thread waits for the first one's deadline
        activity.begin()
        activity.end()
    assert thread is not None and activity._thread is thread and thread.is_alive()
    activity._after_s = 0.01  # an earlier deadline than the one it waits for: it is told
    activity.begin()
    assert record.marked.wait(30)
    activity.end()
    activity.close()
    assert not thread.is_alive()
    assert record.calls == [False] * 20 + [True, False]
    assert threading.active_count() <= before
