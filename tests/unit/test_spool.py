"""The send spool and the group commit (`protocols.inbox.spool`, `InboxFile.deliver`), on real files.

Other writers are stood in for by entries put in the spool directly, and by a second process
holding the inbox's kernel lock (`flock` is per open file, so a thread of this process would
not do)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import threading
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest
from helpers import count_calls, finishes
from procs import another_process_holding

from protocols.errors import LockTimeout
from protocols.fs.jsonio import dumps_pretty
from protocols.fs.locks import FileGuard, lock_dir_for
from protocols.inbox.mailbox import Mailbox, new_item
from protocols.inbox.spool import REFUSED_PREFIX, WRITING_S, Spool
from protocols.inbox.spool_slot import IDLE_PREFIX
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


@pytest.fixture
def mailbox(team: TeamFile) -> Mailbox:
    return Mailbox(team.paths)


def texts(paths: TeamPaths, agent: str = "alice") -> list[str]:
    return [i["text"] for i in json.loads(paths.inbox(agent).read_text())]


def spool_of(paths: TeamPaths, agent: str = "alice") -> Spool:
    return Spool(paths.inbox(agent))


def names_in(spool: Spool) -> list[str]:
    """What the spool folder holds besides idle slots (a process's files kept for its next
    send: `protocols.inbox.spool_slot`)."""
    if not spool.path.exists():
        return []
    return sorted(n for n in os.listdir(spool.path) if not n.startswith(IDLE_PREFIX))


def idle_slots(spool: Spool) -> list[str]:
    return sorted(n for n in os.listdir(spool.path) if n.startswith(IDLE_PREFIX))


def whole_entries(spool: Spool) -> list[str]:
    """The texts of the entries spooled whole (a slot is published whole, in one rename)."""
    return [s.item["text"] for s in spool.pending() if s.item is not None]


def test_a_send_commits_what_waits_in_the_spool_first_then_its_own(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    for text in ("spooled 1", "spooled 2"):
        spool.put(new_item(text, "carol")).close()
    mailbox.send("alice", "own", sender="bob")
    assert texts(paths) == ["first", "spooled 1", "spooled 2", "own"]
    assert names_in(spool) == []
    # the inbox is byte for byte what one write of the whole list makes, and so is the record
    items = json.loads(paths.inbox("alice").read_text())
    assert paths.inbox("alice").read_text() == dumps_pretty(items)
    recorded = [json.loads(line)["text"] for line in paths.inbox_archive("alice").open()]
    assert recorded == ["first", "spooled 1", "spooled 2", "own"]


def test_an_entry_already_committed_is_not_committed_again(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    """A committer killed after its inbox write, before it removed the spool files."""
    (entry,) = mailbox.send("alice", "once", sender="bob")
    item = json.loads(paths.inbox("alice").read_text())[0]
    spool = spool_of(paths)
    spool.put(item).close()  # still in the spool, and already in the inbox
    mailbox.send("alice", "next", sender="bob")
    assert texts(paths) == ["once", "next"]
    assert names_in(spool) == []
    mailbox.mark_read("alice", mailbox.read_unread("alice"))
    mailbox.compact("alice")
    spool.put(item).close()  # and once it is only in the record
    mailbox.send("alice", "last", sender="bob")
    assert texts(paths) == ["last"]
    assert [e.id for e in mailbox.peek_all("alice")].count(entry.id) == 1


def _hold_and_commit(root: str, ready: Event, go: Event, taken: Queue[int]) -> None:
    """Another swarm writer: holds alice's inbox lock until `go`, then commits the spool as a
    holder's next round does, and lets go."""
    os.environ["CLAUDE_CONFIG_DIR"] = root
    inbox = Mailbox(TeamPaths(Path(root), "t")).inbox("alice")
    with inbox.lock():
        ready.set()
        go.wait(30)
        taken.put(inbox.commit_spool_locked(inbox.load_locked(), 32).taken)


def test_a_writer_that_finds_the_lock_taken_is_carried_by_the_holder(
    mailbox: Mailbox, paths: TeamPaths, config_root: Path
) -> None:
    mailbox.send("alice", "first", sender="bob")
    ctx = multiprocessing.get_context("spawn")
    ready, go, taken = ctx.Event(), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_hold_and_commit, args=(str(config_root), ready, go, taken))
    holder.start()
    try:
        assert ready.wait(30)
        sent: list[object] = []
        sender = threading.Thread(
            target=lambda: sent.append(mailbox.send("alice", "carried", sender="carol"))
        )
        sender.start()
        spool = spool_of(paths)
        deadline = time.monotonic() + 30
        while not whole_entries(spool) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert whole_entries(spool), "the waiting writer did not spool its entry"
        assert not sent, "the send returned before its entry was committed"
        go.set()
        assert taken.get(timeout=30) == 1  # the holder's commit took the waiting entry
        sender.join(30)
        assert sent and texts(paths) == ["first", "carried"]
        assert names_in(spool) == []
    finally:
        go.set()
        holder.join(30)


def test_a_send_that_times_out_takes_its_entry_back(paths: TeamPaths, team: TeamFile) -> None:
    mailbox = Mailbox(paths, lock_timeout=0.2)
    mailbox.send("alice", "before", sender="bob")
    with another_process_holding(paths.inbox("alice")):
        with pytest.raises(LockTimeout):
            mailbox.send("alice", "refused", sender="bob")
        assert names_in(spool_of(paths)) == []  # not left to be delivered later
    mailbox.send("alice", "after", sender="bob")
    assert texts(paths) == ["before", "after"]


def test_a_claude_code_lock_held_too_long_leaves_nothing_spooled(
    paths: TeamPaths, team: TeamFile
) -> None:
    mailbox = Mailbox(paths, lock_timeout=0.2)
    mailbox.send("alice", "before", sender="bob")
    os.mkdir(lock_dir_for(paths.inbox("alice")))  # Claude Code holds the inbox
    with pytest.raises(LockTimeout):
        mailbox.send("alice", "during", sender="bob")
    os.rmdir(lock_dir_for(paths.inbox("alice")))
    mailbox.send("alice", "after", sender="bob")
    assert texts(paths) == ["before", "after"]
    assert names_in(spool_of(paths)) == []


def test_hostile_spool_files_are_moved_aside_and_the_rest_delivered(
    mailbox: Mailbox, paths: TeamPaths, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    spool.put(new_item("good", "carol")).close()
    old = time.time() - WRITING_S - 1
    (spool.path / "00000000000000000001-1-x.json").write_text("not json")
    os.utime(spool.path / "00000000000000000001-1-x.json", (old, old))
    (spool.path / "00000000000000000002-1-x.json").write_text("[1, 2]")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(new_item("from outside", "mallory")))
    (spool.path / "00000000000000000003-1-x.json").symlink_to(secret)
    (spool.path / "00000000000000000004-1-x.json").mkdir()
    os.mkfifo(spool.path / "00000000000000000005-1-x.json")  # nobody ever writes into them:
    os.mkfifo(spool.path / "00000000000000000006-1-x.slot")  # an open would wait for ever
    (spool.path / "stray.txt").write_text("x")
    with caplog.at_level(logging.ERROR, logger="protocols.inbox.spool"):
        sent = finishes(lambda: mailbox.send("alice", "own", sender="bob"))
    assert not isinstance(sent, BaseException), sent
    assert texts(paths) == ["first", "good", "own"]
    left = names_in(spool)
    assert left and all(name.startswith(REFUSED_PREFIX) for name in left), left
    assert len(left) == 7
    assert "not JSON" in caplog.text and "symbolic link" in caplog.text
    assert "is a FIFO, not a regular file" in caplog.text
    assert "is a directory, not a regular file" in caplog.text
    assert json.loads(secret.read_text())["text"] == "from outside"  # untouched, unread
    mailbox.send("alice", "again", sender="bob")  # refused files are not looked at again
    assert texts(paths)[-1] == "again"


def test_an_entry_still_being_written_is_left_for_the_next_round(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="bob")
    spool = spool_of(paths)
    whole = dumps_pretty(new_item("late", "carol"), level=1)
    half = spool.path / "00000000000000000001-1-x.json"
    spool.path.mkdir(parents=True, exist_ok=True)
    half.write_text(whole[: len(whole) // 2])  # its writer is still writing it
    mailbox.send("alice", "own", sender="bob")
    assert texts(paths) == ["first", "own"]
    assert names_in(spool) == [half.name]  # not refused: young
    half.write_text(whole)
    mailbox.send("alice", "next", sender="bob")
    assert texts(paths) == ["first", "own", "late", "next"]
    assert names_in(spool) == []


def test_a_send_to_a_deleted_team_makes_no_folder(mailbox: Mailbox, paths: TeamPaths) -> None:
    mailbox.send("alice", "first", sender="bob")
    team_dir = paths.inbox("alice").parent.parent
    mailbox.team.load()  # the roster is cached: the send below gets as far as the inbox
    shutil.rmtree(team_dir)
    with pytest.raises(Exception):  # noqa: B017 - whichever error: nothing may be made
        mailbox.inbox("alice").deliver(new_item("late", "bob"), 32)
    assert not team_dir.exists()


def test_acquire_unless_takes_a_free_lock_and_calls_on_busy_only_when_taken(
    tmp_path: Path,
) -> None:
    target = tmp_path / "x.json"
    target.write_text("[]")
    busy: list[int] = []
    guard = FileGuard(target)
    assert guard.acquire_unless(lambda: True, on_busy=lambda: busy.append(1))
    assert busy == [] and lock_dir_for(target).is_dir()
    guard.release()
    with another_process_holding(target):
        again = FileGuard(target, timeout=5)
        assert not again.acquire_unless(lambda: True, on_busy=lambda: busy.append(1))
        assert busy == [1] and not again.held and not lock_dir_for(target).exists()


def test_several_messages_to_one_inbox_are_separate_entries_in_order_in_one_commit(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "first", sender="bob")
    written = mailbox.post_many(
        "alice", [("the answer", "acknowledged", None), ("idle now", None, "msg-2")], sender="bob"
    )
    assert texts(paths) == ["first", "the answer", "idle now"]
    items = json.loads(paths.inbox("alice").read_text())
    assert [i["id"] for i in items[1:]] == [w["id"] for w in written]
    assert written[1]["id"] == "msg-2" and items[1]["summary"] == "acknowledged"
    assert len({i["msg_id"] for i in items}) == 3  # each its own message
    assert paths.inbox("alice").read_text() == dumps_pretty(items)
    # sent again with the same ids (a retry after a failure): stored once
    mailbox.post_many("alice", [("idle now", None, "msg-2")], sender="bob")
    assert texts(paths) == ["first", "the answer", "idle now"]


def test_several_entries_spooled_together_are_taken_only_whole_and_in_order(
    paths: TeamPaths, team: TeamFile
) -> None:
    spool = spool_of(paths)
    waiting = spool.put_many([new_item(f"part {n}", "carol") for n in (1, 2, 3)])
    assert len(waiting.names) == 1 and waiting()  # one slot holds the three
    assert [s.item["text"] for s in spool.pending() if s.item] == ["part 1", "part 2", "part 3"]
    assert not waiting.done()
    spool.remove(waiting.names)
    assert not waiting() and waiting.done()
    waiting.close()
    # spool files of one entry each, as swarm wrote them before its slots: a writer that
    # died part way, long ago, is delivered in order; one writing now is waited for
    stem = f"{time.time_ns() - int((WRITING_S + 1) * 1e9):020d}-1-dead"
    for k in (1, 2):
        item = dumps_pretty(new_item(f"left {k}", "carol"), level=1)
        (spool.path / f"{stem}-{k:03d}of003.json").write_text(item)
    young = f"{time.time_ns():020d}-1-alive"
    (spool.path / f"{young}-001of002.json").write_text(dumps_pretty(new_item("x", "dave")))
    assert [s.item["text"] for s in spool.pending() if s.item] == ["left 1", "left 2"]


def test_a_writer_of_several_entries_that_finds_the_lock_taken_is_carried_whole(
    mailbox: Mailbox, paths: TeamPaths, config_root: Path
) -> None:
    mailbox.send("alice", "first", sender="bob")
    ctx = multiprocessing.get_context("spawn")
    ready, go, taken = ctx.Event(), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_hold_and_commit, args=(str(config_root), ready, go, taken))
    holder.start()
    try:
        assert ready.wait(30)
        sent: list[object] = []
        messages = [("answer", None, None), ("idle", None, None)]
        sender = threading.Thread(
            target=lambda: sent.append(mailbox.post_many("alice", messages, sender="carol"))
        )
        sender.start()
        spool = spool_of(paths)
        deadline = time.monotonic() + 30
        while len(whole_entries(spool)) < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert whole_entries(spool) == ["answer", "idle"], "the waiting writer did not spool"
        assert not sent, "the send returned before its entries were committed"
        go.set()
        assert taken.get(timeout=30) == 2  # one commit of the holder took both
        sender.join(30)
        assert sent and texts(paths) == ["first", "answer", "idle"]
        assert names_in(spool) == []
    finally:
        go.set()
        holder.join(30)


def test_a_lone_send_looks_at_the_spool_and_reads_the_record_once(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody waited when the hold began: no second round; the record read for the repeat
    check is the one the record's append is checked against (one writer at a time)."""
    from protocols.inbox.file import InboxFile

    mailbox.send("alice", "first", sender="bob")
    pending = count_calls(monkeypatch, Spool, "pending")
    tail = count_calls(monkeypatch, InboxFile, "_record_tail")
    recorded = count_calls(monkeypatch, InboxFile, "recorded")
    mailbox.send("alice", "second", sender="bob")
    # an append asks the record's tail, not the whole record (`protocols.inbox.splice`)
    assert (len(pending), len(tail), len(recorded)) == (1, 1, 0)
    assert texts(paths) == ["first", "second"]
    lines = [json.loads(line)["text"] for line in paths.inbox_archive("alice").open()]
    assert lines == ["first", "second"]  # recorded once each, with the record read once


def test_a_hold_that_carried_spooled_entries_looks_once_more(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was spooled while the first round was written goes in a second round of the same
    hold (an entry spooled during the commit stands in for a writer that came meanwhile)."""
    from protocols.inbox import file as inbox_module

    spool = spool_of(paths)
    spool.put(new_item("waiting", "carol")).close()
    original = inbox_module.atomic_write_text
    rounds: list[int] = []

    def write_then_another_comes(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        rounds.append(1)
        if len(rounds) == 1:
            spool.put(new_item("came meanwhile", "dave")).close()

    monkeypatch.setattr(inbox_module, "atomic_write_text", write_then_another_comes)
    pending = count_calls(monkeypatch, Spool, "pending")
    mailbox.send("alice", "own", sender="bob")
    assert texts(paths) == ["waiting", "own", "came meanwhile"]
    assert len(pending) == 2 and names_in(spool) == []
