"""The server restarted in the middle of a run: writers and a reader reconnect on their own;
every acknowledged message is stored once and received once."""

from __future__ import annotations

import threading
from collections import Counter

import psycopg
import pytest
from helpers import wait_for
from pg_procs import TEAM, receive_until, send_many
from pg_server import TemporaryServer
from procs import forkserver_context, run_together

from protocols.pg import Database, PgMailbox, PgTeamFile

pytestmark = pytest.mark.slow


def _stored(conninfo: str) -> int:
    try:
        with psycopg.connect(conninfo) as conn:
            row = conn.execute("SELECT count(*) FROM swarm.messages").fetchone()
    except psycopg.Error:
        return 0  # not migrated yet
    return int(row[0]) if row else 0


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_restart_mid_run_loses_nothing_acknowledged_and_delivers_nothing_twice(
    db: Database, pg_team: PgTeamFile, conninfo: str, pg_server: TemporaryServer, mode: str
) -> None:
    """``fast``: the server ends every session and shuts down cleanly; ``immediate``: it stops
    dead, as in a crash, and recovers from its write-ahead log when it starts again."""
    writers, each = 4, 400
    expected = writers * each
    restarted: list[int] = []

    def restart_mid_run() -> None:
        wait_for(lambda: _stored(conninfo) >= expected // 5, "a fifth of the messages stored")
        pg_server.restart(mode)
        restarted.append(_stored(conninfo))

    restarter = threading.Thread(target=restart_mid_run)
    restarter.start()
    reports = run_together(
        forkserver_context(),
        [(send_many, (conninfo, f"w{n}", "alice", each)) for n in range(writers)]
        + [(receive_until, (conninfo, "alice", expected, 240.0))],
        timeout_s=300,
    )
    restarter.join(60)
    assert restarted and restarted[0] < expected, "the restart came after the run"

    senders = [r for r in reports if hasattr(r, "acked")]
    [reader] = [r for r in reports if hasattr(r, "received")]
    assert [r.error for r in senders] == [None] * writers and reader.error is None
    assert sum(r.retries for r in senders) > 0  # the writers did see the server go away
    acked = {message_id for r in senders for message_id in r.acked}
    assert len(acked) == expected
    stored = Counter(str(e.id) for e in PgMailbox(db, TEAM).peek_all("alice"))
    assert set(stored) == acked and max(stored.values()) == 1
    received = Counter(reader.received)
    assert max(received.values()) == 1, "a message was delivered twice"
    assert set(received) == acked
