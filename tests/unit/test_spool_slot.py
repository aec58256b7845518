"""A process's reusable spool files (`protocols.inbox.spool_slot`), on real files: one inode reused for
every spooled send, published whole, made idle again only by a commit, hostile files refused."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import subprocess
import threading
import time
from multiprocessing.queues import Queue
from pathlib import Path

import pytest
from procs import another_process_holding

from protocols.inbox import spool_slot
from protocols.inbox.mailbox import Mailbox, new_item
from protocols.inbox.spool import REFUSED_PREFIX, Spool
from protocols.inbox.spool_slot import IDLE_PREFIX, SLOT_SUFFIX, parse
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


@pytest.fixture
def mailbox(team: TeamFile) -> Mailbox:
    return Mailbox(team.paths)


def texts(paths: TeamPaths, agent: str = "alice") -> list[str]:
    return [i["text"] for i in json.loads(paths.inbox(agent).read_text())]


def spool_of(paths: TeamPaths) -> Spool:
    return Spool(paths.inbox("alice"))


def listed(spool: Spool, prefix: str = "", suffix: str = "") -> list[str]:
    """Names in the spool folder with `prefix` and `suffix` (no prefix: no hidden names)."""
    if not spool.path.exists():
        return []
    return sorted(
        n
        for n in os.listdir(spool.path)
        if n.startswith(prefix) and n.endswith(suffix) and (prefix or not n.startswith("."))
    )


def test_a_process_spools_every_send_into_the_same_file(mailbox: Mailbox, paths: TeamPaths) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    inodes = set()
    for n in range(3):
        waiting = spool.put(new_item(f"spooled {n}", "carol"))
        inodes.add(os.stat(spool.path / waiting.names[0]).st_ino)
        assert not waiting.done()
        mailbox.send("alice", f"own {n}", sender="bob")  # commits the spool first
        assert waiting.done() and not waiting()
        waiting.close()
    assert len(inodes) == 1  # one file, rewritten: no inode allocated per send
    assert listed(spool, suffix=SLOT_SUFFIX) == [] and len(listed(spool, IDLE_PREFIX)) == 1
    sent = ["first", "spooled 0", "own 0", "spooled 1", "own 1", "spooled 2", "own 2"]
    assert texts(paths) == sent


def test_a_slot_still_pending_is_not_reused_by_the_next_send(paths: TeamPaths) -> None:
    spool = spool_of(paths)
    (spool.path.parent.parent).mkdir(parents=True, exist_ok=True)
    first = spool.put(new_item("one", "carol"))
    first.close()  # its writer went on: the lock holder will commit it
    second = spool.put(new_item("two", "carol"))
    assert first.names != second.names and first() and second()
    assert [s.item["text"] for s in spool.pending() if s.item] == ["one", "two"]
    second.close()


def test_a_spooled_file_removed_by_another_process_is_not_taken_for_a_commit(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    """Gone from its pending name without a commit making it idle again: its writer waits for
    the lock and commits its message itself, once."""
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    waiting = spool.put(new_item("lost", "carol"))
    os.unlink(spool.path / waiting.names[0])
    assert not waiting() and not waiting.done()
    waiting.close()
    sent: list[object] = []
    with another_process_holding(paths.inbox("alice")):
        writer = threading.Thread(
            target=lambda: sent.append(mailbox.send("alice", "mine", sender="carol"))
        )
        writer.start()
        deadline = time.monotonic() + 30
        while not listed(spool, suffix=SLOT_SUFFIX) and time.monotonic() < deadline:
            time.sleep(0.001)
        pending = listed(spool, suffix=SLOT_SUFFIX)
        assert len(pending) == 1, "the writer did not spool"
        os.unlink(spool.path / pending[0])  # a hostile process, or a clean-up gone wrong
    writer.join(30)
    assert sent and texts(paths) == ["first", "mine"]  # not acknowledged unless committed


def test_a_slot_is_published_whole_and_a_broken_one_is_refused(
    mailbox: Mailbox, paths: TeamPaths, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    good = spool.put(new_item("good", "carol"))
    ns = f"{time.time_ns():020d}"
    header = spool_slot.MAGIC.encode()
    planted = {
        f"{ns}-1-a{SLOT_SUFFIX}": b"garbage",
        f"{ns}-1-b{SLOT_SUFFIX}": header + b" e 500\n{}",  # says 500 bytes, holds 2
        f"{ns}-1-c{SLOT_SUFFIX}": header + b" e 6\n[1, 2]",  # an entry that is no object
        f"{ns}-1-d{SLOT_SUFFIX}": header + b" m 3\n[1]",  # marks that are no identities
        f"{ns}-1-e{SLOT_SUFFIX}": header + b" x 2\n{}",  # no such kind
    }
    for name, data in planted.items():
        (spool.path / name).write_bytes(data)
    secret = tmp_path / "secret"
    secret.write_bytes(header + b" e 2\n{}")
    (spool.path / f"{ns}-1-f{SLOT_SUFFIX}").symlink_to(secret)
    (spool.path / f"{ns}-1-g{SLOT_SUFFIX}").mkdir()
    with caplog.at_level(logging.ERROR, logger="protocols.inbox.spool"):
        mailbox.send("alice", "own", sender="bob")
    assert texts(paths) == ["first", "good", "own"]
    assert good.done()
    good.close()
    refused = listed(spool, REFUSED_PREFIX)
    assert len(refused) == 7 and listed(spool, suffix=SLOT_SUFFIX) == []
    assert "symbolic link" in caplog.text and "not a spool slot" in caplog.text
    assert secret.read_bytes() == header + b" e 2\n{}"  # untouched


def test_parse_takes_only_what_the_header_says() -> None:
    parts = [b'{"a": 1}', '{"é": "✓"}'.encode()]
    header = f"{spool_slot.MAGIC} e {len(parts[0])},{len(parts[1])}\n".encode()
    assert parse(header + b"".join(parts)) == ("e", parts)
    for bad in (b"", b"\n", header, header + parts[0], header + b"".join(parts) + b"x"):
        with pytest.raises(ValueError):
            parse(bad)


def test_idle_slots_of_gone_processes_left_long_ago_are_swept(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    waiting = spool.put(new_item("one", "carol"))
    mailbox.send("alice", "two", sender="bob")
    waiting.close()
    [mine] = listed(spool, IDLE_PREFIX)
    gone = subprocess.Popen(["true"])
    gone.wait()
    old = time.time() - spool_slot.IDLE_SWEEP_S - 5
    dead_old = spool.path / f"{IDLE_PREFIX}{gone.pid}-deadbeef"
    dead_young = spool.path / f"{IDLE_PREFIX}{gone.pid}-0000beef"
    for path in (dead_old, dead_young):
        path.write_bytes(b"")
    for path in (dead_old, spool.path / mine):
        os.utime(path, (old, old))
    fd = os.open(spool.path, os.O_RDONLY)
    try:
        spool_slot.sweep_idle(fd)
    finally:
        os.close(fd)
    assert listed(spool, IDLE_PREFIX) == sorted([mine, dead_young.name])  # mine: still alive
    os.unlink(spool.path / mine)  # gone all the same (a person tidying up): a new slot
    again = spool.put(new_item("three", "carol"))
    mailbox.send("alice", "four", sender="bob")
    assert again.done()
    again.close()
    assert texts(paths) == ["first", "one", "two", "three", "four"]


def _spool_in_child(path: str, out: Queue[str]) -> None:
    waiting = Spool(Path(path)).put(new_item("from the child", "dave"))
    out.put(waiting.names[0])
    waiting.close()


def test_a_forked_child_does_not_write_into_its_parents_slot(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    mine = spool.put(new_item("from the parent", "carol"))
    mailbox.send("alice", "second", sender="bob")
    mine.close()  # idle and free: the parent's next send would reuse it
    ctx = multiprocessing.get_context("fork")
    out: Queue[str] = ctx.Queue()
    child = ctx.Process(target=_spool_in_child, args=(str(paths.inbox("alice")), out))
    child.start()
    name = out.get(timeout=30)
    child.join(30)
    assert f"-{child.pid}-" in name  # a slot of its own
    mailbox.send("alice", "third", sender="bob")
    assert texts(paths) == ["first", "from the parent", "second", "from the child", "third"]
