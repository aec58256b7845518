"""A spooled writer's bell (`protocols.inbox.spool_wake`): rung by the committer of another process
when it hands the send back; a ring that is about nothing costs one look; no bell, or a ring
that cannot be sent, changes nothing but speed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from protocols.inbox import spool_slot, spool_wake
from protocols.inbox.mailbox import Mailbox, new_item
from protocols.inbox.spool import Spool
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

COMMIT = """
import sys
from pathlib import Path
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
Mailbox(TeamPaths(Path(sys.argv[1]), "t")).send("alice", "committer's own", sender="bob")
"""


@pytest.fixture
def mailbox(team: TeamFile) -> Mailbox:
    return Mailbox(team.paths)


def commit_in_another_process(paths: TeamPaths) -> None:
    """A send by another process: its commit carries the spool and hands its slots back."""
    subprocess.run(
        [sys.executable, "-c", COMMIT, str(paths.root)], check=True, env=os.environ.copy()
    )


def texts(paths: TeamPaths) -> list[str]:
    return [i["text"] for i in json.loads(paths.inbox("alice").read_text())]


def test_the_committer_of_another_process_rings_the_waiting_writer(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="carol")
    waiting = Spool(paths.inbox("alice")).put(new_item("spooled", "carol"))
    bell = waiting.slot.bell
    assert bell is not None, "abstract Unix sockets are refused on this machine"
    assert not bell.wait(0.01)  # nothing yet: the wait ran out
    commit_in_another_process(paths)
    assert bell.wait(60), "the committer did not ring"  # False only after 60 s unrung
    assert waiting.done()
    waiting.close()
    assert texts(paths) == ["first", "spooled", "committer's own"]


def test_a_ring_about_nothing_costs_one_look_and_the_wait_is_slept_out(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    mailbox.send("alice", "first", sender="carol")
    waiting = Spool(paths.inbox("alice")).put(new_item("spooled", "carol"))
    slot = waiting.slot
    for _ in range(50):  # any local process may send to the address: a flood of lies
        spool_wake.ring(slot.id)
    looks = []
    carried = spool_slot.Slot.carried

    def counted(self: spool_slot.Slot) -> bool:
        looks.append(self.id)
        return carried(self)

    monkeypatch.setattr(spool_slot.Slot, "carried", counted)
    started = time.monotonic()
    slot.pause(0.2)
    assert looks == [slot.id]  # one look, not one per ring
    assert time.monotonic() - started >= 0.2  # and not back early
    assert not waiting.done()
    waiting.close()


def test_a_ring_left_from_the_last_send_is_forgotten_when_the_next_is_spooled(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="carol")
    spool = Spool(paths.inbox("alice"))
    first = spool.put(new_item("one", "carol"))
    slot = first.slot
    mailbox.send("alice", "carries it", sender="bob")  # hands it back and rings
    assert first.done()  # seen by looking, before the ring was heard
    first.close()
    second = spool.put(new_item("two", "carol"))
    assert second.slot is slot and slot.bell is not None
    assert not slot.bell.wait(0.01)  # the old ring does not wake the new send's wait
    second.close()


def test_a_writer_without_a_bell_still_finds_its_send_carried(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The address taken by someone else (or sockets refused): no bell; looking still works."""
    monkeypatch.setattr(spool_slot, "KEPT", 0)  # no slot of an earlier test kept
    taken = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    taken.bind(spool_wake.address("squatted"))
    try:
        assert spool_wake.Bell.make("squatted") is None
    finally:
        taken.close()
    monkeypatch.setattr(spool_wake.Bell, "make", classmethod(lambda cls, slot_id: None))
    mailbox.send("alice", "first", sender="carol")
    waiting = Spool(paths.inbox("alice")).put(new_item("no bell", "carol"))
    assert waiting.slot.bell is None
    commit_in_another_process(paths)
    waiting.slot.pause(0.001)  # a plain sleep
    assert waiting.done()
    waiting.close()
    assert texts(paths) == ["first", "no bell", "committer's own"]


@pytest.mark.parametrize("slot_id", ["nobody-listens", "x" * 200, "ünï\u202e-$(id)"])
def test_a_ring_that_cannot_be_delivered_is_dropped_quietly(slot_id: str) -> None:
    spool_wake.ring(slot_id)  # no listener, an address too long, odd characters: no error


def test_a_writer_waiting_in_a_thread_is_woken_by_a_send_of_another_thread(
    mailbox: Mailbox, paths: TeamPaths, tmp_path: Path
) -> None:
    """Within one process too (a teammate's threads): the ring reaches the bell."""
    mailbox.send("alice", "first", sender="carol")
    waiting = Spool(paths.inbox("alice")).put(new_item("spooled", "carol"))
    bell = waiting.slot.bell
    assert bell is not None
    sender = threading.Thread(target=lambda: mailbox.send("alice", "own", sender="bob"))
    sender.start()
    assert bell.wait(60)
    sender.join(60)
    assert waiting.done()
    waiting.close()
    assert texts(paths) == ["first", "spooled", "own"]
