"""The mailbox on files, what only it does: Claude Code's entry format, broadcasts written in
parallel, compaction, the record, waking on inotify, and recovery from a corrupt inbox (what every
store does is in tests/contract)."""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import finishes

from protocols.errors import LockTimeout, UnknownMember
from protocols.fs.locks import lock_dir_for
from protocols.inbox import file as inbox_module
from protocols.inbox import record as record_module
from protocols.inbox.entry import format_for_model
from protocols.inbox.mailbox import Mailbox, broadcast_threads
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from protocols.watch.wakeup import InboxWatcher

TRICKY = "quotes \" ' $(rm -rf ~) `id` \n newline ünïcødé 🐝 \\ backslash"


@pytest.fixture
def mailbox(team: TeamFile) -> Mailbox:
    return Mailbox(team.paths)


def test_a_message_lands_in_claude_codes_entry_format(mailbox: Mailbox, paths: TeamPaths) -> None:
    (entry,) = mailbox.send("alice", TRICKY, sender="bob", summary="tricky text", color="green")
    raw = paths.inbox("alice").read_text(encoding="utf-8")
    assert not raw.endswith("\n")
    (item,) = json.loads(raw)
    assert list(item) == [
        "from",
        "text",
        "summary",
        "timestamp",
        "color",
        "read",
        "id",
        "msgV",
        "msg_id",
        "type",
    ]
    assert item["text"] == TRICKY and item["read"] is False and item["id"] == entry.id
    # Claude Code 2.1.196 and later: a version, a UUID to de-duplicate on, a type
    assert item["msgV"] == 1 and item["type"] == "message"
    assert str(uuid.UUID(item["msg_id"])) == item["msg_id"] == entry.identity
    assert item["timestamp"].endswith("Z") and len(item["timestamp"]) == 24
    assert "ünïcødé 🐝" in raw  # UTF-8, not \u escapes


def test_post_returns_what_it_wrote_and_send_the_same_as_entries(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    (item,) = mailbox.post("alice", "raw", sender="bob")
    (entry,) = mailbox.send("alice", "model", sender="bob", summary="s", color="blue")
    first, second = json.loads(paths.inbox("alice").read_text(encoding="utf-8"))
    assert item == first and list(item) == list(first)
    assert entry.to_json_dict() == second and list(entry.to_json_dict()) == list(second)
    assert "summary" not in first and "color" not in first  # nothing null is written


def test_an_unknown_recipient_is_an_error_and_creates_no_inbox(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    with pytest.raises(UnknownMember, match=r"no member named 'alcie'.*alice"):
        mailbox.send("alcie", "hi", sender="team-lead")
    assert not paths.inbox("alcie").exists()


@pytest.mark.parametrize(
    ("wall_s", "cpu_s", "threads"),
    [
        (0.0012, 0.0006, 2),  # quick fsyncs: no more than keeps a core busy
        (0.0003, 0.0003, 2),  # at least 2
        (0.0025, 0.0005, 5),
        (0.0106, 0.0006, 16),  # slow fsyncs: at most 16
        (0.01, 0.0, 16),  # no CPU measured: the most
    ],
)
def test_a_broadcast_writes_as_many_inboxes_at_once_as_keep_a_core_busy(
    wall_s: float, cpu_s: float, threads: int
) -> None:
    assert broadcast_threads(wall_s, cpu_s) == threads


@pytest.mark.parametrize("failing", ["team-lead", "carol"], ids=["first", "last"])
def test_a_broadcast_tries_every_inbox_before_it_raises_the_failure(
    mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """The first inbox is written alone (timed), the others after it, side by side: a failure
    of either is raised once every other member has the message."""
    deliver = inbox_module.InboxFile.deliver

    def full_disk(self: inbox_module.InboxFile, *args: Any, **kwargs: Any) -> None:
        if self.path.name == f"{failing}.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        deliver(self, *args, **kwargs)

    monkeypatch.setattr(inbox_module.InboxFile, "deliver", full_disk)
    with pytest.raises(OSError, match="No space left"):
        mailbox.send("*", "standup", sender="alice")
    for name in {"team-lead", "bob", "carol"} - {failing}:
        assert [e.text for e in mailbox.read_unread(name)] == ["standup"]
    assert mailbox.read_unread(failing) == []


def test_claude_code_entries_without_an_id_are_marked_by_content(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    items = [
        {"from": "bob", "text": "same", "timestamp": "2026-01-01T00:00:00.000Z", "read": False},
        {"from": "bob", "text": "other", "timestamp": "2026-01-01T00:00:00.000Z"},
    ]
    paths.inbox("alice").write_text(json.dumps(items, indent=2))
    first = mailbox.read_unread("alice")[0]
    assert mailbox.mark_read("alice", [first]) == 1
    assert [e.text for e in mailbox.read_unread("alice")] == ["other"]


def test_a_resent_message_with_the_same_id_is_stored_once(mailbox: Mailbox) -> None:
    mailbox.send("alice", "once", sender="team-lead", message_id="m-1")
    mailbox.send("alice", "once", sender="team-lead", message_id="m-1")
    assert len(mailbox.read_all("alice")) == 1
    mailbox.mark_read("alice", mailbox.read_unread("alice"))
    mailbox.compact("alice")
    assert mailbox.read_all("alice") == []
    mailbox.send("alice", "once", sender="team-lead", message_id="m-1")  # already delivered
    assert mailbox.read_all("alice") == []
    assert [e.id for e in mailbox.read_archive("alice")] == ["m-1"]


def test_compaction_moves_read_messages_and_never_unread_ones(team: TeamFile) -> None:
    mailbox = Mailbox(team.paths, compact_after=4)
    for n in range(10):
        mailbox.send("alice", f"m{n}", sender="team-lead")
    mailbox.mark_read("alice", mailbox.read_unread("alice")[:6])
    mailbox.send("alice", "m10", sender="team-lead")
    live = mailbox.read_all("alice")
    assert [e.text for e in live] == ["m6", "m7", "m8", "m9", "m10"]
    assert all(not e.is_read for e in live)
    # the record holds every message sent, the history says which were read
    assert [e.text for e in mailbox.read_archive("alice")] == [f"m{n}" for n in range(11)]
    history = mailbox.peek_all("alice")
    assert [(e.text, e.is_read) for e in history] == [(f"m{n}", n < 6) for n in range(11)]


def test_the_history_keeps_what_a_deleting_reader_took(mailbox: Mailbox, paths: TeamPaths) -> None:
    """Claude Code 2.1.160 and later rewrite the inbox keeping only unread entries."""
    mailbox.send("alice", "first", sender="team-lead")
    mailbox.send("alice", "second", sender="bob")
    inbox = paths.inbox("alice")
    items = json.loads(inbox.read_text())
    inbox.write_text(json.dumps(items[1:], indent=2))  # "first" read, and deleted with it
    assert [e.text for e in mailbox.read_all("alice")] == ["second"]
    assert [(e.text, e.is_read) for e in mailbox.peek_all("alice")] == [
        ("first", True),
        ("second", False),
    ]


def test_what_others_write_is_recorded_by_an_observer(mailbox: Mailbox, paths: TeamPaths) -> None:
    foreign = {"from": "bob", "text": "from Claude Code", "timestamp": "2026-11-20T10:00:00.000Z"}
    foreign |= {"msgV": 1, "msg_id": str(uuid.uuid4()), "type": "message", "read": False}
    paths.inbox("alice").write_text(json.dumps([foreign]))
    assert mailbox.observe("alice") == 1
    assert mailbox.observe("alice") == 0  # once
    paths.inbox("alice").write_text("[]")  # its reader deleted it
    (kept,) = mailbox.peek_all("alice")
    assert kept.text == "from Claude Code" and kept.is_read and kept.msg_id == foreign["msg_id"]


def test_observing_the_team_reads_only_the_inboxes_that_changed(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in mailbox.team.member_names():
        mailbox.inbox(name).load()  # every inbox exists
    mailbox.observe_team()
    looked: list[str] = []
    real = Mailbox.observe

    def counted(self: Mailbox, agent: str) -> int:
        looked.append(agent)
        return real(self, agent)

    monkeypatch.setattr(Mailbox, "observe", counted)
    assert mailbox.observe_team() == 0
    assert looked == []  # nothing changed: nothing read
    foreign = {"from": "bob", "text": "in place", "timestamp": "2026-11-20T10:00:00.000Z"}
    paths.inbox("alice").write_text(json.dumps([foreign | {"read": False}]))
    assert mailbox.observe_team() == 1
    assert looked == ["alice"]


def test_one_msg_id_is_delivered_once(mailbox: Mailbox, paths: TeamPaths) -> None:
    entry = {"from": "bob", "text": "retried", "timestamp": "2026-11-20T10:00:00.000Z"}
    entry |= {"msg_id": str(uuid.uuid4()), "read": False}
    paths.inbox("alice").write_text(json.dumps([entry, entry]))  # a writer that retried
    assert [e.text for e in mailbox.receive("alice", timeout=0)] == ["retried"]
    assert mailbox.read_unread("alice") == []


def test_the_live_inbox_stays_small_when_its_reader_keeps_up(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    for n in range(300):
        mailbox.send("alice", f"message {n} " + "x" * 200, sender="team-lead")
        mailbox.mark_read("alice", mailbox.read_unread("alice"))
    assert os.path.getsize(paths.inbox("alice")) < 16 * 1024
    assert len(mailbox.read_archive("alice")) >= 300 - 33


def test_a_corrupt_inbox_is_moved_aside_and_a_fresh_one_started(
    mailbox: Mailbox, paths: TeamPaths, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = paths.inbox("alice")
    inbox.write_text('[{"from": "bob", "text": "cut off')
    with caplog.at_level(logging.ERROR):
        mailbox.send("alice", "after the damage", sender="team-lead")
    (aside,) = [p for p in inbox.parent.iterdir() if ".corrupt-" in p.name]
    assert aside.name.startswith("alice.json.corrupt-")
    assert aside.read_text() == '[{"from": "bob", "text": "cut off'
    assert [e.text for e in mailbox.read_unread("alice")] == ["after the damage"]
    assert "moved it to" in caplog.text


def test_a_half_written_inbox_is_waited_for_not_thrown_away(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    mailbox.send("alice", "kept", sender="team-lead")
    inbox = paths.inbox("alice")
    whole = inbox.read_text()
    inbox.write_text(whole[:10])  # Claude Code is in the middle of an in-place write
    timer = threading.Timer(0.1, inbox.write_text, args=(whole,))
    timer.start()
    mailbox.send("alice", "next", sender="team-lead")
    timer.join()
    assert [e.text for e in mailbox.read_unread("alice")] == ["kept", "next"]
    assert not [p for p in inbox.parent.iterdir() if ".corrupt-" in p.name]


def test_items_that_are_not_messages_are_kept_in_the_file(
    mailbox: Mailbox, paths: TeamPaths
) -> None:
    paths.inbox("alice").write_text('[42, {"from": "bob"}]')
    mailbox.send("alice", "hello", sender="team-lead")
    items = json.loads(paths.inbox("alice").read_text())
    assert items[:2] == [42, {"from": "bob"}]
    assert [e.text for e in mailbox.read_unread("alice")] == ["hello"]


def test_wait_wakes_on_a_write_from_another_thread(mailbox: Mailbox, paths: TeamPaths) -> None:
    with InboxWatcher(paths.inbox("alice")) as watcher:
        assert mailbox.wait("alice", 0.05, watcher) == []
        sender = threading.Thread(
            target=mailbox.send, args=("alice", "wake up"), kwargs={"sender": "bob"}
        )
        sender.start()
        entries = mailbox.wait("alice", 10, watcher)
        sender.join()
    assert [e.text for e in entries] == ["wake up"]


def test_wait_finds_messages_by_rescanning_when_no_event_arrives(
    mailbox: Mailbox, paths: TeamPaths, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "unrelated" / "file.json"
    with InboxWatcher(elsewhere, rescan_s=0.05) as deaf:  # never sees alice's inbox change
        mailbox.send("alice", "found anyway", sender="bob")
        entries = mailbox.wait("alice", 10, deaf)
    assert [e.text for e in entries] == ["found anyway"]


def test_wait_sees_claude_codes_in_place_writes(mailbox: Mailbox, paths: TeamPaths) -> None:
    item = {
        "from": "bob",
        "text": "in place",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "read": False,
    }
    with InboxWatcher(paths.inbox("alice"), rescan_s=60) as watcher:
        assert mailbox.wait("alice", 0.01, watcher) == []
        writer = threading.Timer(0.05, paths.inbox("alice").write_text, args=(json.dumps([item]),))
        writer.start()
        entries = mailbox.wait("alice", 10, watcher)
        writer.join()
    assert [e.text for e in entries] == ["in place"]


def test_a_send_that_cannot_lock_raises_and_writes_nothing(
    team: TeamFile, paths: TeamPaths
) -> None:
    mailbox = Mailbox(paths, lock_timeout=0.2)
    mailbox.send("alice", "before", sender="team-lead")
    os.mkdir(lock_dir_for(paths.inbox("alice")))  # held by Claude Code
    with pytest.raises(LockTimeout):
        mailbox.send("alice", "during", sender="team-lead")
    os.rmdir(lock_dir_for(paths.inbox("alice")))
    assert [e.text for e in mailbox.read_unread("alice")] == ["before"]


def test_unread_messages_are_formatted_for_the_model_like_claude_code(mailbox: Mailbox) -> None:
    mailbox.send("alice", "plain", sender="team-lead")
    mailbox.send("alice", "hello", sender="bob", color="green", summary="greets")
    assert format_for_model(mailbox.read_unread("alice")) == (
        '<teammate-message teammate_id="team-lead">\nplain\n</teammate-message>\n\n'
        '<teammate-message teammate_id="bob" color="green" summary="greets">\nhello\n</teammate-message>'
    )


def test_the_record_is_parsed_once_then_only_what_was_appended(
    mailbox: Mailbox, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = paths.inbox_archive("alice")
    for text in ("one", "two"):
        mailbox.send("alice", text, sender="bob")
        mailbox.compact("alice")  # read or not, compaction records it
    mailbox.mark_read("alice", mailbox.read_unread("alice"))
    mailbox.compact("alice")
    assert [e.text for e in mailbox.read_archive("alice")] == ["one", "two"]
    parsed: list[object] = []
    real = record_module.entry_of
    monkeypatch.setattr(record_module, "entry_of", lambda item: parsed.append(item) or real(item))
    mailbox.send("alice", "three", sender="bob")
    with archive.open("ab") as handle:
        handle.write(b'{"from": "bob", "text": "torn')  # a line still being written
    assert [e.text for e in mailbox.read_archive("alice")][-1] == "three"
    assert [item["text"] for item in parsed] == ["three"]  # neither old line parsed again
    with archive.open("ab") as handle:
        handle.write(b'", "timestamp": "2026-11-25T00:00:00.000Z"}\n')
    assert mailbox.read_archive("alice")[-1].text == "torn"
    archive.write_bytes(archive.read_bytes().splitlines(keepends=True)[0])  # replaced, shorter
    assert [e.text for e in mailbox.read_archive("alice")] == ["one"]


def test_a_fifo_planted_as_the_record_is_moved_aside_and_reading_goes_on(
    mailbox: Mailbox, paths: TeamPaths, caplog: pytest.LogCaptureFixture
) -> None:
    """Every append to a record that is a FIFO failed, so no read entry could leave the live
    inbox and the owner could mark nothing read: its messages came back for ever."""
    mailbox.send("alice", "before", sender="team-lead")
    record = paths.inbox_archive("alice")
    record.unlink()
    os.mkfifo(record)
    for look in (lambda: mailbox.peek_recent("alice", 3), lambda: mailbox.peek_protocol("alice")):
        seen = finishes(look)  # a view reads no record from it, and the live inbox as it is
        assert isinstance(seen, list) and [e.text for e in seen] == ["before"], seen
    for n in range(40):  # past compaction (32 read entries)
        mailbox.send("alice", f"m{n}", sender="team-lead")
    with caplog.at_level(logging.ERROR):
        got = finishes(lambda: mailbox.read_unread("alice"))
        assert isinstance(got, list) and len(got) == 41
        assert finishes(lambda: mailbox.mark_read("alice", got)) == 41
    assert mailbox.read_unread("alice") == []
    assert record.is_file()  # a fresh record
    aside = [p for p in record.parent.iterdir() if p.name.startswith(f"{record.name}.corrupt-")]
    assert len(aside) == 1 and aside[0].is_fifo()
    assert "is a FIFO, not a regular file; moved it to" in caplog.text
    history = [e.text for e in mailbox.peek_all("alice")]
    # "before" was in the record the FIFO replaced: recorded again as it left the live inbox
    assert history == [f"m{n}" for n in range(40)] + ["before"]
