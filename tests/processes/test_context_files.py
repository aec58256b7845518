"""CLAUDE.md and agent memory in real teammate processes (the real SDK against the test suite's
Messages API server): a teammate's system prompt carries the project's CLAUDE.md with what it
imports, an Explore sub-agent's does not; a teammate whose definition has ``memory: project``
writes its MEMORY.md without asking the lead, and the next teammate of that type starts with
it in its system prompt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from helpers import Processes, claude_env, stop_teammate, teammate_argv, wait_for, went_idle
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import PermissionRequest
from protocols.team.file import TeamFile

KEEPER = """---
name: keeper
description: Keeps notes between runs
memory: project
---
You keep notes.
"""


def start(workers: Processes, name: str, api: MessagesAPI) -> subprocess.Popen[str]:
    argv = teammate_argv(name, "--agent-type", "keeper", model="sonnet")
    return workers.start(argv, claude_env(api.url))


def system(body: dict[str, Any]) -> str:
    return json.dumps(body.get("system"), ensure_ascii=False)


def test_claude_md_with_imports_and_memory_kept_between_runs(
    team: TeamFile, workdir: Path, workers: Processes
) -> None:
    (workdir / "CLAUDE.md").write_text("Project rule: answer in French.\n@docs/names.md\n")
    (workdir / "docs").mkdir()
    (workdir / "docs" / "names.md").write_text("Call the database «Lumière» $(not a command)\n")
    (workdir / ".claude" / "agents").mkdir(parents=True)
    (workdir / ".claude" / "agents" / "keeper.md").write_text(KEEPER)
    memory = workdir / ".claude" / "agent-memory" / "keeper" / "MEMORY.md"
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        if "You are a sub-agent" in system(body):
            return Turn.text("nothing found")
        results = [
            b for m in body["messages"] for b in m["content"]
            if isinstance(m["content"], list) and b.get("type") == "tool_result"
        ]  # fmt: skip
        if "second run" in json.dumps(body["messages"]):
            return Turn.text("I remember.")
        if not results:
            return Turn.tool(
                "Agent", {"description": "look", "prompt": "Look.", "subagent_type": "Explore"}
            )
        if len(results) == 1:
            return Turn.tool(
                "Write", {"file_path": str(memory), "content": "- the user likes tea\n"}
            )
        return Turn.text("Noted.")

    with MessagesAPI(play) as api:
        alice = start(workers, "alice", api)
        Mailbox(team.paths).send("alice", "first run", sender="team-lead", summary="go")
        wait_for(lambda: went_idle(team.paths, "alice"), "alice to go idle")
        stop_teammate(team.paths, "alice", alice)
        assert memory.read_text() == "- the user likes tea\n"
        requests = Mailbox(team.paths).read_all("team-lead")
        assert not [e for e in requests if isinstance(e.structured(), PermissionRequest)]

        bob = start(workers, "bob", api)
        Mailbox(team.paths).send("bob", "second run", sender="team-lead", summary="go")
        wait_for(lambda: went_idle(team.paths, "bob"), "bob to go idle")
        stop_teammate(team.paths, "bob", bob)

    first = next(b for b in seen if "first run" in json.dumps(b["messages"]))
    assert "Project rule: answer in French." in system(first)
    assert "Call the database «Lumière» $(not a command)" in system(first)
    assert "Your memory" in system(first) and "It is empty so far." in system(first)
    explore = next(b for b in seen if "You are a sub-agent" in system(b))
    assert "Project rule" not in system(explore) and "Your memory" not in system(explore)
    second = next(b for b in seen if "second run" in json.dumps(b["messages"]))
    assert "- the user likes tea" in system(second)
