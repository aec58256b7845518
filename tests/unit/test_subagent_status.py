"""A sub-agent's entry in its parent's status file: written on its start, each model and tool
call and its end; its usage counted once in the parent's totals; only running ones and the last
few finished ones kept; an old status file (no ``subagents``) and a bad entry still parse."""

from __future__ import annotations

import json
from pathlib import Path

from messages_api import Turn

from protocols.member.status import (
    FINISHED_KEPT,
    AgentStatus,
    SubAgentStatus,
    keep_recent,
    read_status,
)
from protocols.paths import TeamPaths
from teammate.agent.subagents import Parent, SubAgents
from teammate.api.model import ModelReply, ModelRequest, ScriptedModel
from teammate.brains.claude import WORK_TOOLS
from teammate.config.definitions import load_agent
from teammate.permissions.policy import PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolContext


def test_an_old_status_file_and_a_bad_entry_still_parse(paths: TeamPaths) -> None:
    old = {"name": "alice", "model": "sonnet", "state": "idle", "usage": {"input_tokens": 3}}
    assert AgentStatus.from_json_dict(old).subagents == []
    good = {"agentId": "a1", "agentType": "Explore", "state": "running"}
    bad = {"agentType": "Explore"}  # no id
    status = AgentStatus.from_json_dict({**old, "subagents": [good, bad, "x"]})
    assert [e.agentId for e in status.subagents] == ["a1"]
    assert AgentStatus.from_json_dict({**old, "subagents": "nonsense"}).subagents == []
    paths.agent_status("alice").parent.mkdir(parents=True)
    paths.agent_status("alice").write_text(json.dumps(old))
    read = read_status(paths, "alice")
    assert read is not None and read.subagents == []


def entry(agent_id: str, state: str, ended: str | None = None) -> SubAgentStatus:
    return SubAgentStatus(agentId=agent_id, agentType="Explore", state=state, endedAt=ended)


def test_every_running_entry_is_kept_and_only_the_last_finished_ones() -> None:
    finished = [entry(f"f{i}", "completed", f"2026-01-01T00:00:{i:02d}.000Z") for i in range(8)]
    running = [entry("r1", "running"), entry("r2", "running")]
    listed = [running[0], *reversed(finished), running[1]]
    kept = keep_recent(listed)
    assert [e.agentId for e in kept if e.running] == ["r1", "r2"]
    recent = {f"f{i}" for i in range(8 - FINISHED_KEPT, 8)}
    assert {e.agentId for e in kept if not e.running} == recent
    assert kept[0].agentId == "r1" and kept[-1].agentId == "r2"  # the order they were listed


def test_a_sub_agent_reports_its_tool_calls_tokens_and_end(
    paths: TeamPaths, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("42\n")
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads\ntools: Read\ncolor: green\n---\nRead.\n"
    )
    reporter = StatusReporter(paths, "alice", "claude-sonnet-5-5")
    seen: list[AgentStatus] = []

    class Watching(ScriptedModel):
        def complete(self, request: ModelRequest) -> ModelReply:
            status = read_status(paths, "alice")
            assert status is not None
            seen.append(status)
            return super().complete(request)

    model = Watching(
        [Turn.tool("Read", {"file_path": "notes.txt"}), Turn.text("it says 42")],
    )
    parent = Parent(
        name="alice",
        model=model,
        tools=list(WORK_TOOLS),
        policy=PermissionPolicy("acceptEdits", tmp_path),
        ctx=ToolContext(cwd=tmp_path),
        agents=lambda kind: load_agent(kind, project_dir=tmp_path),
        directory=paths.agents_dir / "alice.subagents",
        reporter=reporter,
    )
    call = AgentCall("read the notes", "What do the notes say?", subagent_type="reader")
    answer = SubAgents(parent).launch(call, "toolu_1")
    assert answer.startswith("it says 42")
    first, second = seen
    (running,) = first.subagents  # on its start, before its first model call
    assert running.state == "running" and running.agentType == "reader"
    assert running.color == "green" and running.description == "read the notes"
    assert running.startedAt and running.endedAt is None and running.requests == 0
    (working,) = second.subagents  # after its Read
    assert working.activity == "Read notes.txt" and working.toolUses == 1
    assert working.requests == 1 and working.usage["input_tokens"] > 0
    final = read_status(paths, "alice")
    assert final is not None
    (done,) = final.subagents
    assert done.state == "completed" and done.endedAt is not None
    assert done.requests == done.turns == 2 and done.toolUses == 1
    assert done.model == model.name
    # the parent's totals hold the sub-agent's usage exactly once
    assert final.requests == 2 and final.toolCalls == 0
    assert final.usage == done.usage
