"""The leases a bridge holds for the Claude Code members living on its host
(`protocols.bridge.leases`), against a real server and real processes."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

import pytest
from helpers import wait_for
from pg_cli import url_of

from protocols.bridge.leases import BridgedLeases
from protocols.pg import Database, Leases, PgTaskBoard, PgTeamFile
from protocols.pids import ProcessIdentity


def held(db: Database, name: str) -> bool:
    return Leases(db, "t").view()[name].held


def test_a_local_member_without_a_recorded_process_holds_a_lease_while_the_bridge_beats(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    leases = BridgedLeases(url_of(conninfo), "t", ["alice", "nobody-yet"], lease_s=30)
    assert not held(db, "alice")
    assert leases.beat(db) == ["alice"]  # a name not in the roster holds none
    assert held(db, "alice") and not held(db, "bob")  # bob is not this bridge's


def test_a_local_member_whose_process_died_is_not_renewed_and_its_tasks_go_back(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE)
    identity = ProcessIdentity.of(child.pid)
    assert identity is not None
    pg_team.update_member("alice", **identity.to_value())
    board = PgTaskBoard(db, "t")
    task = board.create("review")
    assert board.claim(task.id, "alice").success
    leases = BridgedLeases(url_of(conninfo), "t", ["alice"], lease_s=1)
    assert leases.beat(db) == ["alice"]  # its Claude Code process lives
    child.kill()
    child.wait()
    assert leases.beat(db) == []  # gone: the bridge no longer stands for it
    wait_for(lambda: not held(db, "alice"), "alice's lease to run out")
    [expired] = Leases(db, "t").sweep()
    assert (expired.name, expired.released) == ("alice", [task.id])
    assert board.require(task.id).status == "pending"


def test_a_member_declared_dead_is_said_once_and_not_brought_back(
    db: Database, pg_team: PgTeamFile, conninfo: str, caplog: pytest.LogCaptureFixture
) -> None:
    leases = BridgedLeases(url_of(conninfo), "t", ["alice"], lease_s=0.2)
    assert leases.beat(db) == ["alice"]
    wait_for(lambda: not held(db, "alice"), "alice's lease to run out")
    assert [e.name for e in Leases(db, "t").sweep()] == ["alice"]
    with caplog.at_level(logging.WARNING):
        assert leases.beat(db) == []
        assert leases.beat(db) == []
    assert sum("declared dead" in r.getMessage() for r in caplog.records) == 1
    assert not Leases(db, "t").view()["alice"].alive


def test_run_beats_until_stopped(db: Database, pg_team: PgTeamFile, conninfo: str) -> None:
    leases = BridgedLeases(url_of(conninfo), "t", ["alice"], lease_s=0.6)
    stop = threading.Event()
    beating = threading.Thread(target=leases.run, args=(stop,))
    beating.start()
    wait_for(lambda: held(db, "alice"), "the first beat")
    first = Leases(db, "t").expires_at("alice")
    wait_for(lambda: Leases(db, "t").expires_at("alice") != first, "a renewal")
    stop.set()
    beating.join(10)
    assert not beating.is_alive()
    wait_for(lambda: not held(db, "alice"), "the lease to run out once the bridge stopped")
