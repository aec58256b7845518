"""`swarm web` as a real server process: its tokens, the page and the state, what is refused."""

from __future__ import annotations

import stat

import pytest
from helpers import Processes, swarm, wait_for
from web_server import EventReader, WebServer, stop

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


@pytest.fixture
def web(team: TeamFile, procs: Processes) -> WebServer:
    return WebServer(procs)


def test_every_request_needs_the_token(web: WebServer) -> None:
    for path in ("/", "/app.js", "/app.css", "/api/state", "/api/events", "/api/session"):
        assert web.get(path).status_code == 401, path
        assert web.get(path, "not-the-token").status_code == 401, path
    assert web.post("x", "approve", token="not-the-token").status_code == 401


def test_the_page_and_the_state_with_the_token(web: WebServer) -> None:
    page = web.get("/", web.token)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert web.client.get("/app.js").status_code == 200  # with the cookie the page set
    assert "textContent" in web.client.get("/app.js").text
    state = web.state()
    assert state["team"] == "t" and state["store"] == "files"
    assert {m["name"] for m in state["members"]} >= {"alice", "bob", "carol"}
    assert web.get("/api/session", web.viewer_token).json()["role"] == "read-only"
    assert web.get("/api/session", web.token).json()["role"] == "full"


def test_the_token_file_is_private_and_goes_with_the_server(web: WebServer) -> None:
    assert stat.S_IMODE(web.token_file.stat().st_mode) == 0o600
    assert web.token in web.token_file.read_text()
    assert stop(web) == 0
    assert not web.token_file.exists()


def test_hostile_text_is_served_only_as_json(web: WebServer, team: TeamFile) -> None:
    hostile = "<script>alert('x\")</script>\x1b[31m\x07 & \u202e"
    Mailbox(team.paths).send("team-lead", hostile, sender="alice")
    TaskBoard(team.paths).create(hostile)
    events = EventReader(web)
    wait_for(
        lambda: any(
            hostile in m["text"] and [t["subject"] for t in s["tasks"]["pending"]] == [hostile]
            for s in events.states
            for m in s["messages"]
        ),
        "the message and the task in the event stream",
    )
    response = web.get("/api/state", web.token)
    assert response.headers["content-type"] == "application/json"
    assert "\x1b" not in response.text and "\x07" not in response.text
    assert any(t["subject"] == hostile for t in response.json()["tasks"]["pending"])
    assert all("\x1b" not in line for line in events.raw)  # one line per event's data
    assert "alert" not in web.get("/", web.token).text  # the page holds no team data


def test_changes_need_the_header_token_the_origin_and_json(web: WebServer) -> None:
    # the token in the query or the cookie is not enough for a change
    assert (
        web.client.post("/api/requests/x/approve", params={"token": web.token}, json={}).status_code
        == 403
    )
    foreign = web.post("x", "approve", headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "origin" in foreign.json()["error"]
    assert web.post("x", "approve", headers={"Content-Type": "text/plain"}).status_code == 403
    assert web.post("x", "approve", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert web.post("x", "approve", token=web.viewer_token).status_code == 403
    same = web.post("x", "approve", headers={"Origin": web.base})
    assert same.status_code == 404, same.text  # allowed through: there is no request x


def test_wrong_tokens_are_limited(web: WebServer) -> None:
    codes = [web.get("/api/state", f"wrong-{n}").status_code for n in range(25)]
    assert codes[0] == 401 and codes[-1] == 429
    assert web.get("/api/state", web.token).status_code == 429  # shut out for a while


def test_off_loopback_needs_tls_or_insecure(team: TeamFile) -> None:
    refused = swarm("web", "--listen", "0.0.0.0:0")
    assert refused.returncode == 1 and "--tls-cert" in refused.stderr
    missing = swarm("web", "--team", "nope", "--listen", "127.0.0.1:0")
    assert missing.returncode == 1 and "not found" in missing.stderr
