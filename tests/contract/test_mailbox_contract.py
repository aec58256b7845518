"""A mailbox on every store: a message stored once whatever the retries, marked read by
identity, broadcast to all but the sender, refused for a stranger, waited for, won by one of
many concurrent senders, and any text given back exactly."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from helpers import DEADLINE_S

from protocols.errors import BroadcastRefused, ProtocolsError, UnknownMember
from protocols.messages.models import IdleNotification, ShutdownRequest
from protocols.paths import TeamPaths
from protocols.store.contract import StoreContract
from protocols.store.selection import open_store

HOSTILE = [
    'it\'s "quoted" `back` $(rm -rf ~) ${HOME} %s %(x)s ; DROP TABLE messages; --',
    "line one\nline two\r\n\ttabbed",
    "NUL \x00 inside, bell \x07, escape \x1b[31mred\x1b[0m, DEL \x7f",
    "unicode: héllo 日本語 🙂 \u202e right-to-left \ufeff",
    "a lone surrogate \ud800 here",
    "x" * 100_000,
]


def _shutdown(request_id: str) -> ShutdownRequest:
    return ShutdownRequest(
        requestId=request_id, from_="team-lead", reason="done", timestamp="2026-01-01T00:00:00Z"
    )


def test_a_send_retried_with_its_id_is_stored_once(store: StoreContract) -> None:
    mailbox = store.mailbox()
    first = mailbox.send("alice", "hello", sender="bob", message_id="retry-1")
    again = mailbox.send("alice", "hello", sender="bob", message_id="retry-1")
    assert first[0].msg_id == again[0].msg_id
    assert [e.id for e in mailbox.peek_all("alice")] == ["retry-1"]
    mailbox.mark_read("alice", first)
    mailbox.compact("alice")
    mailbox.send("alice", "hello", sender="bob", message_id="retry-1")  # after it was read
    assert [e.id for e in mailbox.peek_all("alice")] == ["retry-1"]
    assert mailbox.read_unread("alice") == []


def test_mark_read_is_by_identity_and_read_ones_stay_in_the_history(store: StoreContract) -> None:
    mailbox = store.mailbox()
    mailbox.send("alice", "one", sender="bob")
    seen = mailbox.read_unread("alice")
    mailbox.send("alice", "two", sender="carol")  # arrives between the read and the mark
    assert mailbox.mark_read("alice", seen) == 1
    assert mailbox.mark_read("alice", seen) == 0
    assert [e.text for e in mailbox.read_unread("alice")] == ["two"]
    history = mailbox.peek_all("alice")
    assert [(e.text, e.read) for e in history] == [("one", True), ("two", False)]


def test_receive_marks_what_it_returns(store: StoreContract) -> None:
    mailbox = store.mailbox()
    mailbox.send("alice", "x", sender="team-lead")
    assert [e.text for e in mailbox.receive("alice", 1)] == ["x"]
    assert mailbox.read_unread("alice") == []


def test_structured_messages_are_sent_as_compact_json_text(store: StoreContract) -> None:
    note = IdleNotification(
        from_="alice", timestamp="2026-01-01T00:00:00.000Z", idleReason="available"
    )
    store.mailbox().send("team-lead", note, sender="alice", color="blue")
    (entry,) = store.mailbox().read_unread("team-lead")
    assert entry.text == note.encode() and entry.color == "blue"
    assert entry.structured() == note


def test_broadcast_reaches_every_other_member_once(store: StoreContract) -> None:
    mailbox = store.mailbox()
    assert mailbox.broadcast_recipients("alice") == (["team-lead", "bob", "carol"], [])
    written = mailbox.send("*", "all hands", sender="alice", message_id="b-1")
    assert sorted(e.id for e in written) == ["b-1-bob", "b-1-carol", "b-1-team-lead"]
    mailbox.broadcast("all hands", sender="alice", message_id="b-1")  # a retry: stored once
    for name in ("team-lead", "bob", "carol"):
        assert [e.text for e in mailbox.peek_all(name)] == ["all hands"]
    assert mailbox.peek_all("alice") == []


def test_a_structured_message_cannot_be_broadcast(store: StoreContract) -> None:
    mailbox = store.mailbox()
    with pytest.raises(BroadcastRefused):
        mailbox.send("*", _shutdown("r"), sender="team-lead")
    with pytest.raises(BroadcastRefused):
        mailbox.broadcast(_shutdown("r").encode(), sender="team-lead")
    assert all(mailbox.peek_all(name) == [] for name in ("alice", "bob", "carol"))


def test_an_unknown_recipient_is_refused_naming_the_members(store: StoreContract) -> None:
    with pytest.raises(UnknownMember, match=r"did you mean 'alice'.*members are: team-lead"):
        store.mailbox().send("alicee", "hi", sender="bob")


@pytest.mark.parametrize("bad", ["../alice", "a/b", ""])
def test_a_recipient_that_is_not_a_name_is_refused(store: StoreContract, bad: str) -> None:
    with pytest.raises(ProtocolsError, match=r"recipient|no member"):
        store.mailbox().send(bad, "hi", sender="team-lead")


def test_several_messages_to_one_member_are_stored_together_in_order(
    store: StoreContract,
) -> None:
    mailbox = store.mailbox()
    batch = [("the answer", "answer", "m-1"), ("idle now", None, "m-2")]
    mailbox.post_many("alice", batch, sender="bob")
    mailbox.post_many("alice", batch, sender="bob")  # a retry: each id stored once
    got = mailbox.read_unread("alice")
    assert [(e.text, e.summary, e.id) for e in got] == batch
    with pytest.raises(UnknownMember):
        mailbox.post_many("nobody", batch, sender="bob")
    mailbox.post_many("*", [("all hands", None, "b-9")], sender="bob")  # each a broadcast
    for name in ("team-lead", "alice", "carol"):
        assert [e.text for e in mailbox.read_unread(name)][-1:] == ["all hands"]
    assert [e.text for e in mailbox.read_unread("bob")] == []


def test_a_look_at_the_unread_takes_nothing_and_a_second_one_is_free(
    store: StoreContract,
) -> None:
    mailbox = store.mailbox()
    mailbox.send("alice", "one", sender="bob")
    assert [e.text for e in mailbox.peek_unread("alice")] == ["one"]
    fresh, seen = mailbox.unread_changed("alice", None)
    assert [e.text for e in fresh] == ["one"]
    mailbox.mark_read("alice", fresh)
    fresh, seen = mailbox.unread_changed("alice", None)
    assert fresh == []
    assert mailbox.unread_changed("alice", seen)[0] == []  # unchanged: nothing, at once
    mailbox.send("alice", "two", sender="carol")
    assert [e.text for e in mailbox.unread_changed("alice", seen)[0]] == ["two"]
    assert mailbox.team_file().member_names() == ["team-lead", "alice", "bob", "carol"]


def test_await_message_takes_only_the_matching_one(store: StoreContract) -> None:
    reader = store.mailbox()
    found: list[Any] = []
    with store.watcher(["alice"]) as watcher:  # watching before the sends
        waiting = threading.Thread(
            target=lambda: found.append(
                reader.await_message(
                    "alice", lambda m: isinstance(m, ShutdownRequest), DEADLINE_S, watcher
                )
            )
        )
        waiting.start()
        sender = store.mailbox()
        sender.send("alice", "plain", sender="bob")
        sender.send("alice", _shutdown("r9"), sender="team-lead")
        waiting.join(DEADLINE_S + 5)
    _entry, message = found[0]
    assert message.requestId == "r9"
    assert [e.text for e in sender.read_unread("alice")] == ["plain"]


@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_comes_back_exactly(store: StoreContract, body: str) -> None:
    mailbox = store.mailbox()
    mailbox.send("alice", body, sender="bob", summary=body[:200])
    [entry] = mailbox.read_unread("alice")
    assert entry.text == body and entry.summary == body[:200]


def test_send_unless_lets_one_of_many_concurrent_senders_win(
    store: StoreContract, store_paths: TeamPaths
) -> None:
    wins: list[bool] = []
    lock = threading.Lock()

    def try_once(n: int) -> None:
        own = open_store(store_paths)  # a sender of its own, as another process would be
        try:
            entry, _conflict = own.mailbox().send_unless(
                "alice",
                f"request {n}",
                lambda item: str(item.get("text", "")).startswith("request"),
                sender="bob",
            )
        finally:
            own.close_thread_connection()
        with lock:
            wins.append(entry is not None)

    threads = [threading.Thread(target=try_once, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert sorted(wins) == [False] * 5 + [True]
    assert len(store.mailbox().peek_all("alice")) == 1
