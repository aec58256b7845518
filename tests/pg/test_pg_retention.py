"""History retention on PostgreSQL (`protocols.pg.retention`): old read messages and the records
of finished work are pruned in batches; unread and recent ones are kept; a second run deletes
nothing; pruners running at once delete each row once and never an unread one."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from pg_cli import ok, swarm, url_of

from protocols.bridge import Bridge
from protocols.errors import InvalidSetting
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.pg.retention import Pruner, Retention, prune, pruned_through


def _age(db: Database, days: float, where: str = "read_at IS NOT NULL") -> None:
    """Make the matching messages sent a day before `days` ago, and those read read `days`
    ago: time passing, done in SQL."""
    db.run(
        lambda c: c.execute(
            "UPDATE messages SET read_at = CASE WHEN read_at IS NOT NULL "
            "THEN now() - %s * interval '1 day' END, "
            f"sent_at = now() - %s * interval '1 day' WHERE {where}",
            [days, days + 1],
        )
    )


def _ids(mailbox: PgMailbox, name: str) -> list[str]:
    return [e.id for e in mailbox.peek_all(name)]


def test_old_read_messages_go_unread_and_recent_ones_stay(
    db: Database, pg_team: PgTeamFile
) -> None:
    mailbox = PgMailbox(db, "t")
    for i in range(5):
        mailbox.send("alice", f"old {i}", sender="bob", message_id=f"old-{i}")
    mailbox.mark_read("alice", mailbox.read_unread("alice")[:3])  # old-0..2 read
    _age(db, 40, "TRUE")  # all five sent 41 days ago; three read 40 days ago
    mailbox.send("alice", "recent", sender="bob", message_id="recent")
    mailbox.mark_read("alice", [e for e in mailbox.read_unread("alice") if e.id == "recent"])

    policy = Retention(days=30, keep=None, batch=2)  # batches of 2: several transactions
    dry = prune(db, "t", policy, dry_run=True)
    assert dry.counts["messages"] == 3
    assert _ids(mailbox, "alice") == ["old-0", "old-1", "old-2", "old-3", "old-4", "recent"]

    done = prune(db, "t", policy)
    assert done.counts["messages"] == 3
    assert _ids(mailbox, "alice") == ["old-3", "old-4", "recent"]  # unread, however old; recent
    assert [e.id for e in mailbox.read_unread("alice")] == ["old-3", "old-4"]
    assert pruned_through(db, "t", "alice") is not None
    assert pruned_through(db, "t", "bob") is None

    assert prune(db, "t", policy).total == 0  # idempotent
    assert prune(db, "t", policy, dry_run=True).total == 0


def test_each_recipient_keeps_its_newest_read_messages_up_to_the_cap(
    db: Database, pg_team: PgTeamFile
) -> None:
    mailbox = PgMailbox(db, "t")
    for i in range(260):
        mailbox.send("alice", f"m {i}", sender="bob", message_id=f"a-{i:03}")
    for i in range(10):
        mailbox.send("bob", f"m {i}", sender="alice", message_id=f"b-{i}")
    mailbox.mark_read("alice", mailbox.read_unread("alice")[:250])  # a-000..249 read
    mailbox.mark_read("bob", mailbox.read_unread("bob"))

    policy = Retention(days=None, keep=200, batch=15)
    assert prune(db, "t", policy, dry_run=True).counts["messages"] == 50
    assert prune(db, "t", policy).counts["messages"] == 50
    assert _ids(mailbox, "alice") == [f"a-{i:03}" for i in range(50, 260)]  # 200 read, 10 unread
    assert len(mailbox.read_unread("alice")) == 10
    assert len(_ids(mailbox, "bob")) == 10
    assert prune(db, "t", policy).total == 0


def test_a_dry_run_counts_what_a_run_with_both_limits_deletes(
    db: Database, pg_team: PgTeamFile
) -> None:
    """Old and recent read messages interleaved: the cap counts among those the age leaves."""
    mailbox = PgMailbox(db, "t")
    for i in range(500):
        mailbox.send("alice", f"m {i}", sender="bob", message_id=f"m-{i:03}")
    mailbox.mark_read("alice", mailbox.read_unread("alice")[:450])
    _age(db, 40, "read_at IS NOT NULL AND substr(entry->>'text', 3)::int %% 2 = 0")
    policy = Retention(days=30, keep=200)
    dry = prune(db, "t", policy, dry_run=True)
    done = prune(db, "t", policy)
    assert dry.counts["messages"] == done.counts["messages"] == 225 + 25  # age, then the cap
    kept = [int(e.text[2:]) for e in mailbox.peek_all("alice") if e.read]
    assert kept == [i for i in range(450) if i % 2][-200:]


def test_finished_work_is_pruned_and_live_work_kept(db: Database, pg_team: PgTeamFile) -> None:
    board = PgTaskBoard(db, "t")
    done = board.create("done long ago")
    board.create("still open")
    claim = board.claim_next("alice")
    assert claim.task is not None and claim.task.id == done.id
    board.complete(done.id, "alice", claim.epoch)
    second = board.claim_next("bob")
    assert second.task is not None  # claimed, never completed
    db.run(lambda c: c.execute("UPDATE task_events SET at = now() - interval '40 days'"))

    pruned = prune(db, "t", Retention(days=30, keep=None))
    assert pruned.counts["task_events"] == 2  # the finished task's claim and completion
    events = db.run(lambda c: c.execute("SELECT task_id, event FROM task_events").fetchall())
    assert events == [(int(second.task.id), "claimed")]


def test_concurrent_pruners_delete_each_row_once_and_never_an_unread_one(
    conninfo: str, db: Database, pg_team: PgTeamFile
) -> None:
    """Per inbox: 400 messages, 350 read: 0-99 read 40 days ago (age), 100-349 read now, of
    which 100-149 are beyond the cap of 200; 350-399 unread. Four processes prune at once."""
    mailbox = PgMailbox(db, "t")
    for name in ("alice", "bob", "carol"):
        for i in range(400):
            mailbox.send(name, f"m {i}", sender="team-lead", message_id=f"{name}-{i:03}")
        mailbox.mark_read(name, mailbox.read_unread(name)[:350])
    _age(db, 40, "read_at IS NOT NULL AND substr(entry->>'text', 3)::int < 100")

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.map(_prune_in_process, [conninfo] * 4)
    assert sum(results) == 3 * 150  # each row deleted once

    for name in ("alice", "bob", "carol"):
        assert _ids(mailbox, name) == [f"{name}-{i:03}" for i in range(150, 400)]
        assert len(mailbox.read_unread(name)) == 50  # the unread, untouched
    assert prune(db, "t", Retention(days=30, keep=200)).total == 0


def _prune_in_process(conninfo: str) -> int:
    with Database(conninfo, reconnect_s=60.0) as db:
        return prune(db, "t", Retention(days=30, keep=200, batch=7)).counts["messages"]


def test_the_policy_from_the_environment() -> None:
    assert Retention.from_env({}) == Retention(days=30, keep=5000)
    assert Retention.from_env({"SWARM_HISTORY_DAYS": "7", "SWARM_HISTORY_KEEP": "off"}) == (
        Retention(days=7, keep=None)
    )
    assert Retention.from_env({"SWARM_HISTORY_DAYS": "off"}, keep=300).keep == 300
    with pytest.raises(InvalidSetting, match="SWARM_HISTORY_DAYS"):
        Retention.from_env({"SWARM_HISTORY_DAYS": "a week"})
    with pytest.raises(InvalidSetting, match="at least 200"):
        Retention(keep=10)
    with pytest.raises(InvalidSetting, match="more than 0"):
        Retention(days=0)


def test_a_pruner_prunes_when_due_and_again_while_work_is_left(
    db: Database, pg_team: PgTeamFile
) -> None:
    mailbox = PgMailbox(db, "t")
    for i in range(30):
        mailbox.send("alice", f"m {i}", sender="bob", message_id=f"m-{i}")
    mailbox.mark_read("alice", mailbox.read_unread("alice"))
    _age(db, 40)
    now = [0.0]
    said: list[str] = []
    pruner = Pruner(
        db,
        "t",
        said.append,
        Retention(days=30, keep=None, batch=1),
        every_s=60,
        clock=lambda: now[0],
    )
    first = pruner.maybe()  # due at once; stops after MAX_BATCHES (20) with rows left
    assert first is not None and first.counts["messages"] == 20 and first.more
    second = pruner.maybe()  # work was left: due again at once
    assert second is not None and second.counts["messages"] == 10 and not second.more
    assert pruner.maybe() is None  # not due before every_s
    now[0] = 61.0
    third = pruner.maybe()
    assert third is not None and third.total == 0
    assert said == []


def test_swarm_team_prune_on_the_command_line(pg_team_t: str, home: Any) -> None:
    ok(swarm("send", "team-lead", "hello", cwd=home))
    ok(swarm("inbox", "team-lead", "--mark-read", cwd=home))
    dry = json.loads(
        ok(swarm("team", "prune", "--days", "0.0000001", "--dry-run", "--json", cwd=home))
    )
    assert dry["dryRun"] is True and dry["deleted"]["messages"] == 1
    shown = ok(swarm("inbox", "team-lead", cwd=home))
    assert "hello" in shown
    done = json.loads(ok(swarm("team", "prune", "--days", "0.0000001", "--json", cwd=home)))
    assert done["deleted"]["messages"] == 1 and done["dryRun"] is False
    assert "hello" not in ok(swarm("inbox", "team-lead", cwd=home))
    refused = swarm("team", "prune", "--keep", "5", cwd=home)
    assert refused.returncode != 0 and "at least 200" in refused.stderr
    assert "Traceback" not in refused.stderr
    ok(swarm("team", "create", "f", cwd=home, team=None))  # a team in files: nothing to prune
    files = swarm("team", "prune", "f", cwd=home, team=None)
    assert files.returncode == 1 and "is in files" in files.stderr
    assert "Traceback" not in files.stderr


def test_the_bridge_does_not_carry_back_a_message_pruned_from_a_local_inbox(
    conninfo: str, db: Database, pg_team: PgTeamFile, config_root: Path
) -> None:
    """A local member's read message is still in its inbox file's record after it was pruned
    on PostgreSQL: the bridge leaves it there, and still carries a new read one."""
    paths = TeamPaths(config_root, "t", None, url_of(conninfo))
    bridge = Bridge(paths, ["alice"])
    store = PgMailbox(db, "t")
    store.send("alice", "old news", sender="bob", message_id="old")
    bridge.sync()  # into alice's file
    files = Mailbox(TeamPaths(config_root, "t", None))
    files.mark_read("alice", files.read_unread("alice"))
    bridge.sync()  # read on the store too
    assert store.read_unread("alice") == []
    _age(db, 40)
    assert prune(db, "t", Retention(days=30, keep=None)).counts["messages"] == 1
    files.send("alice", "local talk", sender="carol", message_id="new")  # carol: elsewhere
    files.mark_read("alice", files.read_unread("alice"))  # read before the bridge's pass

    bridge.sync()
    bridge.sync()
    assert [e.id for e in store.peek_all("alice")] == ["new"]  # carried; the pruned one not
    assert [e.id for e in files.peek_all("alice")] == ["old", "new"]
