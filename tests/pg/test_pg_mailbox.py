"""The mailbox in PostgreSQL: idempotent sends, marking read by identity, the history, waking a
waiting reader, and hostile text."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from helpers import DEADLINE_S, wait_for

from protocols.errors import BroadcastRefused, UnknownMember, UnstorableValue
from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.pg import Database, PgMailbox, PgTeamFile


def _shutdown(request_id: str) -> ShutdownRequest:
    return ShutdownRequest(
        requestId=request_id, from_="team-lead", reason="done", timestamp="2026-01-01T00:00:00Z"
    )


HOSTILE = [
    'it\'s "quoted" `back` $(rm -rf ~) ${HOME} %s %(x)s ; DROP TABLE messages; --',
    "line one\nline two\r\n\ttabbed",
    "NUL \x00 inside, bell \x07, escape \x1b[31mred\x1b[0m, DEL \x7f",
    "unicode: héllo 日本語 🙂 \u202e right-to-left \ufeff",
    "a lone surrogate \ud800 here",
    "x" * 100_000,
]


def test_a_send_retried_with_its_id_is_stored_once(db: Database, pg_team: PgTeamFile) -> None:
    mailbox = PgMailbox(db, "t")
    first = mailbox.send("alice", "hello", sender="bob", message_id="retry-1")
    again = mailbox.send("alice", "hello", sender="bob", message_id="retry-1")
    assert first[0].msg_id == again[0].msg_id
    assert [e.id for e in mailbox.peek_all("alice")] == ["retry-1"]
    mailbox.mark_read("alice", first)
    mailbox.send("alice", "hello", sender="bob", message_id="retry-1")  # after it was read
    assert [e.id for e in mailbox.peek_all("alice")] == ["retry-1"]
    assert mailbox.read_unread("alice") == []


def test_work_cut_off_by_a_lost_connection_is_done_again_once(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    """The connection dies inside the send's transaction: it is rolled back, and `run` does
    the work again on a new connection."""
    mailbox = PgMailbox(db, "t")
    attempts = []

    def cut_then_send(conn: psycopg.Connection[Any]) -> None:
        attempts.append(conn.info.backend_pid)
        conn.execute(
            "INSERT INTO messages (team, recipient, msg_id, sender, entry) "
            "VALUES ('t', 'alice', 'x', 'bob', '{}') ON CONFLICT DO NOTHING"
        )
        if len(attempts) == 1:
            with psycopg.connect(conninfo, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
            conn.execute("SELECT 1")  # the server is gone: OperationalError

    db.run(cut_then_send)
    assert len(attempts) == 2 and attempts[0] != attempts[1]
    assert db.retries == 1
    count = db.run(lambda c: c.execute("SELECT count(*) FROM messages").fetchone())
    assert count == (1,)
    assert mailbox.peek_all("alice") == []  # the row is no message: skipped, as on file


def test_entries_are_the_file_stores_entries(
    db: Database, pg_team: PgTeamFile, paths, team
) -> None:
    on_file, in_store = Mailbox(paths), PgMailbox(db, "t")
    for mailbox in (on_file, in_store):
        mailbox.send("alice", "hi", sender="bob", summary="greeting", message_id="same-id")
        mailbox.send("alice", _shutdown("r1"), sender="team-lead")
    a = [e.to_json_dict() for e in on_file.peek_all("alice")]
    b = [e.to_json_dict() for e in in_store.peek_all("alice")]
    assert [list(x) for x in a] == [list(x) for x in b]
    for x, y in zip(a, b, strict=True):
        assert {k: v for k, v in x.items() if k not in ("timestamp", "id", "msg_id")} == {
            k: v for k, v in y.items() if k not in ("timestamp", "id", "msg_id")
        }
    assert a[0] == {**b[0], "timestamp": a[0]["timestamp"]}


def test_mark_read_is_by_identity_and_read_ones_stay_in_the_history(
    db: Database, pg_team: PgTeamFile
) -> None:
    mailbox = PgMailbox(db, "t")
    mailbox.send("alice", "one", sender="bob")
    seen = mailbox.read_unread("alice")
    mailbox.send("alice", "two", sender="carol")  # arrives between the read and the mark
    assert mailbox.mark_read("alice", seen) == 1
    assert mailbox.mark_read("alice", seen) == 0
    assert [e.text for e in mailbox.read_unread("alice")] == ["two"]
    assert [e.text for e in mailbox.read_archive("alice")] == ["one"]
    history = mailbox.peek_all("alice")
    assert [(e.text, e.read) for e in history] == [("one", True), ("two", False)]


def test_broadcast_reaches_every_other_member_at_once(db: Database, pg_team: PgTeamFile) -> None:
    mailbox = PgMailbox(db, "t")
    written = mailbox.send("*", "all hands", sender="alice", message_id="b-1")
    assert sorted(e.id for e in written) == ["b-1-bob", "b-1-carol", "b-1-team-lead"]
    mailbox.broadcast("all hands", sender="alice", message_id="b-1")  # a retry: stored once
    for name in ("team-lead", "bob", "carol"):
        assert [e.text for e in mailbox.peek_all(name)] == ["all hands"]
    assert mailbox.peek_all("alice") == []
    with pytest.raises(BroadcastRefused):
        mailbox.send("*", _shutdown("r"), sender="team-lead")


def test_an_unknown_recipient_is_refused_naming_the_members(
    db: Database, pg_team: PgTeamFile
) -> None:
    with pytest.raises(UnknownMember, match=r"did you mean 'alice'.*members are: team-lead"):
        PgMailbox(db, "t").send("alicee", "hi", sender="bob")


def test_a_waiting_reader_is_woken_by_the_notification(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    """The reader's rescan is an hour away: only the notification can wake it in time (were it
    lost, the wait would end empty at its deadline and the test fail)."""
    reader = PgMailbox(Database(conninfo), "t", rescan_s=3600)
    listener = reader.listener()  # listening before the send
    got: list[Any] = []
    waiting = threading.Thread(
        target=lambda: got.extend(reader.wait("alice", DEADLINE_S, listener))
    )
    waiting.start()
    PgMailbox(db, "t").send("bob", "not for alice", sender="carol")
    PgMailbox(db, "t").send("alice", "wake up", sender="bob")
    waiting.join(DEADLINE_S + 5)
    listener.close()
    reader.db.close()
    assert [e.text for e in got] == ["wake up"]


def test_await_message_takes_only_the_matching_one(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    reader = PgMailbox(Database(conninfo), "t", rescan_s=3600)
    listener = reader.listener()
    found: list[Any] = []
    waiting = threading.Thread(
        target=lambda: found.append(
            reader.await_message(
                "alice", lambda m: isinstance(m, ShutdownRequest), DEADLINE_S, listener
            )
        )
    )
    waiting.start()
    sender = PgMailbox(db, "t")
    sender.send("alice", "plain", sender="bob")
    sender.send("alice", _shutdown("r9"), sender="team-lead")
    waiting.join(DEADLINE_S + 5)
    listener.close()
    reader.db.close()
    _entry, message = found[0]
    assert message.requestId == "r9"
    assert [e.text for e in sender.read_unread("alice")] == ["plain"]


@pytest.mark.parametrize("body", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_comes_back_exactly(db: Database, pg_team: PgTeamFile, body: str) -> None:
    mailbox = PgMailbox(db, "t")
    mailbox.send("alice", body, sender="bob", summary=body[:200])
    [entry] = mailbox.read_unread("alice")
    assert entry.text == body and entry.summary == body[:200]


@pytest.mark.parametrize(
    ("field", "value"),
    [("sender", "bo\x00b"), ("recipient", "ali\x00ce"), ("team", "t\x00")],
)
def test_a_nul_in_a_name_or_id_is_refused_and_nothing_is_written(
    db: Database, pg_team: PgTeamFile, field: str, value: str
) -> None:
    def send() -> None:
        mailbox = PgMailbox(db, value if field == "team" else "t")
        mailbox.send(
            value if field == "recipient" else "alice",
            "hello",
            sender=value if field == "sender" else "bob",
            message_id=value if field == "message_id" else None,
        )

    with pytest.raises(UnstorableValue, match=r"NUL \(\\x00\).*nothing was written"):
        send()
    assert db.run(lambda c: c.execute("SELECT count(*) FROM messages").fetchone()) == (0,)


def test_a_message_id_is_kept_in_the_entry_so_any_id_works(
    db: Database, pg_team: PgTeamFile
) -> None:
    """Only its derived msg_id (a UUID) is a column: a swarm id with NUL or quotes is fine."""
    mailbox = PgMailbox(db, "t")
    for _ in range(2):
        mailbox.send("alice", "hi", sender="bob", message_id="id\x00'\n")
    assert [e.id for e in mailbox.peek_all("alice")] == ["id\x00'\n"]


def test_send_unless_lets_one_of_many_concurrent_senders_win(
    db: Database, pg_team: PgTeamFile, conninfo: str
) -> None:
    wins: list[bool] = []
    lock = threading.Lock()

    def try_once(n: int) -> None:
        with Database(conninfo) as own:
            entry, _conflict = PgMailbox(own, "t").send_unless(
                "alice",
                f"request {n}",
                lambda item: str(item.get("text", "")).startswith("request"),
                sender="bob",
            )
        with lock:
            wins.append(entry is not None)

    threads = [threading.Thread(target=try_once, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert sorted(wins) == [False] * 5 + [True]
    wait_for(lambda: len(PgMailbox(db, "t").peek_all("alice")) == 1, "one request stored")
