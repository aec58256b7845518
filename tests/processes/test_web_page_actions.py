"""The page's own actions in a real headless Chromium (skipped without it; `chromium`): a task
added from the page appears on its board and in the team's files, a message sent from the page
lands in the member's inbox file; a member's thread and log open on a click and show hostile
text as text; the cost chart is an SVG; at a phone's width nothing scrolls sideways; the
read-only page has no forms; a server of every team shows the picker and opens a team; Stop,
clicked twice, stops a real teammate."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, spawn_worker, swarm, wait_for
from web_server import WebServer

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import AgentStatus, write_status
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = NEEDS_CHROMIUM
HOSTILE = "<img src=x onerror=\"document.title='owned'\"><script>document.title='owned'</script>"


def text_of(browser: Chromium, selector: str) -> str:
    return str(
        browser.js(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")
    )


def test_adding_a_task_and_sending_a_message_from_the_page(
    team: TeamFile, procs: Processes, browser: Chromium, tmp_path: Path
) -> None:
    web = WebServer(procs)
    Mailbox(team.paths).send("alice", HOSTILE, sender="bob")
    browser.open(web.url)
    wait_for(lambda: text_of(browser, "#link") == "live", "the page to be live")
    assert browser.js("document.querySelector('#act').hidden") is False
    browser.js(
        "document.querySelector('#task-subject').value = 'write the <b>docs</b>';"
        "document.querySelector('#task-description').value = 'all of them';"
        "document.querySelector('#task-button').click()"
    )
    wait_for(lambda: "write the <b>docs</b>" in text_of(browser, "#board"), "the task on the board")
    assert text_of(browser, "#task-said") == "added task #1"
    task = TaskBoard(team.paths).require("1")
    assert (task.subject, task.description) == ("write the <b>docs</b>", "all of them")
    browser.js(
        "document.querySelector('#send-to').value = 'alice';"
        "document.querySelector('#send-text').value = 'please review \"it\"';"
        "document.querySelector('#send-button').click()"
    )
    inbox = team.paths.inbox("alice")
    wait_for(
        lambda: any(e["text"] == 'please review "it"' for e in json.loads(inbox.read_text())),
        "the message in alice's inbox file",
    )
    wait_for(lambda: text_of(browser, "#send-said") == "sent to alice", "the page to say so")
    # a refused change says why, under its form
    browser.js("document.querySelector('#task-button').click()")  # no subject
    wait_for(lambda: "'subject' is empty" in text_of(browser, "#task-said"), "the refusal")
    assert len(TaskBoard(team.paths).list()) == 1
    # alice's thread: what bob sent her, hostile, as text; and what the lead sent
    browser.js(
        "Array.from(document.querySelectorAll('button.name')).find(b => b.textContent === 'alice').click()"
    )
    wait_for(lambda: 'please review "it"' in text_of(browser, "#thread"), "alice's thread")
    assert HOSTILE in text_of(browser, "#thread")
    assert browser.js("document.querySelectorAll('main img, main script').length") == 0
    assert browser.js("document.title") == "swarm · t"
    # the cost, as the members' status files report it, drawn as an SVG
    write_status(team.paths, AgentStatus(name="alice", model="claude-sonnet-4-5", costUsd=1.25))
    wait_for(
        lambda: browser.js("document.querySelectorAll('#cost svg polyline').length") == 1,
        "the chart",
    )
    assert "$1.25" in text_of(browser, "#cost-now")
    # a phone: nothing scrolls sideways
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    wait_for(lambda: browser.js("document.documentElement.clientWidth") == 390, "the phone width")
    assert browser.js("document.documentElement.scrollWidth") <= 390
    browser.screenshot(tmp_path / "web-actions-phone.png")


def test_the_read_only_page_has_no_forms(
    team: TeamFile, procs: Processes, browser: Chromium
) -> None:
    web = WebServer(procs)
    browser.open(web.viewer_url)
    wait_for(lambda: text_of(browser, "#link") == "live", "the page to be live")
    assert browser.js("document.querySelector('#act').hidden") is True
    assert browser.js("document.querySelectorAll('#members button.deny').length") == 0


def test_a_server_of_every_team_shows_the_picker(
    config_root: Path, procs: Processes, browser: Chromium, tmp_path: Path
) -> None:
    for name in ("alpha", "beta"):
        TeamFile(TeamPaths(config_root, name)).create(description=f"team {name}", cwd=tmp_path)
    TaskBoard(TeamPaths(config_root, "beta")).create("beta's own task")
    web = WebServer(procs, team=None, env=dict(os.environ))
    browser.open(web.url)
    wait_for(
        lambda: browser.js("document.querySelectorAll('.team-link').length") == 2, "the picker"
    )
    assert text_of(browser, "#teams").startswith("alpha")
    browser.js("document.querySelectorAll('.team-link')[1].click()")
    wait_for(lambda: "beta's own task" in text_of(browser, "#board"), "beta's board")
    assert text_of(browser, "#team") == "beta"
    assert browser.js("document.querySelector('#all-teams').hidden") is False


def test_stopping_a_real_teammate_from_the_page(
    config_root: Path, tmp_path: Path, procs: Processes, browser: Chromium
) -> None:
    """Stop asks once more before it acts ("Stop: sure?"); the second click stops the member,
    which stays in the team, shown stopped."""
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    spawn_worker("ann", work)
    paths = TeamPaths(config_root, "t")
    web = WebServer(procs)
    browser.open(web.url)
    button = "document.querySelector('button[data-member=\"ann\"]')"
    wait_for(lambda: browser.js(f"!!{button}"), "ann's Stop button")
    browser.js(f"{button}.click()")
    assert browser.js(f"{button}.textContent") == "Stop: sure?"
    assert not (TeamFile(paths).entry("ann") or {}).get("swarmStopped")  # not yet
    browser.js(f"{button}.click()")
    wait_for(
        lambda: (TeamFile(paths).entry("ann") or {}).get("swarmStopped"),
        "ann to be stopped and kept in the team",
    )
    wait_for(lambda: "stopped" in text_of(browser, "#members"), "ann shown stopped on the page")
