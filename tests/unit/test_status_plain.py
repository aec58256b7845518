"""``swarm status`` reads a team without pydantic (`protocols.records.plain`: members, status files, task
files, inbox entries and protocol messages that are plainly what their models take) and shows
exactly what the models show: the text and the JSON of a busy team (control characters,
sub-agents, permission, sandbox and plan requests, answered ones) with hostile files in it
(wrong types the models coerce or refuse, a file that is no JSON, a link, an unknown state) are
the same with the shapes as with every record handed to its model. And the shapes are what a
look at such a team really uses: ``swarm status`` loads no pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dashboard_team import build

from protocols.clock import iso_from_ms
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import permission_response
from protocols.member.status import AgentStatus, SubAgentStatus, write_status
from protocols.messages.models import (
    IdleNotification,
    PlanApprovalRequest,
    SandboxPermissionRequest,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.records.plain import Shape
from protocols.tasks.board import TaskBoard
from swarm.views.snapshot import clear_cache, snapshot, to_json
from swarm.views.table import render

NOW = 1_800_000_000_000


@pytest.fixture
def team(config_root: Path) -> TeamPaths:
    """`dashboard_team` with requests from alice, bob and carol (bob's answered), and files
    the shapes leave to the models."""
    paths = build(config_root, requests=("alice", "bob", "carol-the-reviewer-with-a-long-name"))
    mailbox = Mailbox(paths)
    bob_asked = next(
        json.loads(e.text)["request_id"]
        for e in mailbox.peek_all(LEAD_NAME)
        if e.from_ == "bob" and "permission_request" in e.text
    )
    answer = permission_response(bob_asked, approved=True)
    mailbox.send("bob", answer, sender=LEAD_NAME)
    at = iso_from_ms(NOW - 90_000)
    mailbox.send(
        LEAD_NAME,
        PlanApprovalRequest.model_validate(
            {
                "from": "dmitri",
                "timestamp": at,
                "planFilePath": "/p.md",
                "planContent": "1. \x1b[31mrm\u202e\n2. ship",
                "requestId": f"plan_approval-{NOW}@dmitri@t",
            }
        ),
        sender="dmitri",
    )
    mailbox.send(
        LEAD_NAME,
        SandboxPermissionRequest.model_validate(
            {
                "requestId": f"sandbox-{NOW}-abcdefg",
                "workerId": "eve@t",
                "workerName": "eve",
                "hostPattern": {"host": "example.com", "port": None},
                "createdAt": NOW - 5_000,
            }
        ),
        sender="eve",
    )
    mailbox.send(
        LEAD_NAME,
        IdleNotification.model_validate({"from": "frank", "timestamp": at, "result": "x"}),
        sender="frank",
    )
    inbox = paths.inbox(LEAD_NAME)
    items = json.loads(inbox.read_text())
    items += [
        # what the models coerce (a 1 for true) or refuse (a task id that is a number)
        {"from": "eve", "text": "coerced \x07", "timestamp": at, "read": 1},
        {
            "from": "frank",
            "text": json.dumps(
                {
                    "type": "idle_notification",
                    "from": "frank",
                    "timestamp": at,
                    "completedTaskId": 3,
                }
            ),
            "timestamp": at,
        },
        {"from": "frank", "text": 7, "timestamp": at},  # no message at all
        ["not", "an", "entry"],
    ]
    inbox.write_text(json.dumps(items, indent=2))
    write_status(
        paths,
        AgentStatus(
            name="bob",
            model="claude-opus-4-1",
            state="waiting",
            usage={"input_tokens": 5, "output_tokens": 7},
            budget={"maxCostUsd": 2.0, "costUsd": 0.5, "tokens": 12},
            mcpServers=[{"name": "fs", "state": "failed", "error": "boom\x1b[2J"}],
            subagents=[
                SubAgentStatus(agentId="a1", agentType="Explore", description="find \u202etests"),
                SubAgentStatus(agentId="a2", agentType="Plan", name="p", state="completed"),
            ],
        ),
    )
    agents = paths.agents_dir
    coerced = json.loads((agents / "dmitri.status.json").read_text())
    coerced["usage"] = {"input_tokens": "5", "output_tokens": 2.0}  # the model makes them ints
    (agents / "dmitri.status.json").write_text(json.dumps(coerced))
    (agents / "eve.status.json").write_text("{not json")
    (agents / "frank.status.json").unlink()
    (agents / "frank.status.json").symlink_to(agents / "alice.status.json")
    odd = json.loads((agents / "alice.status.json").read_text())
    odd["state"] = "dancing"  # no state the model knows: the whole file is refused
    (agents / "carol-the-reviewer-with-a-long-name.status.json").write_text(json.dumps(odd))
    board = TaskBoard(paths)
    board.create("blocked by a failure", blocked_by=["41"])
    board.fail("42", "it broke \x1b[2J", by="bob")
    board.create("hidden", metadata={"_internal": True})
    paths.task("70").write_text(json.dumps({"id": "70", "subject": 5, "description": ""}))
    paths.task("71").write_text(
        json.dumps({"id": "71", "subject": "null", "description": "", "activeForm": None})
    )
    return paths


def shown(paths: TeamPaths) -> tuple[str, str]:
    """What ``swarm status`` and ``swarm status --json`` show, every file read again."""
    clear_cache()
    paths.task_summary.unlink(missing_ok=True)
    view = snapshot(paths, now_ms=NOW, once=True)
    return render(view), json.dumps(to_json(view), ensure_ascii=False)


def test_the_shapes_show_what_the_models_show(
    team: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = shown(team)
    monkeypatch.setattr(Shape, "accepts", lambda self, raw: False)  # every record to its model
    modelled = shown(team)
    assert plain[0] == modelled[0]
    assert plain[1] == modelled[1]
    text = plain[0]
    waiting = text.split("requests waiting (4)\n")[1].split("\n\n")[0]
    asks = [line for line in waiting.splitlines() if not line.startswith("    ")]  # not "why"
    assert [line.split()[1] for line in asks] == [
        "alice",
        "carol-the-reviewer-with-a-long-name",
        "dmitri",
        "eve",
    ]  # bob's was answered
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b[31mrm\\u202e" in text
    assert 'frank: {"type": "idle_notification"' in text  # a number for a task id: refused
    assert "eve: coerced \\x07" in text  # read: 1, which the model takes for true
    assert "#42 [failed]" in text and "#70" not in text and "#71 [pending] null" in text
    assert "  5 (0) / 2 " in text  # dmitri's usage, "5" and 2.0 made ints by the model


@pytest.mark.parametrize("args", [["status"], ["status", "--json"]])
def test_swarm_status_loads_no_pydantic(team: TeamPaths, args: list[str]) -> None:
    program = (
        "import io, sys\n"
        "from swarm.cli.main import main\n"
        "sys.stdout = io.StringIO()\n"
        "code = main(sys.argv[1:])\n"
        "assert code == 0 and 'alice' in sys.stdout.getvalue(), code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core'))\n"
        "assert not loaded, loaded\n"
    )
    plain_team(team)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(team.root), "SWARM_TEAM": "t"}
    result = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr


def plain_team(paths: TeamPaths) -> None:
    """Take out of `team` what only a model can read or refuse (a look at it loads pydantic)."""
    inbox = paths.inbox(LEAD_NAME)
    items = [i for i in json.loads(inbox.read_text()) if isinstance(i, dict)]
    items = [i for i in items if i.get("read") != 1 and isinstance(i.get("text"), str)]
    items = [i for i in items if '"completedTaskId": 3' not in i["text"]]
    inbox.write_text(json.dumps(items))
    (paths.agents_dir / "dmitri.status.json").unlink()
    (paths.agents_dir / "carol-the-reviewer-with-a-long-name.status.json").unlink()
    paths.task("70").unlink()  # invalid: the model says why (once; the summary keeps it)
    paths.task("71").unlink()
