"""An idle teammate on a PostgreSQL team asks the server nothing beyond its heartbeats, and
misses nothing: each beat says whether it has unread messages or left the team (so a lost
notification is made up for at the next beat, not at a rescan minutes away), a deleted team
notifies its members, a budget raised in a local file wakes it through inotify, and another
thread of the process wakes its wait through a pipe, with no round trip to the server.

A lost notification is made by sending from this test's process with the notification taken
out (`protocols.pg.mailbox.notify`, patched here only): the teammate is a real process."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import wait_for
from pg_cli import ok, swarm
from psycopg import sql

from protocols.errors import StoreUnavailable
from protocols.fs.jsonio import atomic_write_text
from protocols.paths import TeamPaths
from protocols.pg import Database, Leases, PgMailbox, PgTeamFile
from protocols.pg.notify import TASKS, Listener, notify
from protocols.pg.store import PgStore
from protocols.pids import pid_alive
from protocols.store.selection import locate
from protocols.watch.inotify import Notifier
from swarm.team.signatures import lead_mailbox

TEAM = "t"
LEASE_S = "1.5"  # a beat every half second


def waiting(thread: threading.Thread, what: str) -> bool:
    thread.join(60)
    assert not thread.is_alive(), f"{what} did not end the wait"
    return True


def test_a_beat_says_whether_the_member_has_unread_messages(
    db: Database, pg_team: PgTeamFile
) -> None:
    leases = Leases(db, TEAM)
    assert leases.beat("alice").unread is False
    PgMailbox(db, TEAM).send("alice", "hello", sender="bob")
    assert leases.beat("alice").unread is True
    assert leases.beat("bob").unread is False  # only its own inbox
    PgMailbox(db, TEAM).mark_read("alice", PgMailbox(db, TEAM).read_unread("alice"))
    assert leases.beat("alice").unread is False


def test_the_heartbeat_calls_on_news_for_a_message_no_notification_announced(
    db: Database,
    pg_team: PgTeamFile,
    conninfo: str,
    config_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARM_LEASE_S", LEASE_S)
    monkeypatch.setattr("protocols.pg.mailbox.notify", lambda *args: None)
    store = PgStore(TeamPaths(config_root, TEAM, store=conninfo))
    news = threading.Event()
    with store.keep_alive("alice", on_news=news.set):
        PgMailbox(db, TEAM).send("alice", "unannounced", sender="bob")
        assert wait_for(news.is_set, "a beat to find alice's unread message")


def test_a_member_removed_is_said_and_looked_at_once_not_at_every_beat(
    db: Database,
    pg_team: PgTeamFile,
    conninfo: str,
    config_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("SWARM_LEASE_S", "0.3")  # a beat every 0.1 s
    beats: list[str] = []
    beat = Leases.beat

    def counted(self: Leases, name: str, *args: Any, **kwargs: Any) -> Any:
        beats.append(name)
        return beat(self, name, *args, **kwargs)

    monkeypatch.setattr(Leases, "beat", counted)
    store = PgStore(TeamPaths(config_root, TEAM, store=conninfo))
    news: list[int] = []
    with (
        caplog.at_level("WARNING", logger="protocols.pg.store"),
        store.keep_alive("alice", on_news=lambda: news.append(len(beats))),
    ):
        pg_team.remove_member("alice")
        wait_for(lambda: news, "a beat to find alice gone")
        wait_for(lambda: len(beats) >= news[0] + 5, "five more beats")
    gone = [r for r in caplog.records if "no member named 'alice'" in r.getMessage()]
    assert len(gone) == 1 and len(news) == 1, (gone, news)


def test_deleting_the_team_notifies_each_member(db: Database, pg_team: PgTeamFile) -> None:
    with Listener(db, TEAM) as listener:
        assert pg_team.delete()
        heard: set[str] = set()

        def all_heard() -> bool:
            heard.update(listener.heard(None, 0.5) or set())
            return heard >= {"team-lead", "alice", "bob", "carol"}

        assert wait_for(all_heard, "every member notified of the deletion")


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "doorbells"])
def test_a_watcher_is_woken_by_another_thread_and_by_a_local_directory(
    db: Database,
    pg_team: PgTeamFile,
    conninfo: str,
    config_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    inotify: bool,
) -> None:
    if not inotify:  # the user's inotify instances are all taken

        def used_up() -> Notifier:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

        monkeypatch.setattr(Notifier, "shared", staticmethod(used_up))
    store = PgStore(TeamPaths(config_root, TEAM, store=conninfo))
    budgets = tmp_path / "budgets"
    budgets.mkdir()
    with store.watcher(["alice"], directories=(budgets,), rescan_s=3600) as watcher:
        if not inotify:  # what a teammate's board watch asks (`teammate.board_watch`)
            assert watcher.degraded is not None and watcher.belled
        budget = budgets / "alice.json"
        for wake in (watcher.changed.set, lambda: atomic_write_text(budget, "{}")):
            watcher.clear()
            result: list[bool] = []
            thread = threading.Thread(target=lambda out=result: out.append(watcher.wait(3600)))
            thread.start()
            wake()
            assert waiting(thread, "a wake-up") and result == [True]
        assert watcher.take_touched(budgets)


@pytest.mark.slow
def test_an_idle_teammate_answers_a_message_whose_notification_was_lost(
    pg_team_t: str, home: Path, config_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"SWARM_LEASE_S": LEASE_S}
    ok(swarm("spawn", "dan", "--backend", "subprocess", "--model", "shell", "-p", "echo hi",
             cwd=home, env=env))  # fmt: skip
    paths = locate(TEAM, config_root)
    with Database(pg_team_t) as db:
        mailbox = PgMailbox(db, TEAM)

        def answered(text: str) -> bool:
            return any(text in e.text for e in mailbox.peek_all("team-lead"))

        wait_for(lambda: answered("echo hi"), "dan's answer to its prompt")
        # its last step is over once its lease was renewed twice more (a beat each 0.5 s)
        for _ in range(2):
            before = Leases(db, TEAM).expires_at("dan")
            wait_for(lambda was=before: Leases(db, TEAM).expires_at("dan") != was, "a beat")
        monkeypatch.setattr("protocols.pg.mailbox.notify", lambda *args: None)
        lead_mailbox(paths).send("dan", "echo unannounced", sender="team-lead")
        # its rescan is 10 minutes away: only a heartbeat can have told it
        assert wait_for(lambda: answered("echo unannounced"), "dan's answer to the message")


@pytest.mark.slow
def test_an_idle_teammate_ends_when_its_team_is_deleted(
    pg_team_t: str, home: Path, config_root: Path
) -> None:
    ok(swarm("spawn", "dan", "--backend", "subprocess", "--model", "shell", "-p", "echo hi",
             cwd=home))  # fmt: skip
    with Database(pg_team_t) as db:
        team = PgTeamFile(db, TEAM)
        pid = team.load().member("dan").model_extra["pid"]  # type: ignore[union-attr]
        wait_for(
            lambda: any("echo hi" in e.text for e in PgMailbox(db, TEAM).peek_all("team-lead")),
            "dan's answer to its prompt",
        )
        assert team.delete()
    assert wait_for(lambda: not pid_alive(pid), "dan to end with its team")


def test_a_listener_that_could_not_listen_again_at_once_says_look_when_it_does(
    conninfo: str, db: Database, pg_team: PgTeamFile
) -> None:
    """Its connection is cut, and making a new one fails for longer than its retries (the
    store refuses connections just then: a network down longer than them). A task added
    before it listens again notifies nobody, so the wait that listens again answers "look"
    instead of waiting for news that will not come (an idle teammate on PostgreSQL would have
    missed the task until its rescan, 10 minutes later)."""
    dbname = psycopg.conninfo.conninfo_to_dict(conninfo)["dbname"]
    admin_info = psycopg.conninfo.make_conninfo(conninfo, dbname="postgres")
    with (
        psycopg.connect(admin_info, autocommit=True) as admin,
        Listener(Database(conninfo, reconnect_s=0.3), TEAM) as listener,
    ):
        conn = listener._listen()
        admin.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(dbname))
        )
        try:
            admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
            with pytest.raises(StoreUnavailable):
                listener.heard({TASKS}, 30.0)
        finally:
            admin.execute(
                sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(dbname))
            )
        db.run(lambda c: notify(c, TEAM, TASKS))  # while nobody listens: lost
        assert listener.heard({TASKS}, 5.0) is None  # listening again: look
        db.run(lambda c: notify(c, TEAM, TASKS))
        assert listener.heard({TASKS}, 30.0) == {TASKS}  # and it hears what comes next
