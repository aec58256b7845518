"""What a view reads of a long record (`protocols.inbox.record_summary`, `InboxFile.protocol_history`
and `recent_history`): the same requests, answers and latest messages as a read of the whole
history, from the marked lines kept in a summary and the record's tail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocols.clock import iso_from_ms, now_ms
from protocols.fs.jsonio import dumps_compact
from protocols.inbox import record_summary
from protocols.inbox.ids import identity_of, msg_id_for
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.team.approvals import REQUEST_KINDS, RESPONSE_KINDS, answer, pending_requests

PLAIN_TEXTS = [
    "progress note",
    "about the permission_request you saw",  # a mark in a plain text: parsed, then dropped
    '{"type": "not a protocol message"}',
    "unicode ✓ 漢字",
]


def record_line(n: int, text: str, sender: str = "alice", ms: int | None = None) -> str:
    sent = f"msg-test-{n}"
    item = {"from": sender, "text": text, "timestamp": iso_from_ms(ms or now_ms())}
    item.update(read=True, id=sent, msg_id=msg_id_for(sent))
    return dumps_compact(item) + "\n"


def grow_record(paths: TeamPaths, agent: str, count: int, first: int = 0) -> None:
    """`count` plain messages appended to `agent`'s record, as a team that ran for days has."""
    lines = [record_line(first + i, PLAIN_TEXTS[i % len(PLAIN_TEXTS)]) for i in range(count)]
    with open(paths.inbox_archive(agent), "a", encoding="utf-8") as archive:
        archive.writelines(lines)


def ask(mailbox: Mailbox, worker: str, n: int) -> str:
    """A permission request from `worker` to the lead; its id."""
    request = request_permission(
        mailbox,
        worker=worker,
        tool_name="Bash",
        tool_use_id=f"toolu-{worker}-{n}",
        description=f"step {n}",
        input={"command": f"make step{n}"},
    )
    return request.request_id


def views(paths: TeamPaths) -> list[Any]:
    """The waiting requests as a view reads them now, and as a read of every history gives."""
    mailbox = Mailbox(paths)
    fast = pending_requests(paths, mailbox.peek_protocol("team-lead"))
    whole = pending_requests(paths, mailbox.peek_plain("team-lead"))
    assert [p.id for p in fast] == [p.id for p in whole]
    return [p.id for p in fast]


@pytest.fixture
def team(paths: TeamPaths, tmp_path: Path) -> TeamFile:
    team_file = TeamFile(paths)
    team_file.create(description="t", cwd=tmp_path)
    for name in ("alice", "bob"):
        team_file.add_member(name, cwd=tmp_path)
    return team_file


def test_every_request_and_answer_kind_holds_a_mark() -> None:
    for kind in REQUEST_KINDS | RESPONSE_KINDS:
        assert any(mark.decode() in kind for mark in record_summary.MARKS), kind


def test_waiting_requests_are_found_in_a_long_record_as_in_the_whole_history(
    paths: TeamPaths, team: TeamFile
) -> None:
    mailbox = Mailbox(paths)
    grow_record(paths, "team-lead", 3000)
    first = ask(mailbox, "alice", 1)
    second = ask(mailbox, "bob", 2)
    mailbox.mark_read("team-lead", mailbox.read_unread("team-lead"))
    grow_record(paths, "team-lead", 3000, first=3000)
    assert views(paths) == [first, second]
    assert paths.record_summary("team-lead").exists()  # the long look was kept
    answer(paths, first, approve=True)
    grow_record(paths, "bob", 3000)
    assert views(paths) == [second]
    third = ask(mailbox, "alice", 3)
    assert views(paths) == [second, third]


def test_a_request_spelt_with_escapes_is_found_all_the_same(
    paths: TeamPaths, team: TeamFile
) -> None:
    mailbox = Mailbox(paths)
    ask(mailbox, "alice", 1)
    live = json.loads(paths.inbox("team-lead").read_text())
    entry = live[-1]
    inner = entry["text"].replace('"permission_request"', '"permission\\u005frequest"')
    assert json.loads(inner)["type"] == "permission_request"
    entry["text"] = inner
    paths.inbox("team-lead").write_text("[]")
    paths.inbox_archive("team-lead").unlink()  # it holds the request as sent: start again
    grow_record(paths, "team-lead", 2000)
    with open(paths.inbox_archive("team-lead"), "a", encoding="utf-8") as archive:
        archive.write(dumps_compact(entry) + "\n")
    grow_record(paths, "team-lead", 2000, first=2000)
    assert len(views(paths)) == 1


def test_the_summary_is_read_from_where_it_stopped_and_dropped_when_the_record_changed(
    paths: TeamPaths, team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = paths.inbox_archive("alice")
    summary = paths.record_summary("alice")
    grow_record(paths, "alice", 2000)
    with open(record, "a") as out:
        out.write(record_line(9000, '{"type":"permission_response","request_id":"r-1"}'))
    assert len(record_summary.marked_lines(record, summary)) == 1 + 500  # and the plain mark
    assert summary.exists()
    grow_record(paths, "alice", 10, first=5000)
    found = record_summary.marked_lines(record, summary)
    assert len(found) == 1 + 500 + 3  # 10 more, 3 of them "permission_request" texts
    scanned: list[int] = []
    real = record_summary._marked

    def scanning(data: bytes) -> list[bytes]:
        scanned.append(len(data))
        return real(data)

    monkeypatch.setattr(record_summary, "_marked", scanning)
    record_summary.marked_lines(record, summary)
    assert scanned[-1] < 2000  # only what came after the summary's offset
    # rewritten in place, same length: the bytes before the offset changed
    data = record.read_bytes()
    record.write_bytes(data.replace(b"progress note", b"PROGRESS NOTE"))
    record_summary.marked_lines(record, summary)
    assert scanned[-1] == len(data)
    # replaced (pruned): another inode
    record.unlink()
    with open(record, "w") as out:
        out.write(record_line(1, '{"type":"plan_approval_request","requestId":"p"}'))
    assert len(record_summary.marked_lines(record, summary)) == 1
    summary.write_bytes(b"garbage")
    assert len(record_summary.marked_lines(record, summary)) == 1


def test_a_link_in_place_of_the_summary_is_neither_read_nor_written_through(
    paths: TeamPaths, team: TeamFile, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.write_text("keep me")
    summary = paths.record_summary("alice")
    summary.parent.mkdir(parents=True)
    summary.symlink_to(outside)
    grow_record(paths, "alice", 3000)
    found = record_summary.marked_lines(paths.inbox_archive("alice"), summary)
    assert len(found) == 750
    assert outside.read_text() == "keep me"  # the link itself was replaced by the summary
    assert not summary.is_symlink() and b"swarm-record-summary" in summary.read_bytes()


@pytest.mark.parametrize("count", [0, 1, 8, 500])
def test_the_latest_messages_are_those_of_the_whole_history(
    paths: TeamPaths, team: TeamFile, count: int
) -> None:
    mailbox = Mailbox(paths)
    start = now_ms() - 10_000_000
    lines = [record_line(i, f"old {i}", ms=start + i) for i in range(4000)]
    paths.inbox_archive("team-lead").write_text("".join(lines))
    for n in range(12):
        mailbox.send("team-lead", f"fresh {n}", sender="alice")
    mailbox.mark_read("team-lead", mailbox.read_unread("team-lead")[:5])
    whole = mailbox.peek_plain("team-lead")
    recent = mailbox.peek_recent("team-lead", count)
    expected = whole[-count:] if count else []
    assert [(e.identity, e.is_read) for e in recent] == [(e.identity, e.is_read) for e in expected]


def test_an_old_unread_message_recorded_before_the_tail_is_not_taken_for_a_new_one(
    paths: TeamPaths, team: TeamFile
) -> None:
    """A message sent long ago and still unread is live, and recorded before the tail."""
    mailbox = Mailbox(paths)
    start = now_ms() - 10_000_000
    mailbox.send("team-lead", "old and unread", sender="bob")
    old = json.loads(paths.inbox("team-lead").read_text())[0]
    old["timestamp"] = iso_from_ms(start - 1)
    paths.inbox("team-lead").write_text(json.dumps([old], indent=2))
    lines = [dumps_compact(old) + "\n"] + [
        record_line(i, f"later {i}", ms=start + i) for i in range(4000)
    ]
    paths.inbox_archive("team-lead").write_text("".join(lines))
    recent = mailbox.peek_recent("team-lead", 3)
    assert [e.text for e in recent] == ["later 3997", "later 3998", "later 3999"]
    assert identity_of(old) not in {e.identity for e in recent}
    assert [e.text for e in mailbox.peek_plain("team-lead")[-3:]] == [e.text for e in recent]
