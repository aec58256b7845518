"""One OpenTelemetry trace across a whole team, with real processes and a local OTLP/HTTP
receiver: `swarm lead`'s agent adds a task, alice (a Claude teammate) works it with an Explore
sub-agent and messages bob, bob answers. Every one of those spans is in the task's trace, from
the lead's process and both teammates' (the sub-agent runs in alice's), and the metrics
(tokens, cost, claim latency, delivery latency, queue depth) reach the receiver too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, wait_for
from messages_api import MessagesAPI, Turn
from otlp_receiver import OtlpReceiver, ReceivedSpan

from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from protocols.trace_context import TRACE_KEY

Start = Callable[..., Any]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver()
    yield running
    running.close()


def play(body: dict[str, Any]) -> Turn:
    """The lead adds a task; alice asks an Explore sub-agent, tells bob, completes it."""
    system = json.dumps(body.get("system"))
    turns = len(body["messages"])
    if "You are the team lead" in system:
        if turns == 1:
            task = {"subject": "find the answer", "description": "Read notes.txt; tell bob."}
            return Turn.tool("TaskCreate", task)
        return Turn.text("Noted.")
    if "You are a sub-agent" in system:
        if turns == 1:
            return Turn.tool("Read", {"file_path": "notes.txt"})
        return Turn.text("notes.txt says: the answer is 42")
    if "You have claimed task" in json.dumps(body["messages"][0]):  # alice
        if turns == 1:
            call = {"description": "find the answer", "prompt": "What does notes.txt say?"}
            return Turn.tool("Agent", {**call, "subagent_type": "Explore"})
        if turns == 3:
            return Turn.tool("SendMessage", {"to": "bob", "message": "42", "summary": "answer"})
        if turns == 5:
            return Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"})
        return Turn.text("Done: 42.")
    return Turn.text("Thanks.")  # bob, and alice between tasks


def test_the_lead_two_teammates_and_a_sub_agent_share_the_tasks_trace(
    team: TeamFile,
    start: Start,
    workdir: Path,
    receiver: OtlpReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    env = {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_METRIC_EXPORT_INTERVAL": "300",
    }
    for key, value in env.items():  # `swarm lead` inherits this process's environment
        monkeypatch.setenv(key, value)
    board = TaskBoard(team.paths)
    with MessagesAPI(play) as api:
        start("alice", api, "--permission-mode", "acceptEdits", env=env)
        lead = LeadSession(api, workdir, "--backend", "subprocess")
        try:
            lead.expect("leading team 't'")
            lead.type("Put finding the answer on the board.")
            wait_for(lambda: board.get("1") is not None, "the lead agent to add task #1")
            wait_for(lambda: board.require("1").status == "completed", "alice to do it", 60)
            start("bob", api, env=env)

            def arrived() -> bool:
                names = {s.name for s in receiver.received()}
                return {"invoke_agent team-lead", "swarm message respond"} <= names

            wait_for(arrived, "the lead's and bob's spans at the receiver", 60)
            assert lead.quit() == 0
        finally:
            lead.close()
    carried = board.require("1").metadata[TRACE_KEY]
    spans = receiver.received()
    by_id = {s.span_id: s for s in spans}
    trace_id = carried["traceparent"].split("-")[1]
    traced = [s for s in spans if s.trace_id == trace_id]

    def parent(span: ReceivedSpan) -> ReceivedSpan:
        return by_id[span.parent_id]

    def one(name: str) -> ReceivedSpan:
        (found,) = [s for s in traced if s.name == name]
        return found

    turn = one("invoke_agent team-lead")
    assert turn.parent_id == "" and turn.service == "swarm-lead"
    assert turn.attributes["agent_id"] == "team-lead@t"
    create = one("execute_tool TaskCreate")
    assert parent(create) is turn and create.service == "swarm-lead"
    work = one("swarm task work")
    assert parent(work) is create and work.service == "swarm-teammate"
    assert work.attributes["agent_id"] == "alice@t"
    sub = one("invoke_agent Explore")
    assert parent(parent(sub)).span_id == work.span_id  # under alice's Agent call
    assert sub.attributes["parent_agent_id"] == "alice@t"
    assert parent(one("execute_tool Read")) is sub
    respond = one("swarm message respond")
    assert parent(respond) is one("execute_tool SendMessage")
    assert respond.attributes["agent_id"] == "bob@t" and respond.service == "swarm-teammate"
    chats = [s for s in traced if s.name.startswith("chat ")]
    assert {c.service for c in chats} == {"swarm-lead", "swarm-teammate"}

    def measured() -> set[tuple[str, str]]:
        return {(p.service, p.metric) for p in receiver.metrics()}

    wanted = {
        ("swarm-lead", "gen_ai.client.token.usage"),
        ("swarm-teammate", "gen_ai.client.token.usage"),
        ("swarm-teammate", "swarm.cost"),
        ("swarm-teammate", "swarm.task.claim_latency"),
        ("swarm-teammate", "swarm.message.delivery_latency"),
        ("swarm-teammate", "swarm.inbox.queue_depth"),
    }
    try:
        wait_for(lambda: wanted <= measured(), "the metrics at the receiver", 30)
    except AssertionError:
        raise AssertionError(f"missing: {wanted - measured()}; got {measured()}") from None
    tokens = [p for p in receiver.metrics() if p.metric == "gen_ai.client.token.usage"]
    assert any(p.attributes["gen_ai.token.type"] == "output" and p.value > 0 for p in tokens)
    claims = [p for p in receiver.metrics() if p.metric == "swarm.task.claim_latency"]
    assert sum(p.count for p in claims) >= 1 and all(p.value >= 0 for p in claims)
