"""`protocols.bridge`: a PostgreSQL team mirrored into a host's files, both ways, each message
once. Passes are driven one at a time (`Bridge.sync`) against a real server; the file side is
written with the file layer's own classes, as a Claude Code member's writes land there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_cli import url_of

from protocols.bridge import Bridge
from protocols.fs.jsonio import dumps_pretty
from protocols.inbox.file import InboxFile
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.tasks.board import TaskBoard


@pytest.fixture
def paths(conninfo: str, pg_team: PgTeamFile, config_root: Path) -> TeamPaths:
    """Team ``t`` (lead, alice, bob, carol) in the store; its files under this host's root."""
    return TeamPaths(config_root, "t", None, url_of(conninfo))


def files_of(paths: TeamPaths) -> TeamPaths:
    return TeamPaths(paths.root, paths.team, paths.task_list)


def bridge(paths: TeamPaths) -> Bridge:
    return Bridge(paths, ["alice"])


def test_the_roster_is_mirrored_into_config_json(paths: TeamPaths, pg_team: PgTeamFile) -> None:
    assert bridge(paths).sync().roster
    on_disk = json.loads(files_of(paths).config.read_text())
    assert on_disk == pg_team.load().to_json_dict()
    assert not bridge(paths).sync().roster  # nothing changed: not written again
    pg_team.add_member("dave", cwd=paths.root)
    bridge(paths).sync()
    names = [m["name"] for m in json.loads(files_of(paths).config.read_text())["members"]]
    assert names == ["team-lead", "alice", "bob", "carol", "dave"]


def test_a_store_message_reaches_the_local_members_file_once_and_its_read_mark_comes_back(
    paths: TeamPaths, db: Database
) -> None:
    store = PgMailbox(db, "t")
    [sent] = store.send("alice", 'it "works" $(rm -rf /)\nü', sender="bob", message_id="m1")
    store.send("bob", "not for this host", sender="alice")
    one = bridge(paths)
    one.sync()
    one.sync()
    bridge(paths).sync()  # a bridge started again
    inbox = InboxFile(files_of(paths).inbox("alice"), files_of(paths).inbox_archive("alice"))
    [entry] = inbox.load().entries()
    assert (entry.text, entry.from_, entry.msg_id, entry.read) == (
        sent.text,
        "bob",
        sent.msg_id,
        False,
    )
    assert not files_of(paths).inbox("bob").exists()  # bob lives elsewhere
    # Claude Code 2.1.330 reads it: the inbox is rewritten without it
    inbox.path.write_text("[]")
    bridge(paths).sync()
    assert store.read_unread("alice") == []
    assert [e.text for e in store.peek_all("alice")] == [sent.text]


def test_what_a_local_member_writes_to_another_arrives_in_the_store_once(
    paths: TeamPaths, db: Database
) -> None:
    bridge(paths).sync()  # config.json is there: the file side can send
    files = Mailbox(files_of(paths))
    [sent] = files.send("bob", "from the file side\x07", sender="alice", summary="hi")
    files.send("team-lead", "to the lead", sender="alice")
    for _ in range(3):
        bridge(paths).sync()
    store = PgMailbox(db, "t")
    [got] = store.read_unread("bob")
    assert (got.text, got.msg_id, got.summary, got.from_) == (sent.text, sent.msg_id, "hi", "alice")
    assert [e.text for e in store.read_unread("team-lead")] == ["to the lead"]
    assert files.read_unread("bob") == []  # carried: marked read in the outbox file


def test_an_outbox_entry_carried_but_not_yet_marked_is_not_stored_twice(
    paths: TeamPaths, db: Database
) -> None:
    """A bridge killed between storing and marking: the next one finds the entry unread in
    the file and stores it again, which the store's msg_id makes a no-op."""
    bridge(paths).sync()
    files = Mailbox(files_of(paths))
    files.send("bob", "once", sender="alice", message_id="x1")
    store = PgMailbox(db, "t")
    entry = files.read_unread("bob")[0]
    store.send("bob", entry.text, sender="alice", message_id="x1")  # stored, then "killed"
    bridge(paths).sync()
    assert [e.text for e in store.peek_all("bob")] == ["once"]


def test_a_message_between_two_local_members_is_kept_in_the_store_as_read(
    paths: TeamPaths, db: Database
) -> None:
    two = Bridge(paths, ["alice", "carol"])
    two.sync()
    files = Mailbox(files_of(paths))
    [sent] = files.send("carol", "local talk", sender="alice")
    two.sync()
    store = PgMailbox(db, "t")
    assert [e.msg_id for e in store.read_unread("carol")] == [sent.msg_id]
    assert [e.msg_id for e in files.read_unread("carol")] == [sent.msg_id]  # not doubled
    files.mark_read("carol", [sent])
    two.sync()
    assert store.read_unread("carol") == []


def test_a_task_made_claimed_and_completed_in_the_files_is_so_in_the_store(
    paths: TeamPaths, db: Database
) -> None:
    bridge(paths).sync()
    board = TaskBoard(files_of(paths))
    made = board.create("write the parser", "with tests")
    bridge(paths).sync()
    store = PgTaskBoard(db, "t")
    assert store.require(made.id).subject == "write the parser"
    assert board.claim(made.id, "alice").success
    bridge(paths).sync()
    task = store.require(made.id)
    assert (task.status, task.owner) == ("in_progress", "alice")
    board.update(made.id, status="completed")
    bridge(paths).sync()
    bridge(paths).sync()
    assert store.require(made.id).status == "completed"
    assert [t.id for t in store.list()] == [made.id]  # made once


def test_a_task_made_and_claimed_in_the_store_is_so_in_the_files(
    paths: TeamPaths, db: Database
) -> None:
    store = PgTaskBoard(db, "t")
    first = store.create("build", "make")
    store.create("ship", blocked_by=[first.id])
    bridge(paths).sync()
    board = TaskBoard(files_of(paths))
    assert [(t.id, t.blockedBy) for t in board.list()] == [(first.id, []), ("2", [first.id])]
    claim = store.claim(first.id, "bob")
    bridge(paths).sync()
    assert (board.require(first.id).status, board.require(first.id).owner) == ("in_progress", "bob")
    assert claim.epoch is not None
    store.complete(first.id, "bob", claim.epoch)
    store.delete("2")
    bridge(paths).sync()
    assert board.require(first.id).status == "completed"
    assert board.get("2") is None
    assert files_of(paths).highwatermark.read_text() == "2"  # CC's next task is #3


def test_a_claim_lost_to_the_store_is_undone_in_the_file(paths: TeamPaths, db: Database) -> None:
    store = PgTaskBoard(db, "t")
    task = store.create("contested")
    bridge(paths).sync()
    assert TaskBoard(files_of(paths)).claim(task.id, "alice").success
    assert store.claim(task.id, "bob").success  # elsewhere, first
    bridge(paths).sync()
    assert TaskBoard(files_of(paths)).require(task.id).owner == "bob"
    assert store.require(task.id).owner == "bob"


def test_a_file_task_whose_id_the_store_gave_away_moves_to_the_stores_id(
    paths: TeamPaths, db: Database
) -> None:
    bridge(paths).sync()
    store = PgTaskBoard(db, "t")
    theirs = store.create("made elsewhere")  # #1 on the store, not yet in the files
    ours = TaskBoard(files_of(paths)).create("made here")  # #1 in the files
    assert ours.id == theirs.id == "1"
    bridge(paths).sync()
    bridge(paths).sync()
    assert {t.id: t.subject for t in store.list()} == {"1": "made elsewhere", "2": "made here"}
    board = TaskBoard(files_of(paths))
    assert {t.id: t.subject for t in board.list()} == {"1": "made elsewhere", "2": "made here"}


def test_a_torn_state_file_starts_afresh_without_duplicating(
    paths: TeamPaths, db: Database
) -> None:
    bridge(paths).sync()
    TaskBoard(files_of(paths)).create("one")
    bridge(paths).sync()
    (files_of(paths).team_dir / "swarm-bridge.json").write_text(dumps_pretty({"x": 1})[:3])
    bridge(paths).sync()
    assert [t.subject for t in PgTaskBoard(db, "t").list()] == ["one"]


def test_a_task_file_being_written_in_place_is_not_taken_for_a_deletion(
    paths: TeamPaths, db: Database
) -> None:
    store = PgTaskBoard(db, "t")
    task = store.create("kept")
    bridge(paths).sync()
    files_of(paths).task(task.id).write_text('{"id": "1", "subj')  # Claude Code mid-write
    bridge(paths).sync()
    assert store.get(task.id) is not None


def test_a_local_members_activity_reaches_the_store(paths: TeamPaths, pg_team: PgTeamFile) -> None:
    bridge(paths).sync()
    config = json.loads(files_of(paths).config.read_text())
    for member in config["members"]:
        if member["name"] in ("alice", "bob"):
            member["isActive"] = False  # what Claude Code writes when its turn ends
    files_of(paths).config.write_text(json.dumps(config, indent=2))
    bridge(paths).sync()
    alice, bob = pg_team.load().member("alice"), pg_team.load().member("bob")
    assert alice is not None and alice.isActive is False
    assert bob is not None and bob.isActive is not False  # bob does not live here


def test_a_dependency_removed_in_the_files_is_removed_in_the_store(
    paths: TeamPaths, db: Database
) -> None:
    store = PgTaskBoard(db, "t")
    first, second, third = (store.create(s) for s in ("schema", "api", "docs"))
    store.update(third.id, addBlockedBy=[first.id, second.id])
    bridge(paths).sync()
    # by hand (or any tool): docs no longer waits for the schema
    path = files_of(paths).task(third.id)
    doc = json.loads(path.read_text())
    path.write_text(dumps_pretty({**doc, "blockedBy": [second.id]}))
    bridge(paths).sync()
    assert store.require(third.id).blockedBy == [second.id]
    assert store.require(first.id).blocks == []
    # Claude Code deletes the api task: its file goes, and every reference to it
    TaskBoard(files_of(paths)).update(second.id, status="deleted")
    bridge(paths).sync()
    assert store.get(second.id) is None
    assert store.require(third.id).blockedBy == []
    bridge(paths).sync()
    assert json.loads(path.read_text())["blockedBy"] == []  # not put back
    assert bridge(paths).sync().tasks == 0


def test_a_pass_reads_an_inbox_history_only_when_either_side_changed(
    paths: TeamPaths, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PgMailbox(db, "t")
    store.send("alice", "first", sender="bob")
    one = bridge(paths)
    one.sync()
    one.sync()
    Mailbox(files_of(paths)).send("bob", "to bob", sender="alice")
    one.sync()
    one.sync()  # the pass after one that moved something looks again (its own writes)
    read: list[str] = []
    inboxes = one._inboxes
    assert inboxes is not None
    for side, method in ((inboxes.pg, "peek_all"), (inboxes.files, "peek_all"),
                         (inboxes.files, "read_unread")):  # fmt: skip
        real = getattr(side, method)
        monkeypatch.setattr(
            side, method, lambda name, real=real, m=method: read.append(f"{m} {name}") or real(name)
        )
    one.sync()
    assert read == []  # nothing changed: no history read, no outbox read
    store.send("alice", "second", sender="bob")
    one.sync()
    assert "peek_all alice" in read and not [r for r in read if r.endswith("bob")]
    inbox = InboxFile(files_of(paths).inbox("alice"), files_of(paths).inbox_archive("alice"))
    assert [e.text for e in inbox.load().entries()] == ["first", "second"]
    inbox.path.write_text("[]")  # Claude Code 2.1.330 read both: the file rewritten, shorter
    one.sync()
    assert store.read_unread("alice") == []
    Mailbox(files_of(paths)).send("bob", "again to bob", sender="alice")
    one.sync()
    assert [e.text for e in store.peek_all("bob")] == ["to bob", "again to bob"]
