"""Screenshots of `swarm web` for the README: a team of two real shell teammates working a task
board (one of them waiting for the lead's approval), the page in a real headless Chromium
(`chromium`, skipped without it) at a desktop's width (1280x800) and a phone's (390x844,
emulated over DevTools), each saved as a PNG whose width is checked in its header.

The PNGs go to docs/images/web-desktop.png and docs/images/web-phone.png only when
``SWARM_SCREENSHOTS=1`` (``SWARM_SCREENSHOTS=1 .venv/bin/pytest
tests/processes/test_web_screenshots.py``); otherwise into the test's temporary directory."""

from __future__ import annotations

import functools
import os
import struct
from pathlib import Path

from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, teammate_argv, wait_for
from web_server import WebServer

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = NEEDS_CHROMIUM
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
SIZES = {"desktop": (1280, 800, False), "phone": (390, 844, True)}


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (after checking the signature and chunk)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: no IHDR first"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def laid_out(browser: Chromium, width: int, phone: bool) -> bool:
    """Whether the page is `width` wide, its board's columns stacked if and only if `phone`."""
    board = "getComputedStyle(document.querySelector('#board')).gridTemplateColumns"
    stacked = browser.js(f"{board}.split(' ').length") == 1
    return bool(browser.js("window.innerWidth") == width and stacked == phone)


def working_team(team: TeamFile, procs: Processes, work: Path) -> TaskBoard:
    """alice and bob (shell teammates) on a board: two commands done, one waiting for the
    lead's approval (``rm -rf build``), one blocked by it, two more for carol (not running)."""
    (work / "build").mkdir()
    board = TaskBoard(team.paths)
    board.create("Build the package", metadata={"command": "echo built"})
    board.create("Run the unit tests", metadata={"command": "echo 128 passed"}, owner="alice")
    board.create("Clean the build directory", metadata={"command": "rm -rf build"})
    board.create("Publish the release", metadata={"command": "echo published"}, blocked_by=["3"])
    board.create("Write the release notes", owner="carol")
    board.create("Update the changelog", owner="carol")
    Mailbox(team.paths).send("team-lead", "The build is green on main.", sender="bob")
    for name in ("alice", "bob"):
        procs.start(teammate_argv(name))
    wait_for(
        lambda: all(board.require(t).status == "completed" for t in ("1", "2")),
        "tasks 1 and 2 to be completed",
    )
    return board


def test_screenshots_of_the_page(
    team: TeamFile, procs: Processes, tmp_path: Path, browser: Chromium
) -> None:
    working_team(team, procs, tmp_path)
    out = IMAGES if os.environ.get("SWARM_SCREENSHOTS") == "1" else tmp_path
    web = WebServer(procs)
    width, height, mobile = SIZES["desktop"]
    browser.open(web.url, width=width, height=height, mobile=mobile)
    browser.call("Emulation.setScrollbarsHidden", {"hidden": True})  # the shot: the full width
    wait_for(lambda: browser.js("document.querySelectorAll('.request').length") == 1, "a request")
    wait_for(
        lambda: browser.js("document.querySelectorAll('#members tbody tr').length") >= 3,
        "the members",
    )
    wait_for(lambda: browser.js("document.querySelector('#link').textContent") == "live", "live")
    assert "rm -rf build" in browser.js("document.querySelector('.request pre').textContent")
    for name, (width, height, mobile) in SIZES.items():
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
        )
        wait_for(functools.partial(laid_out, browser, width, mobile), f"the page as a {name}")
        path = out / f"web-{name}.png"
        browser.screenshot(path)
        shot_width, shot_height = png_size(path)
        assert shot_width == width, (path, shot_width)
        assert shot_height >= height
