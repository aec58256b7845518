"""A member's shipped log (`protocols.pg.member_log`): bounded to the newest lines per member,
hostile text stored without failing the write, only the kinds `swarm logs` shows shipped, and
what was queued written when the shipper closes."""

from __future__ import annotations

import os
import socket

from protocols.pg import Database, PgTeamFile
from protocols.pg.member_log import KEEP, STRING_CHARS, Shipper, append, last_host, read


def test_the_log_keeps_the_newest_lines_of_each_member_only(
    db: Database, pg_team: PgTeamFile
) -> None:
    append(db, "t", "alice", [{"kind": "output", "text": f"line {n}"} for n in range(KEEP + 10)])
    append(db, "t", "bob", [{"kind": "output", "text": "bob's"}])
    append(db, "t", "alice", [{"kind": "output", "text": "last"}])
    lines = [record["text"] for _, record in read(db, "t", "alice")]
    assert len(lines) == KEEP
    assert lines[0] == "line 11" and lines[-2] == f"line {KEEP + 9}" and lines[-1] == "last"
    assert [r["text"] for _, r in read(db, "t", "bob")] == ["bob's"]  # another's untouched
    seq = read(db, "t", "alice")[-2][0]
    assert [r["text"] for _, r in read(db, "t", "alice", after=seq)] == ["last"]
    assert last_host(db, "t", "alice") == (socket.gethostname(), os.getpid())
    assert last_host(db, "t", "carol") is None


def test_hostile_text_is_stored_cut_and_escaped_never_a_failed_write(
    db: Database, pg_team: PgTeamFile
) -> None:
    hostile = "nul \x00 lone \ud800 esc \x1b[31m $(rm -rf /) 'q' \"dq\" é\n"
    append(db, "t", "alice", [{"kind": "output", "text": hostile + "x" * (STRING_CHARS * 2)}])
    ((_, record),) = read(db, "t", "alice")
    assert record["text"].startswith("nul \x00 lone ? esc \x1b[31m $(rm -rf /) 'q' \"dq\" é\n")
    assert len(record["text"]) == STRING_CHARS and record["text"].endswith("…")


def test_the_shipper_writes_the_shown_kinds_when_it_closes(
    conninfo: str, db: Database, pg_team: PgTeamFile
) -> None:
    with Shipper(conninfo, "t", "alice") as shipper:
        shipper.put({"ts": "2026-01-01T00:00:00.000Z", "kind": "output", "text": "joined"})
        shipper.put({"kind": "request", "messages": ["the whole conversation"]})  # not shown
        shipper.put({"kind": "tool_call", "name": "Bash", "input": {"command": "ls"}})
    kinds = [record["kind"] for _, record in read(db, "t", "alice")]
    assert kinds == ["output", "tool_call"]
    assert shipper.dropped == 0
