"""The lead agent's team tools in one process, on the stub spawn backend: nothing is started,
so what the lead asks for (the teammate's command line, its member entry and recorded spec, its
first message) and what the model is told back can be checked exactly, with the model scripted.
`tests/processes/test_lead.py` runs the same lead as a real `swarm lead` with real teammates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from messages_api import Turn

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import NewTask, TaskBoard
from protocols.team.file import TeamFile
from swarm.backends.stub import StubBackend
from swarm.lead.agent import LeadAgent
from swarm.lead.tools import LeadLink
from swarm.team.lifecycle import request_shutdown
from swarm.team.members import member_spec
from teammate.api.model import ScriptedModel
from teammate.options import MemberSpec, parse


@pytest.fixture
def team(tmp_path: Path, config_root: Path, monkeypatch: pytest.MonkeyPatch) -> TeamPaths:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # a Claude teammate needs one to start
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).create(cwd=tmp_path)
    return paths


def lead(paths: TeamPaths, cwd: Path, turns: list[Turn], stub: StubBackend) -> LeadAgent:
    link = LeadLink(paths, cwd, backend="stub", model="sonnet", spawner=stub)
    return LeadAgent(ScriptedModel(turns), link, say=lambda text: None)


def tool_results(agent: LeadAgent) -> list[str]:
    """The text of every tool result the model was sent, in order."""
    model = agent.loop.model
    assert isinstance(model, ScriptedModel)
    return [
        "".join(part["text"] for part in block["content"] if part.get("type") == "text")
        if isinstance(block["content"], list)
        else block["content"]
        for message in model.requests[-1].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_the_agent_tool_starts_the_teammate_the_spec_describes(
    team: TeamPaths, tmp_path: Path
) -> None:
    stub = StubBackend()
    spawn = {
        "description": "write the schema",
        "prompt": 'Write schema.sql; it\'s "urgent" $(rm -rf ~)',
        "name": "alice",
        "model": "haiku",
        "mode": "plan",
        "subagent_type": "Explore",
    }
    agent = lead(team, tmp_path, [Turn.tool("Agent", spawn), Turn.text("started")], stub)
    result = agent.loop.run("start alice")
    assert result.text == "started"
    (request,) = stub.requests
    options = parse(request.argv[request.argv.index("--agent-id") :])
    assert (options.agent_name, options.team_name) == ("alice", "t")
    assert options.spec.model == "haiku" and options.spec.agent_type == "Explore"
    assert options.spec.plan_mode_required and options.spec.permission_mode is None
    member = TeamFile(team).load().member("alice")
    assert member is not None and member.backendType == "stub"
    recorded = member_spec(member)
    assert recorded == MemberSpec(
        model="haiku",
        agent_type="Explore",
        plan_mode_required=True,
        backend="stub",
        cwd=str(tmp_path),
    )
    (first,) = Mailbox(team).read_all("alice")
    assert first.text == spawn["prompt"]  # word for word: no shell saw it
    (said,) = tool_results(agent)
    assert said.startswith("Spawned successfully.\nagent_id: alice@t\nname: alice\n")


def test_a_spawn_the_lead_cannot_make_is_an_error_for_the_model_and_leaves_no_member(
    team: TeamPaths, tmp_path: Path
) -> None:
    stub = StubBackend(fail_with="no terminal")
    calls: list[dict[str, Any]] = [
        {"description": "d", "prompt": "p", "team_name": "t"},  # a team but no name
        {"description": "d", "prompt": "p", "name": "bob", "team_name": "other"},
        {"description": "d", "prompt": "p", "name": "bob"},  # the backend fails
        {"description": "d", "prompt": "p", "name": "bob bob"},  # not a name
        {"description": "d", "prompt": "p", "name": "bob", "subagent_type": "reviewer"},
        {"description": "d", "prompt": "p", "name": "bob", "host": "b"},  # a team in files
        {"description": "d", "prompt": "p", "host": "b"},  # a sub-agent runs here
    ]
    turns = [Turn.tool("Agent", call) for call in calls] + [Turn.text("gave up")]
    agent = lead(team, tmp_path, turns, stub)
    assert agent.loop.run("start bob").text == "gave up"
    said = tool_results(agent)
    assert len(said) == 7
    assert "give the teammate a `name` to address it by" in said[0]
    assert "this session leads team 't', not 'other'" in said[1]
    assert "cannot start 'bob': no terminal" in said[2]
    assert "'bob bob'" in said[3] and "letters, digits" in said[3]
    assert "unknown agent type 'reviewer'; available: Explore, Plan, general-purpose" in said[4]
    assert "`host` is for a team on PostgreSQL" in said[5] and "team 't' is in files" in said[5]
    assert "`host` places a teammate: give it a `name` too" in said[6]
    assert stub.requests == []
    assert [m.name for m in TeamFile(team).load().members] == ["team-lead"]


def test_a_teammate_the_lead_spawned_is_shut_down_and_its_tasks_return(
    team: TeamPaths, tmp_path: Path
) -> None:
    stub = StubBackend()
    spawn = {"description": "d", "prompt": "work", "name": "carol"}
    agent = lead(team, tmp_path, [Turn.tool("Agent", spawn), Turn.text("ok")], stub)
    agent.loop.run("start carol")
    board = TaskBoard(team)
    (task,) = board.create_many([NewTask("held by carol", owner="carol")])
    # nobody runs to answer: forced, the lead stops it after no answer
    result = request_shutdown(team, "carol", "done", wait_s=0, force=True)
    assert result.outcome == "no-answer" and result.stopped
    assert result.released == [task.id]
    assert TeamFile(team).load().member("carol") is None
    reread = board.get(task.id)
    assert reread is not None and reread.owner is None
    shutdown = [json.loads(e.text) for e in Mailbox(team).read_all("carol") if "{" in e.text]
    assert [m["type"] for m in shutdown] == ["shutdown_request"]
