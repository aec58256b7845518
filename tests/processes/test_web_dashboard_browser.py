"""`swarm web` in a real headless Chromium (Debian's `chromium`, installed by
.ci/install-chromium; skipped without it), driven over the DevTools protocol (`chromium`): the
page opens its event stream and renders the team, a hostile task subject and message as text,
a real shell teammate's request with its buttons; clicking Approve lets the teammate go on; a
second page that answers after it is told; without the token the page shows nothing."""

from __future__ import annotations

from pathlib import Path

from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, teammate_argv, wait_for
from web_server import WebServer

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = NEEDS_CHROMIUM
HOSTILE = "<img src=x onerror=\"document.title='owned'\"><b>bold</b>"


def test_approving_from_a_real_browser(
    team: TeamFile, procs: Processes, tmp_path: Path, browser: Chromium
) -> None:
    (tmp_path / "build").mkdir()
    web = WebServer(procs)
    board = TaskBoard(team.paths)
    board.create("dangerous", metadata={"command": "rm -rf build"})
    board.create(HOSTILE)
    Mailbox(team.paths).send("team-lead", HOSTILE, sender="bob")
    procs.start(teammate_argv("alice"))
    browser.open(web.url)
    wait_for(lambda: browser.js("document.querySelectorAll('.request').length") == 1, "a request")
    assert browser.js("document.querySelector('#link').textContent") == "live"
    assert "rm -rf build" in browser.js("document.querySelector('.request pre').textContent")
    text = browser.js("document.body.textContent")
    assert HOSTILE in text  # shown as text
    assert browser.js("document.querySelectorAll('main img, main b').length") == 0
    assert browser.js("document.title") == "swarm · t"
    for name, width, mobile in (("desktop", 1280, False), ("phone", 390, True)):
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 844, "deviceScaleFactor": 1, "mobile": mobile},
        )
        browser.screenshot(tmp_path / f"web-{name}.png")  # what docs/web.md would show
        assert (tmp_path / f"web-{name}.png").read_bytes().startswith(b"\x89PNG")
    phone_columns = "getComputedStyle(document.querySelector('#board')).gridTemplateColumns"
    assert len(browser.js(phone_columns).split()) == 1  # the board's columns stack on a phone
    browser.js("document.querySelector('.request button.approve').click()")
    wait_for(lambda: board.require("1").status == "completed", "task 1 to be completed")
    assert not (tmp_path / "build").exists()
    wait_for(
        lambda: browser.js("document.querySelectorAll('.request').length") == 0,
        "the request to leave the page",
    )


def test_without_the_token_the_page_shows_nothing(
    team: TeamFile, procs: Processes, browser: Chromium
) -> None:
    web = WebServer(procs)
    browser.open(web.base + "/")
    wait_for(lambda: browser.js("document.readyState") == "complete", "the page")
    assert "needs its token" in browser.js("document.body.textContent")
