"""`swarm watch` in a real terminal: a tmux pane on its own server, read with capture-pane. A
scripted Claude teammate asks to write a file; the dashboard shows the members, the board and
the request; pressing `a` in the dashboard approves it and the teammate goes on."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import new_session, screen, swarm, wait_for

from protocols.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks import TaskBoard
from protocols.team import TeamFile

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


def on_screen(socket: str) -> str:
    return screen(socket, "watch")


def row(shown: str, *words: str) -> str:
    """The first line of the screen holding every one of `words`."""
    return next((line for line in shown.splitlines() if all(w in line for w in words)), "")


def keys(socket: str, *typed: str) -> None:
    for key in typed:
        literal = [] if key == "Enter" else ["-l"]
        subprocess.run(
            ["tmux", "-L", socket, "send-keys", "-t", "watch", *literal, key], check=True
        )


def test_the_dashboard_shows_the_team_and_approves_a_request(
    tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    TaskBoard(paths).create("polish the docs", "later")
    TeamFile(paths).add_member("bob", cwd=work)  # a member with no process: only its inbox
    script = tmp_path / "turns.yaml"
    script.write_text(
        '- tool: Write\n  input: {file_path: notes.md, content: "# notes\\n"}\n'
        "- tool: SendMessage\n  input: {to: team-lead, message: notes.md written, summary: done}\n"
        "- text: Done.\n"
    )
    spawned = swarm(
        "spawn",
        "alice",
        "-p",
        "Write notes.md",
        "--script",
        str(script),
        "--backend",
        "subprocess",
        "--cwd",
        str(work),
    )
    assert spawned.returncode == 0, spawned.stderr
    try:
        command = shlex.join([sys.executable, "-m", "swarm", "watch", "--team", "t"])
        env = f"CLAUDE_CONFIG_DIR={shlex.quote(str(config_root))} COLUMNS=160 LINES=60"
        new_session(tmux_socket, "watch", f"env {env} {command}", (160, 60))
        # one capture holding the whole frame (one taken during a redraw may hold only part)
        whole = ("alice", "Write", "team t", "polish the docs", "waiting for you")
        shown = wait_for(
            lambda: (text := on_screen(tmux_socket)) and all(w in text for w in whole) and text,
            "the request on screen",
            timeout=30,
        )
        assert "team t" in shown and "polish the docs" in shown and "waiting for you" in shown
        alice_row = row(shown, "alice", "│")
        assert "waiting for approval" in alice_row and "Write notes.md" in alice_row, alice_row
        request_row = row(shown, "perm-", "alice")
        assert request_row.startswith("│ >") and "Write" in request_row, request_row
        assert not (work / "notes.md").exists()
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "watch", "a"], check=True)
        wait_for(lambda: (work / "notes.md").exists(), "the approved write", timeout=30)
        wait_for(
            lambda: "notes.md written" in on_screen(tmux_socket),
            "alice's message on screen",
            timeout=30,
        )
        assert "approved perm-" in on_screen(tmux_socket)
        wait_for(
            lambda: "idle" in row(on_screen(tmux_socket), "alice", "│"), "alice idle", timeout=30
        )
        assert "nothing is waiting" in on_screen(tmux_socket)

        # s: a message typed in the dashboard reaches bob's inbox (unicode and shell characters kept)
        keys(tmux_socket, "s", "bob", "Enter", "héllo $(whoami) 'quoted'", "Enter")
        wait_for(lambda: "sent to bob" in on_screen(tmux_socket), "the message sent", timeout=30)
        (entry,) = Mailbox(paths).read_unread("bob")
        assert (entry.from_, entry.text) == ("team-lead", "héllo $(whoami) 'quoted'")
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "watch", "q"], check=True)
        assert swarm("shutdown", "alice").returncode == 0
    finally:  # a failed check must not leave alice running
        swarm("shutdown", "alice", "--force", "--wait", "5")
