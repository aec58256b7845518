"""Skills in a real teammate process (the real SDK against the test suite's Messages API
server): only the catalogue is in the system prompt, a skill's body arrives as the Skill tool's
result when the model loads it, and a ``context: fork`` skill runs in a sub-agent whose answer
is the tool's result."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, Processes, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols.mailbox import Mailbox
from protocols.messages import IdleNotification, ShutdownRequest
from protocols.team import TeamFile

DEPLOY = """---
name: deploy
description: Deploy the site
when_to_use: when asked to deploy
---
Deploy checklist: run the smoke test first, then announce «$ARGUMENTS».
"""
AUDIT = """---
name: audit
description: Audit the dependencies
context: fork
agent: Explore
---
Audit every dependency and report the risky ones.
"""


@pytest.fixture
def processes(workdir: Path) -> Iterator[Processes]:
    running = Processes(workdir)
    yield running
    running.close()


def test_a_skill_loads_on_demand_and_a_fork_skill_runs_in_a_sub_agent(
    team: TeamFile, workdir: Path, processes: Processes
) -> None:
    for name, text in (("deploy", DEPLOY), ("audit", AUDIT)):
        (workdir / ".claude" / "skills" / name).mkdir(parents=True)
        (workdir / ".claude" / "skills" / name / "SKILL.md").write_text(text)
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        if "You are a sub-agent" in json.dumps(body.get("system")):
            return Turn.text("risky: left-pad")
        results = [
            b for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"
        ]  # fmt: skip
        if not results:
            return Turn.tool("Skill", {"skill": "deploy", "args": "v2 'now' $(x)"})
        if len(results) == 1:
            return Turn.tool("Skill", {"skill": "audit"})
        return Turn.text("Deployed and audited.")

    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with MessagesAPI(play) as api:
        environ.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        alice = processes.start(teammate_argv("alice", model="sonnet"), environ)
        Mailbox(team.paths).send("alice", "Deploy v2.", sender="team-lead", summary="go")

        def idle() -> bool:
            entries = Mailbox(team.paths).read_all("team-lead")
            return any(isinstance(e.structured(), IdleNotification) for e in entries)

        wait_for(idle, "alice to go idle")
        stop = ShutdownRequest(
            requestId="shutdown-1@alice", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
        )
        Mailbox(team.paths).send("alice", stop, sender="team-lead")
        alice.communicate(timeout=DEADLINE_S)

    first = seen[0]
    system = json.dumps(first["system"], ensure_ascii=False)
    assert "- deploy: Deploy the site Use when: when asked to deploy" in system
    assert "- audit: Audit the dependencies" in system
    assert "Deploy checklist" not in system  # the body is loaded on demand only
    assert "Skill" in {t["name"] for t in first["tools"]}
    after = seen[1]["messages"][-1]["content"][0]
    assert after["type"] == "tool_result"
    assert "Launching skill: deploy" in after["content"]
    assert (
        "Deploy checklist: run the smoke test first, then announce «v2 'now' $(x)»."
        in after["content"]
    )
    sub = next(b for b in seen if "You are a sub-agent" in json.dumps(b.get("system")))
    assert "Audit every dependency" in json.dumps(sub["messages"])
    assert sub["model"] == "claude-haiku-5-5"  # the skill's agent: Explore
    forked = next(
        b for b in seen if "risky: left-pad" in json.dumps(b["messages"]) and b is not sub
    )
    assert "Audit every dependency" not in json.dumps(forked["messages"])  # only its answer
