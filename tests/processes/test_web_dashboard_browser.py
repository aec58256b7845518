"""`swarm web` in a real headless Chromium (Debian's `chromium`, installed by
.ci/install-chromium; skipped without it), driven by Playwright (`chromium`): the
page opens its event stream and renders the team, a hostile task subject and message as text,
a real shell teammate's request with its buttons; clicking Approve lets the teammate go on; a
second page that answers after it is told; an Edit's diff, a plan, a failed task and a running
sub-agent shown as text; without the token the page shows nothing."""

from __future__ import annotations

from pathlib import Path

from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, teammate_argv, wait_for
from web_server import WebServer

from protocols.clock import now_iso
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.member.status import AgentStatus, SubAgentStatus, write_status
from protocols.messages.models import PlanApprovalRequest
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


def test_an_edit_a_plan_a_failure_and_a_sub_agent_show_as_text(
    team: TeamFile, procs: Processes, tmp_path: Path, browser: Chromium
) -> None:
    """What a person approves is on the page: an Edit's diff of a real file, a plan's text; and
    so are a failed task's reason and a member's running sub-agent, hostile text as text."""
    target = tmp_path / "app.py"  # the members' directory (the team fixture's)
    target.write_text(f"x = 1\n# {HOSTILE}\n")
    mailbox = Mailbox(team.paths)
    edit = {"file_path": str(target), "old_string": "x = 1", "new_string": f"x = 2  # {HOSTILE}"}
    request_permission(
        mailbox,
        worker="alice",
        tool_name="Edit",
        tool_use_id="toolu_edit",
        description="edit app.py",
        input=edit,
    )
    plan = PlanApprovalRequest(
        from_="bob",
        timestamp=now_iso(),
        planFilePath="/plan.md",
        planContent=f"1. read the code\n2. {HOSTILE}",
        requestId="plan_approval-1@bob@t",
    )
    mailbox.send("team-lead", plan, sender="bob")
    board = TaskBoard(team.paths)
    failed = board.create("build it")
    board.fail(failed.id, f"exit code 2: {HOSTILE}", by="carol")
    explore = SubAgentStatus(
        agentId="a1111111111111111",
        agentType="Explore",
        description=f"find {HOSTILE}",
        activity="Grep config",
    )
    write_status(team.paths, AgentStatus(name="carol", model="sonnet", subagents=[explore]))
    web = WebServer(procs)
    browser.open(web.url)
    wait_for(lambda: browser.js("document.querySelectorAll('.request').length") == 2, "requests")
    shown = browser.js("[...document.querySelectorAll('.request pre')].map(p => p.textContent)")
    diff = next(text for text in shown if "app.py" in text)
    assert "-x = 1" in diff and f"+x = 2  # {HOSTILE}" in diff
    assert any(f"1. read the code\n2. {HOSTILE}" in text for text in shown)
    board_text = browser.js("document.querySelector('#board').textContent")
    assert f"#{failed.id} build it" in board_text and f"exit code 2: {HOSTILE}" in board_text
    members = browser.js("document.querySelector('#members').textContent")
    assert "carol \u203a Explore" in members and f"find {HOSTILE}" in members
    assert browser.js("document.querySelectorAll('main img, main b').length") == 0
    assert browser.js("document.title") == "swarm · t"
