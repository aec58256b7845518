"""Appending to an inbox without parsing it (`protocols.inbox.splice`, `InboxFile.commit_spool_locked`):
the text answers what a parse would, and the parse still happens whenever the file is not what
the last swarm commit left."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import count_calls
from hypothesis import example, given
from hypothesis import strategies as st

from protocols.fs.jsonio import dumps_pretty
from protocols.inbox import splice as inbox_splice
from protocols.inbox.file import InboxFile
from protocols.inbox.ids import identity_of
from protocols.inbox.mailbox import Mailbox, new_item
from protocols.inbox.record import _add_identity
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

HOSTILE_TEXTS = [
    'quotes " and \\" and "msg_id": "m-1" and "read": true',
    "a ] and a } and \n  }\n] in the middle",
    "unicode ✓ 漢字 \u202e and control \x1b[2J\x07",
    "",
]


def entries() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n, text in enumerate(HOSTILE_TEXTS):
        item = new_item(text, f"sender-{n}")
        item["read"] = n % 2 == 0
        items.append(item)
    items[1]["extra"] = {"nested": [{"msg_id": "m-2", "read": True}], "]": "}"}
    return items


def test_only_a_whole_inbox_is_whole() -> None:
    text = dumps_pretty(entries())
    assert inbox_splice.whole(text) and inbox_splice.whole("[]")
    for cut in range(len(text)):  # a writer killed part way through an in-place write
        assert not inbox_splice.whole(text[:cut]), repr(text[:cut][-40:])
    assert not inbox_splice.whole(json.dumps(entries()))  # another layout: parsed instead


def test_the_text_is_asked_about_keys_never_about_what_messages_say() -> None:
    items = entries()
    text = dumps_pretty(items)
    assert inbox_splice.holds(text, items[0]["msg_id"])
    assert not inbox_splice.holds(text, "m-1")  # only in a message's text
    assert not inbox_splice.holds(text, "m-2")  # a nested value's key: not an entry's
    parsed_reads = sum(1 for i in json.loads(text) if i.get("read") is True)
    assert inbox_splice.read_entries(text) == parsed_reads  # not the nested value's
    assert inbox_splice.msg_id({"msg_id": 'x" or "y'}) is None
    assert inbox_splice.msg_id({"msg_id": "ok-1.2:3_4"}) == "ok-1.2:3_4"


def test_appended_is_what_writing_the_longer_list_gives() -> None:
    items = entries()
    more = [new_item("one more", "x"), new_item("and another", "y")]
    rendered = [dumps_pretty(i, level=1) for i in more]
    assert inbox_splice.appended("[]", rendered) == dumps_pretty(more)
    assert inbox_splice.appended(dumps_pretty(items), rendered) == dumps_pretty(items + more)


def _unparsed_appends(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    return count_calls(monkeypatch, InboxFile, "_append_unparsed")


def test_appends_after_a_swarm_commit_do_not_parse_the_inbox(
    team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    mailbox = Mailbox(team.paths)
    mailbox.send("alice", "first", sender="bob")  # the file was made: parsed once
    loads = count_calls(monkeypatch, InboxFile, "parse_locked")
    fast = _unparsed_appends(monkeypatch)
    for n in range(20):
        mailbox.send("alice", f"message {n}", sender="bob")
    assert len(fast) == 20 and len(loads) == 0
    assert [e.text for e in mailbox.read_unread("alice")][-1] == "message 19"


def test_a_file_written_since_by_someone_else_is_parsed_first(
    team: TeamFile, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    mailbox = Mailbox(team.paths)
    mailbox.send("alice", "first", sender="bob")
    items = json.loads(paths.inbox("alice").read_text())
    items.append({"from": "cc", "text": "from Claude Code", "timestamp": "t", "read": False})
    paths.inbox("alice").write_text(json.dumps(items, indent=2))  # in place, its own format
    loads = count_calls(monkeypatch, InboxFile, "parse_locked")
    mailbox.send("alice", "second", sender="bob")
    mailbox.send("alice", "third", sender="bob")
    assert len(loads) == 2  # the first send after the foreign write: parsed, then trusted
    texts = [e.text for e in mailbox.read_unread("alice")]
    assert texts == ["first", "from Claude Code", "second", "third"]


def test_a_file_that_looks_whole_but_is_not_json_is_moved_aside_before_an_append(
    team: TeamFile, paths: TeamPaths
) -> None:
    mailbox = Mailbox(team.paths)
    mailbox.send("alice", "first", sender="bob")
    broken = '[\n  {\n    "from": "x",\n    garbage\n  }\n]'
    paths.inbox("alice").write_text(broken)
    mailbox.send("alice", "after", sender="bob")
    assert [e.text for e in mailbox.read_unread("alice")] == ["after"]
    aside = [p for p in paths.inbox("alice").parent.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_text() == broken


def test_a_retry_of_a_message_compacted_into_the_record_is_not_stored_again(
    team: TeamFile, paths: TeamPaths
) -> None:
    mailbox = Mailbox(team.paths, compact_after=0)
    mailbox.send("alice", "once", sender="bob", message_id="msg-retried")
    mailbox.mark_read("alice", mailbox.read_unread("alice"))  # compacted: only in the record
    assert json.loads(paths.inbox("alice").read_text()) == []
    mailbox.send("alice", "once", sender="bob", message_id="msg-retried")
    assert mailbox.read_unread("alice") == []


def _play(mailbox: Mailbox, paths: TeamPaths, seed: int) -> None:
    """A seeded mix of sends, retries, spooled sends, read marks and Claude Code's writes."""
    rng = random.Random(seed)
    inbox = mailbox.inbox("alice")
    for step in range(120):
        roll = rng.random()
        if roll < 0.45:
            mailbox.send("alice", f"m{step}", sender="bob", message_id=f"msg-{step}")
        elif roll < 0.55:
            again = rng.randrange(max(1, step))
            mailbox.send("alice", f"m{again}", sender="bob", message_id=f"msg-{again}")
        elif roll < 0.70:
            waiting = inbox.spool.put(new_item(f"s{step}", "carol", message_id=f"msg-s{step}"))
            waiting.close()
        elif roll < 0.85:
            unread = mailbox.read_unread("alice")
            mailbox.mark_read("alice", unread[: rng.randrange(len(unread) + 1)])
        else:
            items = json.loads(paths.inbox("alice").read_text())
            items.append({"from": "cc", "text": f"c{step}", "timestamp": f"t{step}"})
            paths.inbox("alice").write_text(json.dumps(items, indent=2))
    mailbox.send("alice", "last", sender="bob", message_id="msg-last")


def _outcome(paths: TeamPaths) -> tuple[list[tuple[str, bool]], list[str]]:
    live = json.loads(paths.inbox("alice").read_text())
    record = [json.loads(line) for line in paths.inbox_archive("alice").read_text().splitlines()]
    every = {identity_of(i): i["text"] for i in [*record, *live]}
    return [(i["text"], i.get("read") is True) for i in live], sorted(every.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_appending_without_parsing_leaves_what_parsing_leaves(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    outcomes = []
    for mode in ("text", "parse"):
        paths = TeamPaths(config_root, f"team-{mode}")
        team = TeamFile(paths)
        team.create(description="x", cwd=tmp_path)
        team.add_member("alice", cwd=tmp_path)
        with monkeypatch.context() as patch:
            if mode == "parse":
                patch.setattr(inbox_splice, "whole", lambda text: False)
            _play(Mailbox(paths, compact_after=8), paths, seed)
        outcomes.append(_outcome(paths))
    assert outcomes[0] == outcomes[1]


record_value = st.one_of(
    st.text(max_size=12),
    st.sampled_from(['"msg_id":"m-1"', '\\"msg_id\\":\\"m-2\\"', "msg_id", "{", "}", "x y"]),
    st.none(),
    st.booleans(),
    st.integers(),
)
record_key = st.sampled_from(["msg_id", "id", "from", "text", "timestamp", "read", "other"])


@given(st.lists(st.tuples(record_key, record_value), max_size=6))
@example([("msg_id", "m-1"), ("msg_id", None), ("id", "i-1")])  # the last key wins
@example([("msg_id", "m-1"), ("msg_id", "m-2")])
@example([("text", "msg_id"), ("msg_id", "m-1")])
@example([("msg_id", "m 1"), ("id", "i-1")])  # not plain: parsed
def test_a_record_line_is_known_by_the_identity_its_parse_gives(pairs: list[Any]) -> None:
    """`RecordIndex` reads a line with one plain ``msg_id`` without parsing it: it must find
    the identity `json.loads` and `identity_of` would, whatever the line holds (a repeated key,
    a ``msg_id`` that is not a string or not plain, the key's name inside a text)."""
    text = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
    line = text.encode("utf-8", "surrogatepass")
    ids: set[str] = set()
    _add_identity(ids, line, Path("record"))
    assert ids == {identity_of(json.loads(line))}


def test_a_damaged_record_line_adds_no_identity_unless_its_msg_id_is_plain() -> None:
    ids: set[str] = set()
    for line in (b"garbage", b"[1, 2]", b'{"msg_id": 3', b'"msg_id":"m-9"'):
        _add_identity(ids, line, Path("record"))
    assert ids == set()
    # a line whose middle was lost still names its message: it is recorded, if torn
    _add_identity(ids, b'{"from":"a","te,"msg_id":"m-7"}', Path("record"))
    assert ids == {"m-7"}
