"""swarm and a real Claude Code 2.1.88 in one team (docs/interop.md).

Claude Code is installed from the npm registry (`claude_code.install`) and runs offline in tmux
panes on the test's own tmux server, its model the local Messages API server playing scripted
turns. Each test checks one direction of the file format with the real peer: a Claude Code
teammate led by swarm (messages, idle notifications, shutdown, tasks), and locks shared by both
writers. Run alone with ``make test-interop``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claude_code
import pytest
from claude_code import MODEL, Rule, approve_shutdown, reacting
from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn, by_agent

from protocols.paths import TeamPaths
from protocols.team import TeamFile

pytestmark = pytest.mark.interop
START_S = 60.0  # Claude Code's first start in a fresh config root takes a few seconds


@pytest.fixture(scope="session")
def claude() -> Path:
    return claude_code.install()


@pytest.fixture
def work(tmp_path: Path, config_root: Path) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    claude_code.trust(config_root, directory)
    return directory


def swarm_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "SWARM_TEAM": "t", **extra}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``swarm ARGS`` with extra environment (`swarm` in helpers takes none)."""
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=swarm_env(**env),
        check=False,
    )


def pane_ids(socket: str) -> list[str]:
    listed = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_id}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return listed.stdout.split()


def last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def lead_inbox() -> list[dict[str, Any]]:
    result = swarm("inbox", "team-lead", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def spawn_claude_code(name: str, api: MessagesAPI, claude: Path, work: Path, prompt: str) -> None:
    """``swarm spawn NAME --teammate-command claude``: a Claude Code teammate in a tmux pane."""
    spawned = run(
        "spawn",
        name,
        "-p",
        prompt,
        "--model",
        MODEL,
        "--teammate-command",
        claude_code.command(claude),
        "--backend",
        "tmux",
        "--permission-mode",
        "acceptEdits",
        "--cwd",
        str(work),
        ANTHROPIC_BASE_URL=api.url_for(name),
        ANTHROPIC_API_KEY=claude_code.API_KEY,
    )
    assert spawned.returncode == 0, spawned.stderr


@pytest.fixture
def team(work: Path) -> Iterator[TeamPaths]:
    assert swarm("team", "create", "t", "--cwd", str(work)).returncode == 0
    yield TeamPaths.for_team("t")


def test_a_claude_code_teammate_hears_swarm_and_answers(
    claude: Path, team: TeamPaths, work: Path, tmux_socket: str
) -> None:
    seen: list[str] = []
    rules: list[Rule] = [
        (
            "Say hello",
            lambda _: Turn.tool(
                "SendMessage",
                {"to": "team-lead", "message": "hello from Claude Code", "summary": "hello"},
            ),
        ),
        (
            "Repeat after me:",
            lambda text: Turn.tool(
                "SendMessage",
                {
                    "to": "team-lead",
                    "message": text.split("Repeat after me:", 1)[1].strip(),
                    "summary": "repeated",
                },
            ),
        ),
    ]
    with MessagesAPI(by_agent({"alice": reacting(rules, seen)})) as api:
        spawn_claude_code("alice", api, claude, work, "Say hello to the lead.")
        member = TeamFile(team).load().member("alice")
        assert member is not None and member.tmuxPaneId.startswith("%")
        assert member.tmuxPaneId in pane_ids(tmux_socket)

        def said(text: str) -> dict[str, Any] | None:
            return next((m for m in lead_inbox() if m["text"] == text), None)

        hello = wait_for(lambda: said("hello from Claude Code"), "alice's hello", START_S)
        assert (hello["from"], hello["type"], hello["summary"]) == ("alice", "message", "hello")
        assert hello["color"] == member.color
        idle = wait_for(
            lambda: [m for m in lead_inbox() if m["type"] == "idle_notification"],
            "alice's idle notification",
            START_S,
        )
        notification = json.loads(idle[0]["text"])
        assert (notification["from"], notification["idleReason"]) == ("alice", "available")
        assert seen[0] == "Say hello to the lead."

        # swarm send: the text reaches the model inside <teammate-message>, byte for byte
        tricky = 'Repeat after me: it\'s "quoted" $(whoami) `id` ünïcode ✓\nsecond line'
        assert swarm("send", "alice", tricky, "--summary", "a test").returncode == 0
        echoed = wait_for(
            lambda: said('it\'s "quoted" $(whoami) `id` ünïcode ✓\nsecond line'),
            "alice repeating the message",
            START_S,
        )
        assert echoed["from"] == "alice"
        assert tricky in seen
        wrapped = f'<teammate-message teammate_id="team-lead" summary="a test">\n{tricky}\n'
        assert any(wrapped in last_user_text(r) for r in api.requests), "the wrapped message"
        # it marked both of swarm's messages read, and kept swarm's own keys
        entries = json.loads(team.inbox("alice").read_text())
        wait_for(
            lambda: all(e["read"] for e in json.loads(team.inbox("alice").read_text())),
            "alice's inbox all read",
        )
        assert all("id" in e for e in entries)

        # swarm shutdown: Claude Code approves, swarm removes it and its pane
        rules.insert(0, ('"type":"shutdown_request"', approve_shutdown))
        stopped = swarm("shutdown", "alice", "--reason", "work is done", "--wait", "60")
        assert stopped.returncode == 0, stopped.stderr
        assert "approved" in stopped.stdout
        assert TeamFile(team).load().member("alice") is None
        wait_for(lambda: member.tmuxPaneId not in pane_ids(tmux_socket), "alice's pane gone")
        approved = next(m for m in lead_inbox() if m["type"] == "shutdown_approved")
        body = json.loads(approved["text"])
        # paneId and backendType come from Claude Code reading config.json, which it also
        # rewrites in place (isActive) at about the same moment: it sometimes reads its own
        # half-written file and leaves them out. swarm knows the pane from the member record.
        assert body["from"] == "alice"
        assert body.get("paneId", member.tmuxPaneId) == member.tmuxPaneId
        assert body.get("backendType", "tmux") == "tmux"
