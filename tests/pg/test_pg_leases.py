"""What a running member does on its own on a PostgreSQL team: a heartbeat tells it when a sweep
is due, so idle members sweep only when a lease ran out (one statement per beat otherwise), and
a teammate does sweep then (a dead member's task comes back and is done); a member declared dead
while it still ran rejoins at its next beat; a store's parts are
used from several of its threads (each on a connection of its own)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers import swarm, wait_for
from pg_cli import url_of

from protocols.errors import StaleClaim
from protocols.messages.models import TeammateTerminated
from protocols.paths import TeamPaths
from protocols.pg import Database, Leases, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.pg.store import PgStore, _heartbeating

TEAM = "t"


def test_a_heartbeat_says_when_some_lease_ran_out(db: Database, pg_team: PgTeamFile) -> None:
    leases = Leases(db, TEAM)
    assert leases.beat("alice")[1] is False  # carol never beat: no lease, nothing to sweep
    leases.heartbeat("bob", lease_s=0.001)  # runs out at once
    assert wait_for(lambda: leases.beat("alice")[1], "alice's beat to see bob's lease run out")
    assert [e.name for e in leases.sweep()] == ["bob"]
    assert leases.beat("alice")[1] is False  # swept: nothing due any more


@pytest.mark.slow
def test_a_teammate_returns_a_dead_members_task_and_does_it(
    db: Database, pg_team: PgTeamFile, conninfo: str, config_root: Path, tmp_path: Path
) -> None:
    board = PgTaskBoard(db, TEAM)
    out = tmp_path / "done.txt"
    task = board.create("left by bob", metadata={"command": f"echo done > {out}"})
    assert board.claim(task.id, "bob").success
    Leases(db, TEAM).heartbeat("bob", lease_s=0.001)  # bob dies holding it
    spawned = swarm(
        "spawn", "dan", "--backend", "subprocess", "--model", "shell", "--prompt", "work",
        "--cwd", str(tmp_path), env={"SWARM_STORE": url_of(conninfo)},
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr

    def done_by_dan() -> bool:
        found = board.get(task.id)
        return found is not None and (found.status, found.owner) == ("completed", "dan")

    wait_for(done_by_dan, "dan to sweep bob's lease and do his task")
    assert out.read_text() == "done\n"
    notes = [e.structured() for e in PgMailbox(db, TEAM).read_all("team-lead")]
    assert any(isinstance(n, TeammateTerminated) and "bob" in n.message for n in notes)
    assert swarm("shutdown", "dan", env={"SWARM_STORE": url_of(conninfo)}).returncode == 0


def test_a_stores_parts_can_be_used_from_several_threads(conninfo: str, config_root: Path) -> None:
    """A teammate's timer thread marks it active with the team file its main thread made: each
    thread must get a connection of its own."""
    store = PgStore(TeamPaths(config_root, "threads", store=conninfo))
    team = store.team_file()
    team.create(description="threads")
    team.add_member("alice")
    errors: list[BaseException] = []

    def hammer() -> None:
        try:
            for n in range(50):
                team.update_member("alice", isActive=n % 2 == 0)
                team.load()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_a_member_declared_dead_while_it_ran_rejoins_at_its_next_beat(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    """bob's lease ran out in a pause longer than the lease: the sweep declared him dead and put
    his task back. His heartbeat, running again, finds him dead and rejoins: alive with a new
    lease (so he beats, and sweeps, again), the lead told; his task stays on the board, and his
    late completion of it is refused."""
    board = PgTaskBoard(db, TEAM)
    task = board.create("held by bob")
    claim = board.claim(task.id, "bob")
    assert claim.success
    leases = Leases(db, TEAM)
    said: list[str] = []
    with _heartbeating(conninfo, TEAM, "bob", said.append, lease_s=1.0):
        assert leases.end("bob", "its lease ran out") is not None  # as the sweep does
        assert leases.view()["bob"].alive is False
        wait_for(lambda: leases.view()["bob"].alive, "bob's heartbeat to rejoin")
        wait_for(lambda: said, "bob to say he was declared dead and rejoined")
        assert "declared dead" in said[0] and "rejoined with a new lease" in said[0]
    notes = [e.text for e in PgMailbox(db, TEAM).read_all("team-lead")]
    assert any("bob is alive" in n and "rejoined" in n for n in notes), notes
    again = board.get(task.id)
    assert again is not None and (again.status, again.owner) == ("pending", None)
    with pytest.raises(StaleClaim):  # what he still sends about it is refused
        board.complete(task.id, "bob", claim.epoch)
    assert leases.rejoin("bob") is False  # alive: nothing to rejoin
