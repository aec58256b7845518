"""Answering from real pages in a headless Chromium (`chromium`), as a person does: a reason
typed into Deny reaches the teammate; two pages click at once, one wins and the other page says
it was answered already; a Claude teammate's question answered by typing an option into the page
reaches its model."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn
from web_server import QUESTIONS, WebServer

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = NEEDS_CHROMIUM
REQUESTS = "document.querySelectorAll('.request').length"


@pytest.fixture
def browsers(tmp_path: Path) -> Iterator[list[Chromium]]:
    opened = [Chromium(tmp_path / "one"), Chromium(tmp_path / "two")]
    yield opened
    for browser in opened:
        browser.close()


def type_into(browser: Chromium, selector: str, text: str) -> None:
    """Type `text` into the page's field as a person would: its value, and the input event
    the page keeps drafts from."""
    browser.js(
        f"(() => {{ const f = document.querySelector({json.dumps(selector)});"
        f" f.value = {json.dumps(text)}; f.dispatchEvent(new Event('input')); }})()"
    )


def waiting(team: TeamFile, procs: Processes, web: WebServer, pages: list[Chromium]) -> TaskBoard:
    """alice (a shell teammate) asks to run ``rm -rf build``; each page shows the request."""
    board = TaskBoard(team.paths)
    board.create("dangerous", metadata={"command": "rm -rf build"})
    procs.start(teammate_argv("alice"))
    for page in pages:
        page.open(web.url)
    for page in pages:
        wait_for(lambda page=page: page.js(REQUESTS) == 1, "the request on the page")
    return board


def test_a_reason_typed_into_deny_reaches_the_teammate(
    team: TeamFile, procs: Processes, browsers: list[Chromium]
) -> None:
    page = browsers[0]
    board = waiting(team, procs, WebServer(procs), [page])
    type_into(page, ".request input", 'not today; "$(rm -rf ~)" <b>')
    page.js("document.querySelector('.request button.deny').click()")
    wait_for(lambda: board.require("1").failed, "task 1 to be failed")
    assert 'not today; "$(rm -rf ~)" <b>' in board.require("1").failure
    wait_for(lambda: page.js(REQUESTS) == 0, "the request to leave the page")


def test_two_pages_clicking_at_once_one_wins_and_the_other_is_told(
    team: TeamFile, procs: Processes, browsers: list[Chromium], tmp_path: Path
) -> None:
    (tmp_path / "build").mkdir()
    board = waiting(team, procs, WebServer(procs), browsers)
    one, two = browsers
    # both clicks are on the card each page shows: the buttons are taken first, so the second
    # click lands even if the first answer has already reached its page and redrawn it
    assert one.js("(window.pressed = document.querySelector('.request button.approve')) !== null")
    assert two.js("(window.pressed = document.querySelector('.request button.deny')) !== null")
    one.js("window.pressed.click()")
    two.js("window.pressed.click()")
    wait_for(lambda: board.require("1").status == "completed" or board.require("1").failed, "it")
    won_by_approve = board.require("1").status == "completed"
    loser = two if won_by_approve else one
    notice = "document.querySelector('#notice').textContent"
    told = wait_for(lambda: loser.js(notice) or None, "the losing page to say what happened")
    assert "already answered" in told, told
    assert (tmp_path / "build").exists() != won_by_approve


def test_a_question_answered_in_the_page(
    team: TeamFile,
    procs: Processes,
    browsers: list[Chromium],
    start: Callable[..., subprocess.Popen[str]],
) -> None:
    web = WebServer(procs)
    page = browsers[0]
    script = [Turn.tool("AskUserQuestion", {"questions": QUESTIONS}), Turn.text("Noted.")]
    with MessagesAPI(script) as api:
        start("alice", api)
        Mailbox(team.paths).send("alice", "Set up the project.", sender="team-lead")
        page.open(web.url)
        wait_for(lambda: page.js(REQUESTS) == 1, "the question on the page")
        assert "Which database?" in page.js("document.querySelector('.request').textContent")
        type_into(page, ".request input", "SQLite")
        page.js("document.querySelector('.request button.approve').click()")  # Answer
        wait_for(lambda: len(api.requests) == 2, "the answer to reach the model")
        assert "SQLite" in str(api.requests[1]["messages"][-1]["content"])
        wait_for(lambda: page.js(REQUESTS) == 0, "the question to leave the page")
