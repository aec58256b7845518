"""`swarm bridge --session`: a PostgreSQL team mirrored into the session team of a Claude Code
2.1.330 lead (`protocols.bridge.session`). The session team is written here in 2.1.330's format
(``session-<8 hex>``, ``leadSessionId``, ``leadProcess`` naming a live process: this test's);
the passes are driven one at a time against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pg_cli import url_of

from protocols.bridge import Bridge
from protocols.fs.jsonio import dumps_pretty
from protocols.inbox.file import InboxFile
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg import Database, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.pids import start_time


@pytest.fixture
def paths(conninfo: str, pg_team: PgTeamFile, config_root: Path) -> TeamPaths:
    """Team ``t`` (lead, alice, bob, carol) in the store; this host's root for its files."""
    return TeamPaths(config_root, "t", None, url_of(conninfo))


def session_team(root: Path, session: str, pid: int | None = None) -> TeamPaths:
    """A Claude Code 2.1.330 lead's session team as it makes it at start (spec section 9)."""
    name = f"session-{session[:8]}"
    pid = os.getpid() if pid is None else pid
    config: dict[str, Any] = {
        "name": name,
        "createdAt": 1_770_649_635_547,
        "leadAgentId": f"team-lead@{name}",
        "leadSessionId": session,
        "members": [
            {
                "agentId": f"team-lead@{name}",
                "name": "team-lead",
                "agentType": "team-lead",
                "model": "claude-opus-4-6",
                "joinedAt": 1_770_649_635_547,
                "tmuxPaneId": "",
                "cwd": str(root),
                "subscriptions": [],
            }
        ],
        "leadProcess": {
            "pid": pid,
            "pidSpace": "host",
            "claimedAt": 1_770_649_635_600,
            "procStart": str(start_time(pid)),
        },
    }
    files = TeamPaths(root, name)
    files.team_dir.mkdir(parents=True)
    files.config.write_text(dumps_pretty(config))
    return files


def config_of(files: TeamPaths) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(files.config.read_text())
    return loaded


SESSION = "3b22f6a2-8179-4ae8-b430-2d1c9f0e7a11"


def test_the_store_roster_joins_the_session_team_and_claude_codes_own_entries_stay(
    paths: TeamPaths, pg_team: PgTeamFile
) -> None:
    files = session_team(paths.root, SESSION)
    before = config_of(files)
    mine = {**before["members"][0], "agentId": f"helper@{files.team}", "name": "helper"}
    files.config.write_text(dumps_pretty({**before, "members": [*before["members"], mine]}))
    bridge = Bridge(paths, ["team-lead"], session=True)
    assert bridge.sync().roster
    after = config_of(files)
    top = {k: v for k, v in after.items() if k != "members"}
    assert top == {k: v for k, v in before.items() if k != "members"}  # Claude Code's own
    assert [m["name"] for m in after["members"]] == [
        "team-lead", "alice", "bob", "carol", "helper"
    ]  # fmt: skip
    assert after["members"][0] == before["members"][0]  # the lead's entry as Claude Code keeps it
    assert after["members"][1] == pg_team.load().member("alice").to_json_dict()  # type: ignore[union-attr]
    assert after["members"][4] == mine  # a teammate only Claude Code knows
    assert not bridge.sync().roster
    assert not (paths.root / "teams" / "t").exists()  # nothing made under the store's name
    pg_team.remove_member("carol")
    assert bridge.sync().roster
    names = [m["name"] for m in config_of(files)["members"]]
    assert names == ["team-lead", "alice", "bob", "helper"]


def test_the_claude_code_lead_talks_with_the_store_each_message_once(
    paths: TeamPaths, db: Database
) -> None:
    files = session_team(paths.root, SESSION)
    store = PgMailbox(db, "t")
    Bridge(paths, ["team-lead"], session=True).sync()
    # the lead's SendMessage to bob (who lives elsewhere): into bob's inbox file, its outbox
    [sent] = Mailbox(files).send("bob", "please review #3", sender="team-lead")
    [answer] = store.send("team-lead", "reviewed: fine", sender="bob", message_id="m-bob-1")
    for _ in range(2):
        Bridge(paths, ["team-lead"], session=True).sync()  # again, and by a bridge started anew
    [there] = store.peek_all("bob")
    assert (there.text, there.from_, there.msg_id) == ("please review #3", "team-lead", sent.msg_id)
    inbox = InboxFile(files.inbox("team-lead"), files.inbox_archive("team-lead"))
    [got] = inbox.load().entries()
    assert (got.text, got.from_, got.msg_id, got.read) == (
        "reviewed: fine",
        "bob",
        answer.msg_id,
        False,
    )
    inbox.path.write_text("[]")  # Claude Code 2.1.330 reads it: deleted from the file
    Bridge(paths, ["team-lead"], session=True).sync()
    assert store.read_unread("team-lead") == []
    assert [e.msg_id for e in store.peek_all("team-lead")] == [answer.msg_id]


def test_the_bridge_waits_for_a_live_session_and_follows_the_next_one(
    paths: TeamPaths, db: Database
) -> None:
    bridge = Bridge(paths, ["team-lead"], session=True)
    board = PgTaskBoard(db, "t")
    task = board.create("ship it")
    assert bridge.sync().moved == 0  # no lead session here: nothing is made
    assert not (paths.root / "teams").exists()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                           capture_output=True, text=True)  # fmt: skip
    session_team(paths.root, "deadbeef-0000", pid=int(ended.stdout))  # its lead has exited
    assert bridge.sync().moved == 0
    first = session_team(paths.root, SESSION)
    assert bridge.sync().tasks == 1
    assert json.loads(first.task(task.id).read_text())["subject"] == "ship it"
    PgMailbox(db, "t").send("team-lead", "for the first session", sender="alice")
    bridge.sync()
    [heard] = InboxFile(first.inbox("team-lead"), first.inbox_archive("team-lead")).load().entries()
    assert heard.text == "for the first session"
    # the lead exits (Claude Code deletes its session team) and starts again
    for path in sorted(first.team_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    first.team_dir.rmdir()
    second = session_team(paths.root, "c0ffee00-1111")
    bridge.sync()
    assert json.loads(second.task(task.id).read_text())["subject"] == "ship it"
    [again] = (
        InboxFile(second.inbox("team-lead"), second.inbox_archive("team-lead")).load().entries()
    )
    assert again.text == "for the first session"  # unread on the store: the new session has it
    assert not first.team_dir.exists()  # the ended session is not made again
