"""The agent loop in-process: prompt caching marks, the lead's answers to permission asks,
messages injected between turns, retries for an overloaded API, and a conversation compacted
when the API says it no longer fits, against the scripted model and (for the context limit) the
real SDK talking to the local Messages API server. Compaction, stop reasons and the API's other
failures in detail: `test_long_jobs_unit.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from messages_api import MessagesAPI, Turn

from protocols.inbox.entry import InboxEntry
from teammate.agent.compaction import summary_turn
from teammate.agent.loop import AgentLoop
from teammate.agent.retries import RetryPolicy
from teammate.api.model import ClaudeModel, ModelError, ScriptedModel
from teammate.link import Approval, PlanVerdict
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.base import ToolContext
from teammate.tools.files import read, write
from teammate.tools.shell import bash


@dataclass
class LeadStub:
    """The edge of the loop: what the lead answers, and messages that arrive between turns."""

    answers: list[Approval] = field(default_factory=list)
    arriving: list[list[InboxEntry]] = field(default_factory=list)
    asked: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)
    paused: list[tuple[float, str]] = field(default_factory=list)
    name: str = "alice"
    color: str | None = None

    def ask_permission(self, ask):
        self.asked.append((ask.tool_name, ask.tool_input, ask.tool_use_id))
        return self.answers.pop(0)

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        return PlanVerdict(True)

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        pass

    def between_turns(self) -> list[InboxEntry]:
        return self.arriving.pop(0) if self.arriving else []

    def pause(self, seconds: float, why: str) -> None:
        self.paused.append((seconds, why))

    def watch(self, call: Any, why: str) -> bool:
        return bool(call.wait())


def make_loop(tmp_path: Path, turns: list[Turn], mode: str = "default", **kwargs: Any) -> AgentLoop:
    link = kwargs.pop("link", LeadStub())
    return AgentLoop(
        kwargs.pop("model", None) or ScriptedModel(turns),
        [bash, read, write],
        PermissionPolicy(mode, tmp_path),
        "You are a test agent.",
        ToolContext(cwd=tmp_path),
        link=link,
        retries=kwargs.pop("retries", None) or RetryPolicy(rand=lambda: 0.0),
        **kwargs,
    )


def test_requests_mark_tools_system_and_the_conversation_end_for_caching(tmp_path: Path) -> None:
    model = ScriptedModel([Turn.tool("Read", {"file_path": "x"}), Turn.text("done")])
    loop = make_loop(tmp_path, [], model=model)
    result = loop.run("go")
    assert result.stop == "end_turn" and result.text == "done"
    first, second = model.requests
    for request in (first, second):
        assert request.tools[-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in t for t in request.tools[:-1])
        assert request.system[-1]["cache_control"] == {"type": "ephemeral"}
        assert request.messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # the second request repeats the first one's prefix, so it can be read from the cache
    assert second.messages[0]["content"][0]["text"] == "go"
    assert "cache_control" not in loop.messages[0]["content"][0]  # history stays clean


def test_a_denied_ask_is_an_error_result_and_an_approval_can_change_the_input(
    tmp_path: Path,
) -> None:
    lead = LeadStub(
        answers=[
            Approval(False, "not now"),
            Approval(True, updated_input={"command": "echo changed > out.txt"}),
        ]
    )
    model = ScriptedModel(
        [
            Turn.tool("Bash", {"command": "echo first > out.txt"}),
            Turn.tool("Bash", {"command": "echo second > out.txt"}),
            Turn.text("ok"),
        ]
    )
    make_loop(tmp_path, [], model=model, link=lead).run("go")
    denied = model.requests[1].messages[-1]["content"][0]
    assert denied["is_error"] and "denied by team-lead: not now" in denied["content"]
    assert (tmp_path / "out.txt").read_text() == "changed\n"
    assert [a[1]["command"] for a in lead.asked] == [
        "echo first > out.txt",
        "echo second > out.txt",
    ]
    assert all(a[2] and a[2].startswith("toolu_") for a in lead.asked)


def test_approval_with_permission_updates_stops_asking(tmp_path: Path) -> None:
    rule = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "echo:*"}],
        "behavior": "allow",
        "destination": "session",
    }
    lead = LeadStub(answers=[Approval(True, permission_updates=[rule])])
    turns = [Turn.tool("Bash", {"command": "echo one"}), Turn.tool("Bash", {"command": "echo two"})]
    make_loop(tmp_path, [*turns, Turn.text("ok")], link=lead).run("go")
    assert len(lead.asked) == 1


def test_messages_arriving_between_turns_reach_the_model(tmp_path: Path) -> None:
    entry = InboxEntry.model_validate(
        {
            "from": "bob",
            "text": "use the blue one",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "color": "green",
        }
    )
    model = ScriptedModel([Turn.tool("Read", {"file_path": "x"}), Turn.text("ok")])
    make_loop(tmp_path, [], model=model, link=LeadStub(arriving=[[entry]])).run("go")
    content = model.requests[1].messages[-1]["content"]
    assert content[0]["type"] == "tool_result"
    assert content[1]["text"] == (
        '<teammate-message teammate_id="bob" color="green">\nuse the blue one\n</teammate-message>'
    )


def test_an_overloaded_api_is_retried_a_bounded_number_of_times(tmp_path: Path) -> None:
    script = [
        Turn.failure(529, retry_after=None),
        Turn.failure(529, retry_after=None),
        Turn.failure(429, retry_after=7),
        Turn.text("up again"),
    ]
    ok = make_loop(tmp_path, script)
    assert ok.run("go").text == "up again"
    # the waits go through the link, which keeps answering the inbox meanwhile
    paused = ok.link.paused  # type: ignore[attr-defined]
    assert [why for _, why in paused] == [
        "model unavailable (overloaded, 529), retry 1/10",
        "model unavailable (overloaded, 529), retry 2/10",
        "model unavailable (HTTP 429), retry 3/10",
    ]
    # exponential back-off, unless the API said when to come back (retry-after)
    assert [seconds for seconds, _ in paused] == [0.5, 1.0, 7.0]
    down = make_loop(tmp_path, [Turn.failure(529)] * 10, retries=RetryPolicy(2))
    with pytest.raises(ModelError) as caught:
        down.run("go")
    assert caught.value.status == 529
    assert len(down.model.requests) == 3  # type: ignore[attr-defined]


def test_a_client_error_is_not_retried(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, [Turn.failure(401, message="invalid x-api-key"), Turn.text("no")])
    with pytest.raises(ModelError, match="invalid x-api-key"):
        loop.run("go")


def test_max_turns_ends_the_loop(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, [Turn.tool("Read", {"file_path": "x"})] * 5, max_turns=3)
    result = loop.run("go")
    assert result.stop == "max_turns" and result.turns == 3


def test_an_unknown_tool_and_bad_input_are_error_results(tmp_path: Path) -> None:
    model = ScriptedModel(
        [Turn.tool("Teleport", {}), Turn.tool("Read", {"path": "x"}), Turn.text("ok")]
    )
    make_loop(tmp_path, [], model=model).run("go")
    unknown = model.requests[1].messages[-1]["content"][0]
    assert unknown["is_error"] and unknown["content"] == "No such tool available: Teleport"
    invalid = model.requests[2].messages[-1]["content"][0]
    assert invalid["is_error"] and "file_path" in invalid["content"]


def test_a_context_that_grows_too_long_is_compacted_not_retried_as_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's window is smaller than the loop knows: its refusal ("prompt is too long")
    makes the loop compact, learn the window, and go on; the summary keeps the task."""
    big = tmp_path / "big.txt"
    big.write_text(("x" * 49 + "\n") * 400)  # 20,000 characters a Read
    limit = 12_000  # tokens the server accepts (about 48,000 characters)
    summaries = []

    def server(body: dict[str, Any]) -> Turn:
        size = len(str(body)) // 4
        if size > limit:
            return Turn.failure(400, message=f"prompt is too long: {size} tokens > {limit} maximum")
        if summary_turn(body):
            summaries.append(body)
            return Turn.text("Summary: reading big.txt, four reads asked for.")
        reads = sum(
            1
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        compacted = "<summary>" in str(body["messages"][0])
        done = reads >= 4 or (compacted and reads >= 1)
        return Turn.text("read it all") if done else Turn.tool("Read", {"file_path": str(big)})

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MessagesAPI(server) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        loop = make_loop(tmp_path, [], model=ClaudeModel("sonnet"))
        result = loop.run("read big.txt four times")
    assert result.text == "read it all"
    rejected = [r for r in api.requests if len(str(r)) // 4 > limit]
    assert rejected, "the conversation never reached the limit: the test proves nothing"
    assert len(rejected) <= 2  # compacted after a rejection, never resent as it was
    assert summaries and loop.compactions >= 1
    assert loop.settings.window == limit  # learned from the refusal
    assert "read big.txt four times" in str(loop.messages[0])  # the work, word for word
    # still a valid conversation: every tool_use is answered in the next message
    for index, message in enumerate(loop.messages[:-1]):
        uses = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        answered = {
            b["tool_use_id"]
            for b in loop.messages[index + 1]["content"]
            if b.get("type") == "tool_result"
        }
        assert uses <= answered
