"""Resuming: the transcript plays back the conversation the loop had (tool rounds, a trim, a
fork's seed), a tool call a killed agent never answered is answered as interrupted, a stop in
order is told from a crash, `--resume` is refused where there is nothing to resume, and the
lead's Agent tool resumes a crashed teammate (not one that shut down in order)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from messages_api import Turn

from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.backends.stub import StubBackend
from swarm.errors import SwarmError
from swarm.lead.agent import LeadAgent
from swarm.lead.tools import LeadLink
from swarm.team.resume import prepare_resume
from teammate.agent.loop import AgentLoop
from teammate.agent.transcript import (
    INTERRUPTED,
    Transcript,
    conversation_of,
    ended_in_order,
    read_transcript,
)
from teammate.api.model import ScriptedModel
from teammate.options import MemberSpec, UsageError, parse
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.base import ToolContext
from teammate.tools.files import read, write


def loop_with(tmp_path: Path, turns: list[Turn], path: Path, **kwargs: object) -> AgentLoop:
    return AgentLoop(
        ScriptedModel(turns),
        [read, write],
        PermissionPolicy("acceptEdits", tmp_path),
        "You are a test agent.",
        ToolContext(cwd=tmp_path),
        transcript=Transcript(path),
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_transcript_plays_back_exactly_the_conversation_the_loop_had(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("plum\n")
    path = tmp_path / "alice.transcript.jsonl"
    turns = [
        Turn.tool("Read", {"file_path": "notes.txt"}),
        Turn.tools(
            [("Write", {"file_path": "a.txt", "content": "x"}), ("Read", {"file_path": "a.txt"})]
        ),
        Turn.text("Noted: plum."),
        Turn.text("Still plum."),
    ]
    loop = loop_with(tmp_path, turns, path)
    Transcript(path).record("session", resumed=False, pid=1)
    loop.run("Remember the word in notes.txt. 'quotes' $(rm -rf ~) é\n")
    loop.run("What was it?")
    assert conversation_of(read_transcript(path)) == loop.messages
    assert len(loop.messages) == 8


def test_a_compacted_conversation_and_a_restored_one_play_back_as_they_are_now(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    turns = [
        Turn.tool("Read", {"file_path": "notes.txt"}),
        Turn.text("Summary: read notes.txt."),  # the summary, when asked
        Turn.text("ok"),
    ]
    (tmp_path / "notes.txt").write_text("plum\n")
    loop = loop_with(tmp_path, turns, path)
    loop.run("go")
    assert loop.compact("manual")
    events = read_transcript(path)
    assert events[0]["kind"] == "compact_boundary"  # the live file begins at the compaction
    assert conversation_of(events) == loop.messages
    seed = [{"role": "user", "content": [{"type": "text", "text": "a fork's seed"}]}]
    loop.restore(seed)
    assert conversation_of(read_transcript(path)) == seed


def test_a_call_the_killed_agent_never_answered_is_answered_as_interrupted() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "sleep 60"}}
    events = [
        {"kind": "session", "resumed": False},
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": "go"}]},
        {"kind": "message", "role": "assistant", "content": [use]},
    ]
    messages = conversation_of(events)
    assert messages[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": INTERRUPTED,
                "is_error": True,
            }
        ],
    }
    assert not ended_in_order(events)
    assert ended_in_order([*events, {"kind": "session_end"}])


def test_a_new_instance_starts_a_new_conversation_a_resumed_one_carries_on() -> None:
    said = {"kind": "message", "role": "user", "content": [{"type": "text", "text": "one"}]}
    later = {"kind": "message", "role": "user", "content": [{"type": "text", "text": "two"}]}
    fresh = [said, {"kind": "session", "resumed": False}, later]
    assert conversation_of(fresh)[0]["content"] == [{"type": "text", "text": "two"}]
    resumed = [said, {"kind": "session", "resumed": True}, later]
    assert [b["text"] for b in conversation_of(resumed)[0]["content"]] == ["one", "two"]
    # garbage lines (a hostile edit, a torn write) are skipped, never a crash
    assert conversation_of([{"kind": "message", "role": "system", "content": "x"}, {}]) == []


def test_resume_is_refused_where_there_is_nothing_to_resume(config_root: Path) -> None:
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).create()
    with pytest.raises(UsageError, match="--resume is for Claude teammates"):
        parse(["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", "--resume"])
    with pytest.raises(SwarmError, match="shell worker has no conversation"):
        prepare_resume(paths, "alice", MemberSpec(model="shell", resume=True))
    with pytest.raises(SwarmError, match=r"nothing to resume for 'alice'.*holds no conversation"):
        prepare_resume(paths, "alice", MemberSpec(model="sonnet", resume=True))
    with pytest.raises(SwarmError, match="another program keeps its own sessions"):
        spec = MemberSpec(model="sonnet", resume=True, teammate_command="claude")
        prepare_resume(paths, "alice", spec)


def write_transcript(paths: TeamPaths, name: str, *, in_order: bool) -> None:
    events = [
        {"kind": "session", "resumed": False, "pid": 1},
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": "remember plum"}]},
        {"kind": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    ]
    if in_order:
        events.append({"kind": "session_end"})
    path = paths.transcript(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


@pytest.mark.parametrize("in_order", [False, True])
def test_the_lead_resumes_a_crashed_teammate_and_starts_a_stopped_one_fresh(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_order: bool
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).create(cwd=tmp_path)
    write_transcript(paths, "bob", in_order=in_order)
    stub = StubBackend()
    link = LeadLink(paths, tmp_path, backend="stub", model="sonnet", spawner=stub)
    call = {"description": "d", "prompt": "carry on, bob", "name": "bob"}
    agent = LeadAgent(ScriptedModel([Turn.tool("Agent", call), Turn.text("ok")]), link, say=print)
    agent.loop.run("bring bob back")
    (request,) = stub.requests
    options = parse(request.argv[request.argv.index("--agent-id") :])
    assert options.spec.resume is not in_order
    result = agent.loop.messages[-2]["content"][0]["content"]
    assert ("carries on with that conversation" in result) is not in_order
