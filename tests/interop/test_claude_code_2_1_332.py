"""What changed in Claude Code 2.1.332, with the real program (docs/interop.md).

A 2.1.332 teammate that swarm starts on ``claude-sonnet-5-5`` has the Task tools (swarm sets
``CLAUDE_CODE_ENABLE_TODO_TOOLS``: without it a model newer than Claude Code's list gets
none); its TaskGet leaves a completed blocker out, as swarm's TaskGet does, word for word; and
its delete of a task waits for the task's lock at the path swarm holds it (``<N>.json.lock``):
it retries for about 2.6 s and then, its own debug log says, deletes without the lock.

A 2.1.332 lead's retention cleanup (``sweepTeamFile``) runs about ten minutes after its first
prompt, so the test that shows it keeping a swarm team while it deletes a dead Claude Code
session team runs only with ``SWARM_INTEROP_SLOW=1``; `tests/unit/test_cc2_1_332_team_files.py`
checks the rule on the files in every run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import claude_code
import pytest
import test_interop
from claude_code import Rule, reacting
from helpers import swarm, wait_for
from messages_api import AGENT_KEY, MessagesAPI, Turn, by_agent
from test_interop import START_S, lead_inbox, start_lead, tool_results, type_into

from protocols.fs.jsonio import dumps_pretty
from protocols.fs.locks import FileGuard
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from teammate.tools.base import ToolContext
from teammate.tools.team import task_get

pytestmark = pytest.mark.interop
MODEL_5_5 = "claude-sonnet-5-5"  # newer than 2.1.332's list of models that get the Task tools
TASK_TOOLS = ("TaskCreate", "TaskGet", "TaskList", "TaskUpdate")
NO_LOCK = "[Tasks] deleting task 3 without a lock"  # 2.1.332's debug log, when it gives up

work = test_interop.work  # the fixtures, shared
team = test_interop.team
newest_claude = test_interop.newest_claude


@dataclass
class Link:
    """What swarm's TaskGet reads of a teammate's `TeamLink`."""

    name: str
    paths: TeamPaths
    board: TaskBoard
    mailbox: Mailbox
    color: str | None = None


def swarms_task_get(paths: TeamPaths, task_id: str) -> str:
    """What swarm's TaskGet tool shows a swarm teammate of this board."""
    link = Link("carol", paths, TaskBoard(paths), Mailbox(paths))
    return str(task_get.run(ToolContext(cwd=paths.root, team=link), {"taskId": task_id}))  # type: ignore[arg-type]


def tools_offered(api: MessagesAPI, agent: str) -> set[str]:
    """Every tool `agent`'s requests carried (a deferred one once ToolSearch loaded it)."""
    return {
        tool["name"]
        for body in api.requests
        if body.get(AGENT_KEY) == agent
        for tool in body.get("tools") or []
    }


def board_of_three() -> None:
    """#1 completed, #2 blocked by it, #3 to delete."""
    for args in (["write the schema"], ["test the schema", "--blocked-by", "1"], ["scratch"]):
        assert swarm("task", "add", *args).returncode == 0
    assert swarm("task", "update", "1", "--status", "completed").returncode == 0


def test_a_2_1_332_teammate_on_a_5_5_model_works_the_board_as_swarm_does(
    newest_claude: Path, team: TeamPaths, work: Path, tmux_socket: str, tmp_path: Path
) -> None:
    board_of_three()
    select = "select:" + ",".join([*TASK_TOOLS, "SendMessage"])
    steps = [
        Turn.tool("ToolSearch", {"query": select}),
        Turn.tool("TaskList", {}),
        Turn.tool("TaskGet", {"taskId": "2"}),
        Turn.tool("TaskUpdate", {"taskId": "3", "status": "deleted"}),
        Turn.tool("SendMessage", {"to": "team-lead", "message": "board done", "summary": "done"}),
    ]
    rules: list[Rule] = [("Work the board", lambda _: list(steps))]
    debug_log = tmp_path / "debug.txt"
    with MessagesAPI(by_agent({"bob": reacting(rules)})) as api:
        with FileGuard(team.task(3)):  # swarm holds #3's lock while Claude Code deletes it
            spawn(api, newest_claude, work, debug_log)
            wait_for(lambda: NO_LOCK in read(debug_log), "2.1.332 giving up on the lock", START_S)
        wait_for(lambda: any(m["text"] == "board done" for m in lead_inbox()), "report", START_S)
        _, listed, got, deleted = tool_results(api, "bob")[:4]

    assert set(TASK_TOOLS) <= tools_offered(api, "bob")  # swarm's CLAUDE_CODE_ENABLE_TODO_TOOLS
    assert "#2 [pending] test the schema\n" in listed + "\n"  # #1 is completed: not listed
    ours = swarms_task_get(team, "2")  # swarm's TaskGet says the same (#1 left out)
    assert ours == "Task #2: test the schema\nStatus: pending\nDescription: "
    assert got == ours.rstrip()  # (`tool_results` strips what ends Claude Code's)
    assert json.loads(team.task(2).read_text())["blockedBy"] == ["1"]  # the file keeps it
    assert deleted.startswith("Updated task #3") and not team.task(3).exists()
    assert TaskBoard(team).create("next").id == "4"
    assert swarm("shutdown", "bob", "--force", "--wait", "0").returncode == 0


def spawn(api: MessagesAPI, claude: Path, work: Path, debug_log: Path) -> None:
    """``swarm spawn bob --teammate-command claude`` on the 5.5 model, its debug log kept."""
    command = f"{claude_code.command(claude)} --debug-file {debug_log}"
    spawned = swarm(
        "spawn", "bob", "-p", "Work the board.", "--model", MODEL_5_5,
        "--teammate-command", command, "--backend", "tmux", "--permission-mode", "acceptEdits",
        "--cwd", str(work),
        env={"ANTHROPIC_BASE_URL": api.url_for("bob"), "ANTHROPIC_API_KEY": claude_code.API_KEY},
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr


def read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


# the retention sweep: about ten minutes


@pytest.fixture
def slow() -> Iterator[None]:
    if os.environ.get("SWARM_INTEROP_SLOW") != "1":
        pytest.skip("waits ten minutes for Claude Code's retention sweep: SWARM_INTEROP_SLOW=1")
    yield


OLD_S = 40 * 86_400  # past cleanupPeriodDays' default, 30 days


def age(directory: Path) -> None:
    then = time.time() - OLD_S
    for path in [*directory.rglob("*"), directory]:
        os.utime(path, (then, then), follow_symlinks=False)


def dead_session_team(root: Path, pid_space: str, work: Path) -> Path:
    """A session team a 2.1.332 lead left when it died, its teammates in its process: swept."""
    name = "session-deadbeef"
    lead: dict[str, Any] = {
        "agentId": f"team-lead@{name}", "name": "team-lead", "agentType": "team-lead",
        "joinedAt": 1, "tmuxPaneId": "leader", "cwd": str(work), "subscriptions": [],
        "backendType": "in-process",
    }  # fmt: skip
    config = {
        "name": name, "createdAt": 1, "leadAgentId": f"team-lead@{name}",
        "leadSessionId": "deadbeef-0000-4000-8000-000000000000",
        "leadProcess": {"pid": 4_000_000, "pidSpace": pid_space, "claimedAt": 1},
        "members": [lead, {**lead, "agentId": f"w@{name}", "name": "w"}],
    }  # fmt: skip
    directory = root / "teams" / name
    directory.mkdir()
    (directory / "config.json").write_text(dumps_pretty(config))
    age(directory)
    return directory


def test_a_2_1_332_leads_sweep_deletes_a_dead_session_team_and_keeps_swarms(
    slow: None, newest_claude: Path, config_root: Path, work: Path, tmux_socket: str
) -> None:
    assert swarm("team", "create", "kept", "--cwd", str(work), team="kept").returncode == 0
    kept = TeamPaths(config_root, "kept")
    TeamFile(kept).add_member("alice", cwd=work, backend_type="tmux")
    rules: list[Rule] = [("Hello", lambda _: Turn.text("Hello."))]
    with MessagesAPI(by_agent({"team-lead": reacting(rules)})) as api:
        start_lead(newest_claude, api, config_root, work, tmux_socket)
        teams = config_root / "teams"
        live = wait_for(lambda: list(teams.glob("session-*/config.json")), "the lead's team")
        pid_space = json.loads(live[0].read_text())["leadProcess"]["pidSpace"]
        dead = dead_session_team(config_root, pid_space, work)
        age(kept.team_dir)
        before = kept.config.read_bytes()
        type_into(tmux_socket, "lead", "Hello there.")  # the sweep starts from this prompt
        wait_for(lambda: not (dead / "config.json").exists(), "the sweep", 720)
    assert kept.config.read_bytes() == before  # swarm's team: kept, untouched
    assert [m.name for m in TeamFile(kept).load().members] == ["team-lead", "alice"]
