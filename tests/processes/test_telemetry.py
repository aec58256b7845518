"""OpenTelemetry end to end, with real processes and a local OTLP/HTTP receiver: `swarm task
add` starts a trace, a shell teammate's work on the task continues it (the trace context kept
in the task's metadata), a Claude teammate's requests, tool calls, permission wait and sub-agent
nest in it, and with telemetry off nothing is exported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Processes, swarm, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn
from otlp_receiver import OtlpReceiver, ReceivedSpan

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from protocols.trace_context import TRACE_KEY, carrier_of
from swarm.team.approvals import pending_requests

Start = Callable[..., subprocess.Popen[str]]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver()
    yield running
    running.close()


def telemetry_env(endpoint: str) -> dict[str, str]:
    return {
        **os.environ,
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "SWARM_TEAM": "t",
    }


def add_task(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "swarm", "task", "add", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_one_trace_from_task_add_through_the_teammates_work(
    team: TeamFile, workers: Processes, receiver: OtlpReceiver
) -> None:
    env = telemetry_env(receiver.endpoint)
    board = TaskBoard(team.paths)
    workers.start(teammate_argv("alice"), env)
    task_id = add_task(env, "say it", "--command", "echo traced")
    assert "traceparent" in board.require(task_id).metadata[TRACE_KEY]
    wait_for(lambda: board.require(task_id).status == "completed", "alice to do it")

    def both() -> bool:
        names = {s.name for s in receiver.received()}
        return {"swarm task add", "swarm task work"} <= names

    wait_for(both, "both processes' spans at the receiver")
    spans = {s.name: s for s in receiver.received()}
    added, work = spans["swarm task add"], spans["swarm task work"]
    assert added.service == "swarm" and work.service == "swarm-teammate"
    assert added.parent_id == ""  # the task's trace starts at `task add`
    assert work.trace_id == added.trace_id and work.parent_id == added.span_id
    assert added.attributes["swarm.task.id"] == task_id
    assert work.attributes["agent_id"] == "alice@t"


def test_off_by_default_exports_nothing_and_stores_no_context(
    team: TeamFile, workers: Processes, receiver: OtlpReceiver
) -> None:
    env = telemetry_env(receiver.endpoint)
    del env["CLAUDE_CODE_ENABLE_TELEMETRY"]
    board = TaskBoard(team.paths)
    workers.start(teammate_argv("alice"), env)
    task_id = add_task(env, "say it", "--command", "echo untraced")
    wait_for(lambda: board.require(task_id).status == "completed", "alice to do it")
    assert TRACE_KEY not in (board.require(task_id).metadata or {})
    assert receiver.received() == []


def test_a_claude_teammates_requests_tools_and_sub_agent_nest_in_the_tasks_trace(
    team: TeamFile, start: Start, workdir: Path, receiver: OtlpReceiver
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in json.dumps(body.get("system")):  # the Explore sub-agent
            if len(body["messages"]) == 1:
                return Turn.tool("Read", {"file_path": "notes.txt"})
            return Turn.text("notes.txt says: the answer is 42")
        if len(body["messages"]) == 1:
            call = {"description": "find the answer", "prompt": "What does notes.txt say?"}
            return Turn.tool("Agent", {**call, "subagent_type": "Explore"})
        if len(body["messages"]) == 3:  # acceptEdits: a command asks the lead
            return Turn.tool("Bash", {"command": "touch answered.txt"})
        if len(body["messages"]) == 5:
            return Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"})
        return Turn.text("Done: 42.")

    env = telemetry_env(receiver.endpoint)
    board = TaskBoard(team.paths)
    with MessagesAPI(play) as api:
        start("alice", api, "--permission-mode", "acceptEdits", env=env)
        task_id = add_task(env, "find the answer", "--for", "claude")
        (request,) = wait_for(lambda: pending_requests(team.paths), "alice's permission request")
        assert swarm("approve", request.id).returncode == 0  # telemetry off: no span of its own
        wait_for(lambda: board.require(task_id).status == "completed", "alice to do it")

        def arrived() -> bool:
            return "swarm task work" in {s.name for s in receiver.received()}

        wait_for(arrived, "the teammate's spans at the receiver")
    spans = receiver.received()
    by_id = {s.span_id: s for s in spans}
    (added,) = [s for s in spans if s.name == "swarm task add"]
    assert {s.trace_id for s in spans} == {added.trace_id}  # one trace
    assert {s.service for s in spans} == {"swarm", "swarm-teammate"}

    def parent(span: ReceivedSpan) -> ReceivedSpan:
        return by_id[span.parent_id]

    (work,) = [s for s in spans if s.name == "swarm task work"]
    assert parent(work) is added
    (agent_call,) = [s for s in spans if s.name == "execute_tool Agent"]
    assert parent(agent_call) is work  # a sibling of the requests of the turn
    (sub,) = [s for s in spans if s.name.startswith("invoke_agent ")]
    assert parent(sub) is agent_call
    assert sub.attributes["agent_id"] and sub.attributes["parent_agent_id"] == "alice@t"
    (read,) = [s for s in spans if s.name == "execute_tool Read"]
    assert parent(read) is sub  # the sub-agent's own tool call
    (waited,) = [s for s in spans if s.name == "permission wait"]
    assert waited.attributes["gen_ai.tool.name"] == "Bash"
    assert parent(waited).name == "execute_tool Bash" and parent(parent(waited)) is work
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 6  # the teammate's four requests and the sub-agent's two
    for chat in chats:
        assert chat.attributes["gen_ai.system"] == "anthropic"
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.input_tokens" in chat.attributes
    assert {parent(c).name for c in chats} <= {"swarm task work", sub.name}


def test_a_message_links_the_senders_span_to_the_receivers(
    team: TeamFile, start: Start, receiver: OtlpReceiver
) -> None:
    """alice, working on a task, messages bob: the entry carries her span's context (an extra
    key), and bob's answer is a span in the same trace, linked to hers."""

    def play(body: dict[str, Any]) -> Turn:
        first = json.dumps(body["messages"][0])
        if "You have claimed task" in first:  # alice
            if len(body["messages"]) == 1:
                message = {"to": "bob", "message": "ping", "summary": "ping"}
                return Turn.tool("SendMessage", message)
            if len(body["messages"]) == 3:
                return Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"})
            return Turn.text("Sent.")
        return Turn.text("pong")  # bob

    env = telemetry_env(receiver.endpoint)
    board = TaskBoard(team.paths)
    with MessagesAPI(play) as api:
        start("alice", api, "--permission-mode", "acceptEdits", env=env)
        task_id = add_task(env, "ping bob", "--owner", "alice")
        wait_for(lambda: board.require(task_id).status == "completed", "alice to do it")
        start("bob", api, env=env)

        def answered() -> bool:
            return "swarm message respond" in {s.name for s in receiver.received()}

        wait_for(answered, "bob's answer at the receiver")
    (entry,) = [e for e in Mailbox(team.paths).read_all("bob") if e.from_ == "alice"]
    carried = carrier_of(entry.model_extra)
    spans = receiver.received()
    (send,) = [s for s in spans if s.name == "execute_tool SendMessage"]
    assert carried["traceparent"].split("-")[1:3] == [send.trace_id, send.span_id]
    (respond,) = [s for s in spans if s.name == "swarm message respond"]
    assert respond.trace_id == send.trace_id and respond.parent_id == send.span_id
    assert respond.attributes["agent_id"] == "bob@t"
