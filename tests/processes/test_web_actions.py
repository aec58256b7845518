"""The page's actions over HTTP against a real `swarm web` server: a message sent to a member and
to everyone, a task added with its blockers, a real teammate stopped (kept in the team, its
process gone); the read-only token, a token only in the query, another origin and another site
are refused with nothing written, and bad input gets a 400 naming what is wrong, with nothing
written either."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import Processes, spawn_worker, swarm, wait_for
from web_server import WebServer

from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


@pytest.fixture
def web(team: TeamFile, procs: Processes) -> WebServer:
    return WebServer(procs)


def inbox(paths: TeamPaths, name: str) -> list[dict[str, Any]]:
    """Member `name`'s inbox file as it is on disk ([] before its first message)."""
    path = paths.inbox(name)
    return list(json.loads(path.read_text())) if path.exists() else []


def test_sending_a_message_to_a_member_and_to_everyone(web: WebServer, team: TeamFile) -> None:
    sent = web.change("/api/send", {"to": "alice", "text": "review <b>schema</b>\nplease"})
    assert sent.status_code == 200, sent.text
    assert sent.json()["sent_to"] == ["alice"]
    (entry,) = inbox(team.paths, "alice")
    assert entry["from"] == "team-lead" and entry["text"] == "review <b>schema</b>\nplease"
    everyone = web.change("/api/send", {"to": "*", "text": "stand-up", "summary": "stand-up"})
    assert everyone.status_code == 200, everyone.text
    assert sorted(everyone.json()["sent_to"]) == ["alice", "bob", "carol"]
    for name in ("alice", "bob", "carol"):
        assert inbox(team.paths, name)[-1]["text"] == "stand-up"


def test_adding_a_task_with_its_blockers(web: WebServer, team: TeamFile) -> None:
    board = TaskBoard(team.paths)
    first = web.change("/api/tasks", {"subject": "build it", "description": "make\n\tall"})
    assert first.status_code == 200, first.text
    assert first.json()["id"] == "1"
    second = web.change("/api/tasks", {"subject": "ship it", "blockedBy": ["1"]})
    assert second.status_code == 200, second.text
    task = board.require("1")
    assert (task.subject, task.description) == ("build it", "make\n\tall")
    assert board.require("2").blockedBy == ["1"]
    state = wait_for(
        lambda: (s := web.state())["tasks"]["pending"] and len(s["tasks"]["pending"]) == 2 and s,
        "both tasks on the page's board",
    )
    assert state["blocked"] == {"2": ["1"]}


def test_what_a_change_needs(web: WebServer, team: TeamFile) -> None:
    message = {"to": "alice", "text": "hello"}
    assert web.get("/", web.token).status_code == 200  # the client has the page's cookie now
    refused = [
        web.change("/api/send", message, token=web.viewer_token),
        web.change("/api/tasks", {"subject": "x"}, token=web.viewer_token),
        web.change("/api/members/alice/stop", {}, token=web.viewer_token),
        web.change("/api/send", message, headers={"Origin": "http://evil.example"}),
        web.change("/api/tasks", {"subject": "x"}, headers={"Sec-Fetch-Site": "cross-site"}),
        web.change("/api/send", message, headers={"Content-Type": "text/plain"}),
        # the token in the query or the cookie, not the header: what another site could send
        web.client.post("/api/send", params={"token": web.token}, json=message),
        web.client.post("/api/tasks", json={"subject": "x"}),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
    assert "full token" in refused[0].json()["error"]
    assert "origin" in refused[3].json()["error"]
    assert inbox(team.paths, "alice") == [] and TaskBoard(team.paths).list() == []
    own = web.change("/api/send", message, headers={"Origin": web.base})
    assert own.status_code == 200, own.text


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/api/send", {"to": "alice", "text": ""}, "'text' is empty"),
        ("/api/send", {"to": "alice", "text": "   "}, "'text' is only blanks"),
        ("/api/send", {"to": "nobody", "text": "hi"}, "'nobody' is not a teammate"),
        ("/api/send", {"to": "../alice", "text": "hi"}, "allowed: '*' (everyone) or one of"),
        ("/api/send", {"to": "team-lead", "text": "hi"}, "not a teammate"),
        ("/api/send", {"to": "alice", "text": "red \x1b[31m"}, "control character U+001B"),
        ("/api/send", {"to": "alice", "text": 7}, "'text' must be text"),
        ("/api/send", {"to": "alice", "text": "hi", "from": "bob"}, "unknown field 'from'"),
        ("/api/send", {"to": "alice", "text": "x" * 100_001}, "at most 100,000"),
        ("/api/tasks", {"subject": ""}, "'subject' is empty"),
        ("/api/tasks", {"subject": "two\nlines"}, "U+000A; allowed: no control characters"),
        ("/api/tasks", {"subject": "ok", "description": "bell\x07"}, "U+0007"),
        ("/api/tasks", {"subject": "ok", "blockedBy": ["9"]}, "no task #9"),
        ("/api/tasks", {"subject": "ok", "blockedBy": ["x; rm"]}, "not a task id"),
        ("/api/tasks", {"subject": "ok", "blockedBy": {"a": 1}}, "list of task ids"),
        ("/api/members/nobody/stop", {}, "'nobody' is not a teammate"),
        ("/api/members/team-lead/stop", {}, "the lead is not stopped here"),
        ("/api/members/alice/stop", {"reason": "a\x00b"}, "U+0000"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    web: WebServer, team: TeamFile, path: str, body: dict[str, Any], said: str
) -> None:
    before = sorted(p.name for p in team.paths.team_dir.rglob("*"))
    refused = web.change(path, body)
    assert refused.status_code == 400, refused.text
    assert said in refused.json()["error"], refused.json()
    assert "\x1b" not in refused.text and "\x00" not in refused.text and "\x07" not in refused.text
    assert TaskBoard(team.paths).list() == []
    for name in ("alice", "bob", "carol"):
        assert inbox(team.paths, name) == []
    assert sorted(p.name for p in team.paths.team_dir.rglob("*")) == before
    assert TeamFile(team.paths).load().member("alice") is not None


def test_bad_json_and_a_bad_team(web: WebServer) -> None:
    bad = web.client.post(
        "/api/send",
        content=b"{not json",
        headers={"Authorization": f"Bearer {web.token}", "Content-Type": "application/json"},
    )
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]
    listed = web.change("/api/send", [1, 2])  # type: ignore[arg-type]
    assert listed.status_code == 400 and "JSON object" in listed.json()["error"]
    other = web.change("/api/send", {"to": "alice", "text": "hi"}, team="other")
    assert other.status_code == 404 and "shows team 't' only" in other.json()["error"]
    invalid = web.change("/api/send", {"to": "alice", "text": "hi"}, team="../t")
    assert invalid.status_code == 400 and "invalid team" in invalid.json()["error"]


def test_stopping_a_real_teammate(config_root: Path, tmp_path: Path, procs: Processes) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    spawn_worker("ann", work)
    paths = TeamPaths(config_root, "t")
    web = WebServer(procs)
    wait_for(
        lambda: any(m["name"] == "ann" and m["state"] == "idle" for m in web.state()["members"]),
        "ann to be idle on the page",
    )
    assert web.change("/api/members/ann/stop", {}, token=web.viewer_token).status_code == 403
    stopping = web.change("/api/members/ann/stop", {"reason": "lunch"})
    assert stopping.status_code == 202, stopping.text
    assert stopping.json()["stopping"] == "ann"
    wait_for(
        lambda: (TeamFile(paths).entry("ann") or {}).get("swarmStopped"),
        "ann to be stopped and kept in the team",
    )
    wait_for(
        lambda: any(m["name"] == "ann" and m["state"] == "stopped" for m in web.state()["members"]),
        "ann shown stopped",
    )
