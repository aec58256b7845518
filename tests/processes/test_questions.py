"""A teammate's questions and plan mode, with a real teammate process and the `swarm` command:
AskUserQuestion reaches the lead as a request `swarm permissions` shows with its options,
`swarm approve` refuses it, `swarm answer` answers it (by number, label or own words) and the
model reads the answers; EnterPlanMode keeps a teammate from changing anything until its plan
is approved."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import DEADLINE_S, swarm, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.team.file import TeamFile

Start = Callable[..., subprocess.Popen[str]]
QUESTIONS = [
    {
        "question": "Which database should we use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "a server"},
            {"label": "SQLite", "description": "a file"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which checks do you want?",
        "header": "Checks",
        "options": [
            {"label": "Tests", "description": "pytest"},
            {"label": "Lint", "description": "ruff"},
            {"label": "Types", "description": "mypy"},
        ],
        "multiSelect": True,
    },
]


def stop(team: TeamFile, proc: subprocess.Popen[str]) -> None:
    request = ShutdownRequest(
        requestId="shutdown-1@alice", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send("alice", request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output[-3000:]


def pending() -> list[dict[str, Any]]:
    return json.loads(swarm("permissions", "--json").stdout)


def last_result(body: dict[str, Any]) -> str:
    (result,) = [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    return str(result["content"])


def test_questions_reach_the_lead_and_the_answers_reach_the_model(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [Turn.tool("AskUserQuestion", {"questions": QUESTIONS}), Turn.text("Noted.")]
    with MessagesAPI(script) as api:
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Set up the project.", sender="team-lead")
        (request,) = wait_for(pending, "the questions to reach the lead")
        assert request["tool"] == "AskUserQuestion"
        assert request["input"]["questions"][0]["question"] == "Which database should we use?"
        shown = swarm("status").stdout
        assert "AskUserQuestion: 2 questions: Which database should we use?" in shown
        refused = swarm("approve", request["id"])
        assert refused.returncode == 1 and f"swarm answer {request['id']}" in refused.stderr
        wrong = swarm("answer", request["id"], "2")
        assert wrong.returncode == 1 and "asks 2 question(s)" in wrong.stderr
        done = swarm("answer", request["id"], "2", "Tests,3", "--json")
        assert done.returncode == 0, done.stderr
        wait_for(lambda: len(api.requests) == 2, "the answers to reach the model")
        stop(team, proc)
    assert json.loads(done.stdout)["answers"] == {
        "Which database should we use?": "SQLite",
        "Which checks do you want?": "Tests, Types",
    }
    told = last_result(api.requests[1])
    assert '"Which database should we use?": SQLite' in told
    assert '"Which checks do you want?": Tests, Types' in told


def test_plan_mode_keeps_a_teammate_from_changing_anything_until_approved(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [
        Turn.tool("EnterPlanMode", {}),
        Turn.tool("Write", {"file_path": "notes.md", "content": "too early"}),
        Turn.tool("ExitPlanMode", {"plan": "1. write notes.md"}),
        Turn.tool("Write", {"file_path": "notes.md", "content": "planned"}),
        Turn.text("Done."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Write notes.md, with a plan first.", sender="team-lead")
        (plan,) = wait_for(pending, "the plan to reach the lead")
        assert plan["kind"] == "plan_approval_request"
        assert swarm("approve", plan["id"]).returncode == 0
        wait_for(lambda: len(api.requests) == 5, "the work to end")
        stop(team, proc)
    assert "plan mode" in last_result(api.requests[1])
    assert "plan mode" in last_result(api.requests[2]).lower()  # the Write was refused
    assert (workdir / "notes.md").read_text() == "planned"
