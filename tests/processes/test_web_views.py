"""What a real `swarm web` server shows beyond the state: a member's messages as one thread, its
log (hostile text, quotes and control characters served as JSON text, escaped lines beside
it), the team's cost over time as a series, and a server of every team under the config root
(its listing, a team per route, names checked)."""

from __future__ import annotations

import json
import os
import signal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from helpers import Processes, wait_for
from web_server import WebServer

from protocols.fs import safefs
from protocols.inbox.mailbox import Mailbox
from protocols.member.status import AgentStatus, write_status
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

HOSTILE = '<script>alert("x")</script> it\'s \x1b[31mred\x07 \u202e & done'


@pytest.fixture
def web(team: TeamFile, procs: Processes) -> WebServer:
    return WebServer(procs)


def test_a_members_thread_in_and_out_in_time_order(web: WebServer, team: TeamFile) -> None:
    mailbox = Mailbox(team.paths)
    mailbox.send("alice", HOSTILE, sender="bob")
    mailbox.send("bob", "got it", sender="alice")
    mailbox.send("*", "to everyone", sender="alice")
    mailbox.send("carol", "not alice's", sender="bob")
    response = web.get("/api/members/alice/thread", web.viewer_token)  # seeing is read-only
    assert response.status_code == 200, response.text
    assert (
        "\x1b" not in response.text and "\x07" not in response.text and "<script>" in response.text
    )
    thread = response.json()
    assert thread["member"] == "alice"
    shown = [(m["direction"], m["from"], sorted(m["to"]), m["text"]) for m in thread["messages"]]
    assert shown == [
        ("in", "bob", ["alice"], HOSTILE),
        ("out", "alice", ["bob"], "got it"),
        ("out", "alice", ["bob", "carol", "team-lead"], "to everyone"),
    ]


def test_a_members_log_its_last_lines_as_text(web: WebServer, team: TeamFile) -> None:
    log = team.paths.log("alice")
    safefs.makedirs(log.parent)
    log.write_text("".join(f"line {n}\n" for n in range(10)) + HOSTILE + "\n")
    got = web.json("/api/members/alice/log", process="1", lines="3")
    assert got["process"] is True and got["total"] == 11
    assert [line["text"] for line in got["lines"]] == ["line 8", "line 9", HOSTILE]
    escaped = got["lines"][-1]["line"]
    assert "\x1b" not in escaped and "\x07" not in escaped and "<script>" in escaped
    assert "u001b" in escaped  # shown, as `swarm logs` prints it
    raw = web.client.get("/api/members/alice/log", params={"token": web.token, "process": "1"}).text
    assert "\x1b" not in raw and "\x07" not in raw
    # without process=1: what `swarm logs alice` shows (no transcript: its messages, then its log)
    Mailbox(team.paths).send("alice", "hello there", sender="bob")
    activity = web.json("/api/members/alice/log")
    assert "no model calls" in activity["note"]
    texts = [line["text"] for line in activity["lines"]]
    assert any("hello there" in t for t in texts) and any("line 9" in t for t in texts)


@pytest.mark.parametrize(
    ("path", "query", "said"),
    [
        ("/api/members/nobody/thread", {}, "'nobody' is not a member"),
        ("/api/members/nobody/log", {}, "'nobody' is not a member"),
        ("/api/members/alice/log", {"lines": "0"}, "from 1 to 5,000"),
        ("/api/members/alice/log", {"lines": "abc"}, "from 1 to 5,000"),
        ("/api/members/bob/log", {"process": "1"}, "no process log for bob"),
    ],
)
def test_bad_questions_get_a_400(
    web: WebServer, path: str, query: dict[str, str], said: str
) -> None:
    response = web.client.get(path, params={"token": web.token, **query})
    assert response.status_code == 400, response.text
    assert said in response.json()["error"]


def test_the_cost_over_time_is_kept_when_the_server_restarts(
    web: WebServer, team: TeamFile, procs: Processes
) -> None:
    def last_cost(state: dict[str, Any]) -> float | None:
        series = state["cost_series"]
        return series[-1][1] if series else None

    write_status(team.paths, AgentStatus(name="alice", model="claude-sonnet-4-5", costUsd=0.5))
    wait_for(lambda: last_cost(web.state()) == 0.5, "the first sample")
    write_status(team.paths, AgentStatus(name="bob", model="claude-sonnet-4-5", costUsd=1.25))

    def summed() -> dict[str, Any] | None:
        state = web.state()
        return state if last_cost(state) == 1.75 else None

    state = wait_for(summed, "the sum")
    assert state["cost_usd"] == 1.75
    series = state["cost_series"]
    assert [cost for _, cost in series][-2:] == [0.5, 1.75]
    assert all(a[0] <= b[0] for a, b in pairwise(series))

    web.proc.send_signal(signal.SIGTERM)  # stopped, the server keeps its chart
    assert web.proc.wait(30) == 0
    again = WebServer(procs)
    assert wait_for(lambda: again.state()["cost_series"], "the kept chart")[: len(series)] == series


def make_team(root: Path, name: str, where: Path) -> TeamPaths:
    paths = TeamPaths(root, name)
    TeamFile(paths).create(description=f"team {name}", cwd=where)
    TeamFile(paths).add_member("ann", cwd=where)
    return paths


def test_a_server_of_every_team(config_root: Path, procs: Processes, tmp_path: Path) -> None:
    alpha = make_team(config_root, "alpha", tmp_path)
    beta = make_team(config_root, "beta", tmp_path)
    # a team whose name swarm never makes (Claude Code's may): listed by `swarm team list`,
    # not served here
    odd = config_root / "teams" / "Not_Swarms"
    odd.mkdir()
    (odd / "config.json").write_text(alpha.config.read_text())
    web = WebServer(procs, team=None, env=dict(os.environ))
    assert web.token_file.name.startswith("_teams-")
    session = web.json("/api/session")
    assert session["allTeams"] is True and session["team"] is None
    listed = web.json("/api/teams")["teams"]
    assert [t["name"] for t in listed] == ["alpha", "beta"]
    assert listed[0]["description"] == "team alpha" and listed[0]["members"] == 2
    assert web.json("/api/state", team="beta")["team"] == "beta"
    for query, status, said in (
        ({}, 400, "give the team as ?team=NAME"),
        ({"team": "nope"}, 404, "no team 'nope'"),
        ({"team": "Not_Swarms"}, 400, "invalid team"),
        ({"team": "../alpha"}, 400, "invalid team"),
    ):
        response = web.client.get("/api/state", params={"token": web.token, **query})
        assert response.status_code == status, (query, response.text)
        assert said in response.json()["error"], response.json()
    added = web.change("/api/tasks", {"subject": "alpha's task"}, team="alpha")
    assert added.status_code == 200, added.text
    assert [t.subject for t in TaskBoard(alpha).list()] == ["alpha's task"]
    assert TaskBoard(beta).list() == []
    sent = web.change("/api/send", {"to": "ann", "text": "hi"}, team="beta")
    assert sent.status_code == 200, sent.text
    assert json.loads(beta.inbox("ann").read_text())[0]["text"] == "hi"
    assert all(e["text"] != "hi" for e in json.loads(alpha.inbox("ann").read_text() or "[]"))
    assert (
        web.change("/api/tasks", {"subject": "x"}, team="beta", token=web.viewer_token).status_code
        == 403
    )
