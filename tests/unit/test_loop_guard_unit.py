"""`teammate.agent.loop_guard`: what counts as the same call, when it is a loop, what is a wait."""

from __future__ import annotations

from teammate.agent.loop_guard import LoopGuard, repeats_from


def test_the_same_call_with_the_same_result_counts_and_a_forgiven_one_starts_again() -> None:
    guard = LoopGuard(3)
    call = ("Bash", {"command": "make test"})
    counts = [guard.saw(*call, "1 failed", False)[1] for _ in range(3)]
    assert counts == [1, 2, 3] and guard.looping(*call, 3)
    assert guard.saw(*call, "2 failed", False)[1] == 1  # another result is another call
    assert guard.saw("Bash", {"command": "make lint"}, "1 failed", False)[1] == 1
    digest, _ = guard.saw(*call, "1 failed", False)
    guard.forgive(digest)
    assert guard.saw(*call, "1 failed", False)[1] == 1


def test_waits_are_not_loops_and_zero_turns_it_off() -> None:
    guard = LoopGuard(2)
    assert not guard.looping("Bash", {"command": "sleep 5"}, 9)
    assert not guard.looping("TaskOutput", {"task_id": "b1"}, 9)
    assert guard.looping("Bash", {"command": "sleep 5; curl localhost"}, 2)
    assert not LoopGuard(0).looping("Read", {"file_path": "a"}, 99)
    assert repeats_from({"SWARM_LOOP_REPEATS": "0"}) == 0
    assert repeats_from({"SWARM_LOOP_REPEATS": "many"}) == 5  # a bad value keeps the default
    assert repeats_from({}) == 5
