"""Answering a real teammate's requests from `swarm web`: the event stream brings a shell
teammate's request, Approve lets the teammate go on, Deny's reason reaches it, of two answers at
once one wins and the other is told; a Claude teammate's questions are answered and its model
reads the answer."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from helpers import Processes, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn
from web_server import QUESTIONS, EventReader, WebServer

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


@pytest.fixture
def web(team: TeamFile, procs: Processes) -> WebServer:
    return WebServer(procs)


def asked(team: TeamFile, procs: Processes, web: WebServer) -> tuple[dict[str, Any], TaskBoard]:
    """alice asks to run ``rm -rf build`` (task 1): the request as the event stream brought it."""
    board = TaskBoard(team.paths)
    board.create("dangerous", metadata={"command": "rm -rf build"})
    events = EventReader(web)
    wait_for(lambda: events.states, "the first state")  # the stream is open before alice asks
    procs.start(teammate_argv("alice"))
    (request,) = wait_for(events.requests, "alice's request in the event stream")
    assert request["teammate"] == "alice" and request["tool"] == "Bash"
    assert request["content"] == ["$ rm -rf build"]
    return request, board


def test_approving_from_the_page_lets_the_teammate_go_on(
    web: WebServer, team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    (tmp_path / "build").mkdir()
    request, board = asked(team, procs, web)
    approved = web.post(request["id"], "approve", headers={"Origin": web.base})
    assert approved.status_code == 200, approved.text
    assert approved.json() == {"id": request["id"], "approved": True}
    wait_for(lambda: board.require("1").status == "completed", "task 1 to be completed")
    assert not (tmp_path / "build").exists()
    wait_for(lambda: not web.state()["requests"], "the request to leave the page")


def test_denying_with_a_reason(web: WebServer, team: TeamFile, procs: Processes) -> None:
    request, board = asked(team, procs, web)
    denied = web.post(request["id"], "deny", {"reason": "not today <b>"})
    assert denied.status_code == 200, denied.text
    wait_for(lambda: board.require("1").failed, "task 1 to be failed")
    assert "not today <b>" in board.require("1").failure
    assert web.post(request["id"], "approve").status_code == 409  # answered already


def test_two_answers_at_once_one_wins(web: WebServer, team: TeamFile, procs: Processes) -> None:
    request, board = asked(team, procs, web)
    go = threading.Barrier(2)
    results: dict[str, httpx2.Response] = {}

    def answer(verb: str) -> None:
        with httpx2.Client(base_url=web.base, timeout=30) as client:
            go.wait()
            results[verb] = client.post(
                f"/api/requests/{request['id']}/{verb}",
                json={},
                headers={"Authorization": f"Bearer {web.token}"},
            )

    threads = [threading.Thread(target=answer, args=(v,)) for v in ("approve", "deny")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    codes = sorted(r.status_code for r in results.values())
    assert codes == [200, 409], {v: r.text for v, r in results.items()}
    loser = next(r for r in results.values() if r.status_code == 409)
    assert "already answered" in loser.json()["error"]
    winner = next(v for v, r in results.items() if r.status_code == 200)
    wait_for(lambda: ended(board), "task 1 to end")
    assert board.require("1").failed == (winner == "deny")


def ended(board: TaskBoard) -> bool:
    task = board.require("1")
    return task.status == "completed" or task.failed


def test_a_question_answer_to_a_command_is_refused(
    web: WebServer, team: TeamFile, procs: Processes
) -> None:
    request, _ = asked(team, procs, web)
    wrong = web.post(request["id"], "answer", {"answers": ["yes"]})
    assert wrong.status_code == 400 and "not a question" in wrong.json()["error"]
    assert web.post(request["id"], "answer", {"answers": "yes"}).status_code == 400
    assert web.post(request["id"], "approve", token=web.viewer_token).status_code == 403
    assert web.state()["requests"][0]["id"] == request["id"]  # still waiting


def test_answering_a_teammates_questions(
    team: TeamFile, procs: Processes, start: Callable[..., subprocess.Popen[str]]
) -> None:
    web = WebServer(procs)
    script = [Turn.tool("AskUserQuestion", {"questions": QUESTIONS}), Turn.text("Noted.")]
    with MessagesAPI(script) as api:
        start("alice", api)
        Mailbox(team.paths).send("alice", "Set up the project.", sender="team-lead")
        (request,) = wait_for(lambda: web.state()["requests"], "the question on the page")
        assert request["questions"] == [
            {
                "question": "Which database?",
                "multiSelect": False,
                "options": [
                    {"label": "Postgres", "description": "a server"},
                    {"label": "SQLite", "description": "a file"},
                ],
            }
        ]
        assert web.post(request["id"], "approve").status_code == 400  # a question is answered
        done = web.post(request["id"], "answer", {"answers": ["2"]})
        assert done.status_code == 200, done.text
        assert done.json()["answered"] == {"Which database?": "SQLite"}
        wait_for(lambda: len(api.requests) == 2, "the answer to reach the model")
        told = str(api.requests[1]["messages"][-1]["content"])
        assert "SQLite" in told
