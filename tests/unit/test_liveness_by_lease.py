"""`swarm.team.liveness.Liveness`: how a PostgreSQL team's member is judged from any machine
(by its lease, and by its host while it has none), and that a file team is judged as before."""

from __future__ import annotations

from typing import Any

import pytest

from protocols.pg.leases import DEFAULT_LEASE_S, Lease, lease_seconds
from protocols.pids import ProcessIdentity
from protocols.values import MemberState
from swarm.team.liveness import HOST_KEY, Liveness, member_state

GONE = {"pid": 2**22 + 17, "pidStart": 1}  # no such process here


def entry(name: str = "w1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "agentId": f"{name}@t", **extra}


@pytest.mark.parametrize(
    ("lease", "extra", "expected"),
    [
        (Lease(True, 12.0), {"isActive": True}, MemberState.WORKING),
        (Lease(True, 12.0), {"isActive": False}, MemberState.IDLE),
        (Lease(True, -0.5), {"isActive": True}, MemberState.DEAD),  # ran out, not swept yet
        (Lease(False, 12.0), {}, MemberState.DEAD),  # declared dead by a sweep
    ],
)
def test_a_member_with_a_lease_is_judged_by_it_and_not_by_its_pid(
    lease: Lease, extra: dict[str, Any], expected: MemberState
) -> None:
    member = entry(**GONE, **extra)  # its pid means nothing here (another machine's)
    assert member_state(member) == MemberState.DEAD
    assert Liveness({"w1": lease}).state(member) == expected


def test_a_member_without_a_lease_yet_is_starting_while_its_host_lives() -> None:
    member = entry(**{HOST_KEY: "b"})
    judge = Liveness({"w1": Lease(True, None)}, {"b": True})
    assert judge.state(member) == MemberState.STARTING
    assert Liveness({"w1": Lease(True, None)}, {"b": False}).state(member) == MemberState.DEAD
    assert Liveness({"w1": Lease(True, None)}, {}).state(member) == MemberState.DEAD


def test_without_a_lease_or_a_host_a_member_is_judged_by_its_process_as_on_files() -> None:
    mine = ProcessIdentity.mine().to_value()
    spawning = entry(spawnedBy=mine)  # its `swarm spawn` (here: this process) still runs
    assert Liveness({"w1": Lease(True, None)}).state(spawning) == MemberState.STARTING
    running = entry(**mine, isActive=True)
    assert Liveness().state(running) == member_state(running) == MemberState.WORKING
    assert Liveness({}).state(entry(**GONE)) == MemberState.DEAD  # not in the store: its pid
    assert Liveness({"team-lead": Lease(False, None)}).state(entry("team-lead")) == (
        MemberState.LEAD
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", 2.0), ("0.5", 0.5), ("", DEFAULT_LEASE_S), ("0", DEFAULT_LEASE_S),
     ("-3", DEFAULT_LEASE_S), ("soon", DEFAULT_LEASE_S), ("inf", DEFAULT_LEASE_S),
     ("nan", DEFAULT_LEASE_S)],
)  # fmt: skip
def test_the_lease_length_comes_from_swarm_lease_s_when_it_is_a_positive_number(
    value: str, expected: float
) -> None:
    assert lease_seconds({"SWARM_LEASE_S": value}) == expected
    assert lease_seconds({}) == DEFAULT_LEASE_S
