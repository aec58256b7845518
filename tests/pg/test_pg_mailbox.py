"""The mailbox in PostgreSQL, what only it does: work cut off by a lost connection done again
once, the file store's very entries, a waiting reader woken by the notification, and NUL
refused in names (what every store does is in tests/contract)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from helpers import DEADLINE_S

from protocols.errors import UnstorableValue
from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.pg import Database, PgMailbox, PgTeamFile


def _shutdown(request_id: str) -> ShutdownRequest:
    return ShutdownRequest(
        requestId=request_id, from_="team-lead", reason="done", timestamp="2026-01-01T00:00:00Z"
    )


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
