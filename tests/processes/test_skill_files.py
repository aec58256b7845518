"""Skills in a real teammate process (the real SDK against the test suite's Messages API
server): only the catalogue is in the system prompt, a skill's body arrives as the Skill tool's
result when the model loads it, and a ``context: fork`` skill runs in a sub-agent whose answer
is the tool's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import Processes, claude_env, stop_teammate, teammate_argv, wait_for, went_idle
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.team.file import TeamFile

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


def test_a_skill_loads_on_demand_and_a_fork_skill_runs_in_a_sub_agent(
    team: TeamFile, workdir: Path, workers: Processes
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

    with MessagesAPI(play) as api:
        alice = workers.start(teammate_argv("alice", model="sonnet"), claude_env(api.url))
        Mailbox(team.paths).send("alice", "Deploy v2.", sender="team-lead", summary="go")
        wait_for(lambda: went_idle(team.paths, "alice"), "alice to go idle")
        stop_teammate(team.paths, "alice", alice)

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
