"""What a long job meets, in-process against the scripted model: every stop reason, compaction
(automatic on the real size, by hand, blocked by a hook, with a summary that fails), the work in
progress kept word for word after it, prompt-cache breakpoints that do not churn, retries with
their back-off and ``A + B > C``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from messages_api import Turn

from teammate.agent.compaction import CLEARED, summary_turn
from teammate.agent.loop import CUT_CALL, CUT_OFF, AgentLoop
from teammate.agent.retries import RetryPolicy
from teammate.agent.transcript import Transcript, conversation_of, read_transcript
from teammate.api.model import ModelRequest, ScriptedModel
from teammate.api.model_settings import ModelSettings
from teammate.hooks import Hooks
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.base import ToolContext
from teammate.tools.files import read, write
from teammate.tools.shell import bash

CRITERIA = "Acceptance: every test in tests/ passes and README.md says how to run them."


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Waits:
    """The loop's team link, as far as retries see it: the waits it was asked for."""

    def __init__(self) -> None:
        self.paused: list[tuple[float, str]] = []

    def pause(self, seconds: float, why: str) -> None:
        self.paused.append((seconds, why))

    def between_turns(self) -> list[Any]:
        return []

    def watch(self, call: Any, why: str) -> bool:
        return bool(call.wait())


def loop_for(
    tmp_path: Path, turns: list[Turn], window: int | None = None, **kwargs: Any
) -> AgentLoop:
    model = kwargs.pop("model", None) or ScriptedModel(turns, name="claude-sonnet-5-5")
    return AgentLoop(
        model,
        [bash, read, write],
        PermissionPolicy("acceptEdits", tmp_path),
        "You are a test agent.",
        ToolContext(cwd=tmp_path),
        settings=ModelSettings.of(model.name, window=window, environ={}),
        retries=RetryPolicy(rand=lambda: 0.0),
        **kwargs,
    )


def sent(model: Any) -> list[ModelRequest]:
    return model.requests  # type: ignore[no-any-return]


def unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def last_blocks(request: ModelRequest) -> list[dict[str, Any]]:
    return list(request.messages[-1]["content"])


# stop reasons


def test_a_call_cut_off_by_max_tokens_is_never_run_and_the_model_is_told(tmp_path: Path) -> None:
    cut = Turn(
        [
            {"type": "text", "text": "Writing the script"},
            {
                "type": "tool_use",
                "id": "toolu_cut",
                "name": "Bash",
                "input": {"command": "touch made"},
            },
        ],
        stop_reason="max_tokens",
    )
    loop = loop_for(tmp_path, [cut, Turn.text("done")])
    result = loop.run("make the file")
    assert result.stop == "end_turn" and result.text == "done"
    assert not (tmp_path / "made").exists()  # the cut-off command did not run
    answer = last_blocks(sent(loop.model)[1])
    assert answer[0]["tool_use_id"] == "toolu_cut" and answer[0]["is_error"]
    assert answer[0]["content"] == CUT_CALL and answer[1]["text"] == CUT_OFF


def test_cut_off_text_goes_on_and_too_many_cut_offs_end_the_run(tmp_path: Path) -> None:
    loop = loop_for(tmp_path, [Turn.text("part one", stop_reason="max_tokens"), Turn.text("two")])
    assert loop.run("write a long answer").text == "two"
    assert last_blocks(sent(loop.model)[1])[-1]["text"] == CUT_OFF
    endless = loop_for(tmp_path, [Turn.text("more", stop_reason="max_tokens")] * 10)
    assert endless.run("go").stop == "max_tokens"
    assert len(sent(endless.model)) == 6  # MAX_CUT_OFFS in a row, then it gives up


def test_pause_turn_sends_the_turn_again_as_it_is(tmp_path: Path) -> None:
    paused = Turn.text("searching...", stop_reason="pause_turn")
    loop = loop_for(tmp_path, [paused, Turn.text("found it")])
    assert loop.run("search").text == "found it"
    again = sent(loop.model)[1]
    assert again.messages[-1]["role"] == "assistant"  # no new user turn: the server goes on
    assert again.messages[-1]["content"][0]["text"] == "searching..."


def test_a_refusal_ends_the_run_its_calls_not_run(tmp_path: Path) -> None:
    refused = Turn(
        [{"type": "tool_use", "id": "toolu_r", "name": "Bash", "input": {"command": "touch x"}}],
        stop_reason="refusal",
    )
    loop = loop_for(tmp_path, [refused, Turn.text("sure")])
    result = loop.run("do the bad thing")
    assert result.stop == "refusal" and not (tmp_path / "x").exists()
    assert all(b.get("type") != "tool_use" for b in loop.messages[-1]["content"])
    assert loop.run("something else").text == "sure"  # the conversation stays valid


def test_the_context_window_exceeded_compacts_and_goes_on(tmp_path: Path) -> None:
    turns = [
        Turn.text("a very long answer", stop_reason="model_context_window_exceeded"),
        Turn.text("Summary: wrote half the answer."),
        Turn.text("the rest"),
    ]
    loop = loop_for(tmp_path, turns)
    assert loop.run("answer at length").text == "the rest"
    summary, after = sent(loop.model)[1:]
    assert summary_turn({"messages": summary.messages})
    assert loop.compactions == 1 and "<summary>" in after.messages[0]["content"][0]["text"]


# compaction


def job(steps: int, size: int = 4_000) -> list[Turn]:
    """A job whose every turn reads a file and reports a large prompt (real usage)."""
    turns = []
    for step in range(steps):
        turn = Turn.tool("Read", {"file_path": "data.txt"})
        turn.usage = {"input_tokens": 1_000 + step * size, "output_tokens": 50}
        turns.append(turn)
    return turns


def test_the_real_size_triggers_a_compaction_that_keeps_the_work_word_for_word(
    tmp_path: Path,
) -> None:
    (tmp_path / "data.txt").write_text("row\n" * 200)
    after = Turn.tool("Read", {"file_path": "data.txt"})
    after.usage = {"input_tokens": 6_000, "output_tokens": 50}  # the compacted conversation
    summary = Turn.text("Summary: read data.txt 8 times; nothing wrong yet.")
    loop = loop_for(tmp_path, [*job(8), summary, after, Turn.text("done")], window=40_000)
    prompt = f"Task #7: check data.txt.\n{CRITERIA}"
    assert loop.run(prompt).text == "done"
    requests = sent(loop.model)
    asked = [i for i, r in enumerate(requests) if summary_turn({"messages": r.messages})]
    assert asked == [8]  # when the last reply's real size passed 28,000 of 40,000
    summary = requests[8]
    assert summary.system == requests[7].system and summary.tools == requests[7].tools
    # the same prefix as the turn before (but for where the breakpoints are): cached
    assert unmarked(summary.messages[:15]) == unmarked(requests[7].messages)
    for later in requests[9:]:
        first = later.messages[0]["content"]
        texts = "\n".join(b.get("text", "") for b in first)
        assert CRITERIA in texts and "Summary: read data.txt 8 times" in texts
        assert "data.txt (read)" in texts
    assert loop.compactions == 1 and loop.context_size() < 28_000


def test_a_compaction_by_hand_and_one_a_hook_blocks(tmp_path: Path) -> None:
    (tmp_path / "block.sh").write_text("#!/bin/sh\ncat > seen.json\necho no >&2\nexit 2\n")
    (tmp_path / "block.sh").chmod(0o755)
    command = {"type": "command", "command": str(tmp_path / "block.sh")}
    hooks = Hooks.from_groups(
        {"PreCompact": [{"matcher": "manual", "hooks": [command]}]}, project_dir=tmp_path
    )
    loop = loop_for(tmp_path, [Turn.text("hi"), Turn.text("S")], hooks=hooks)
    loop.run("hello")
    assert not loop.compact("manual", "keep the greeting")
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["trigger"] == "manual" and seen["custom_instructions"] == "keep the greeting"
    free = loop_for(tmp_path, [Turn.text("hi"), Turn.text("Summary: greeted.")])
    free.run("hello")
    free.request_compaction("keep the greeting")
    free.run("again")
    summary = sent(free.model)[1]
    assert "Also: keep the greeting" in summary.messages[-1]["content"][-1]["text"]


def test_a_summary_that_cannot_be_had_falls_back_and_the_job_goes_on(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("row\n" * 200)
    turns = [*job(4, size=12_000), Turn.failure(400, message="invalid request"), Turn.text("ok")]
    loop = loop_for(tmp_path, turns, window=40_000)
    assert loop.run(f"read it\n{CRITERIA}").text == "ok"
    assert loop.compactions == 0
    results = [b for m in loop.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert any(b["content"] == CLEARED for b in results)  # old output cleared instead
    assert results[-1]["content"] != CLEARED
    assert CRITERIA in json.dumps(loop.messages)


def test_old_tool_output_is_cleared_when_the_cache_went_cold(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("row\n" * 2_000)
    clock = Clock()
    turns = [Turn.tool("Read", {"file_path": "data.txt"})] * 5 + [Turn.text("ok")] * 2
    loop = loop_for(tmp_path, turns, clock=clock)
    loop.run("read")
    clock.now += 301  # past the 5-minute TTL: the cache is gone
    loop.run("again")
    results = [b for m in sent(loop.model)[-1].messages for b in m["content"]]
    cleared = [b for b in results if b.get("content") == CLEARED]
    assert len(cleared) == 2  # all but the last three turns with results


def test_the_transcript_starts_anew_at_each_compaction_and_resumes_from_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.transcript.jsonl"
    loop = loop_for(tmp_path, [Turn.text("one"), Turn.text("Summary: said one."), Turn.text("two")])
    loop.transcript = Transcript(path)
    loop.run("first")
    loop.compact()
    loop.run("second")
    events = read_transcript(path)
    assert events[0]["kind"] == "compact_boundary" and "first" not in json.dumps(events[1:])
    assert conversation_of(events) == loop.messages
    (segment,) = (tmp_path / "a.transcript.history").iterdir()
    assert segment.name == "0001.jsonl.gz"


# caching


def test_breakpoints_mark_the_previous_end_too_so_many_calls_still_read_the_cache(
    tmp_path: Path,
) -> None:
    many = Turn.tools([("Read", {"file_path": f"f{i}.txt"}) for i in range(15)])
    loop = loop_for(tmp_path, [Turn.tool("Read", {"file_path": "a"}), many, Turn.text("ok")])
    loop.run("read them all")
    third = sent(loop.model)[2]
    marked = [
        (i, j)
        for i, m in enumerate(third.messages)
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert marked == [(2, 0), (4, 14)]  # where the last request ended, and the end now
    assert "cache_control" in third.tools[-1] and "cache_control" in third.system[-1]
    # 30 blocks since the last request's end: more than the API's 20-block look-back
    assert sum(len(m["content"]) for m in third.messages[3:]) == 30


def test_an_agent_seen_idle_past_five_minutes_asks_for_the_hour_ttl(tmp_path: Path) -> None:
    clock = Clock()
    loop = loop_for(tmp_path, [Turn.text("a"), Turn.text("b"), Turn.text("c")], clock=clock)
    loop.run("one")
    clock.now += 60
    loop.run("two")
    clock.now += 600
    loop.run("three")
    ttls = [r.system[-1]["cache_control"].get("ttl") for r in sent(loop.model)]
    assert ttls == [None, None, "1h"]
    third = sent(loop.model)[2]
    marks = [
        b["cache_control"] for m in third.messages for b in m["content"] if "cache_control" in b
    ]
    assert marks and all(mark.get("ttl") == "1h" for mark in marks)  # one TTL in a request


# retries and limits


def test_a_too_large_max_tokens_shrinks_to_fit_and_the_window_is_learned(tmp_path: Path) -> None:
    refused = Turn.failure(
        400,
        message="input length and `max_tokens` exceed context limit: 30000 + 128000 > 50000, "
        "decrease input length or `max_tokens` and try again",
    )
    loop = loop_for(tmp_path, [refused, Turn.text("fits")], link=Waits())
    assert loop.run("go").text == "fits"
    first, second = sent(loop.model)
    assert first.max_tokens == 128_000 and second.max_tokens == 50_000 - 30_000 - 256
    assert loop.settings.window == 50_000 and not loop.link.paused  # type: ignore[union-attr]


def test_a_broken_stream_is_retried_and_then_asked_for_without_streaming(tmp_path: Path) -> None:
    broken = Turn.text("partial")
    broken.fault = "overloaded"  # type: ignore[attr-defined]
    loop = loop_for(tmp_path, [broken, broken, Turn.text("whole")], link=Waits())
    assert loop.run("go").text == "whole"
    assert [r.stream for r in sent(loop.model)] == [True, True, False]


def test_retries_follow_the_environment_and_bad_values_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from teammate.agent.retries import retries_from
    from teammate.api.model_settings import SettingsValueError

    assert retries_from({}) == 10 and retries_from({"CLAUDE_CODE_MAX_RETRIES": "3"}) == 3
    for bad in ("16", "-1", "many"):
        with pytest.raises(SettingsValueError, match="CLAUDE_CODE_MAX_RETRIES"):
            retries_from({"CLAUDE_CODE_MAX_RETRIES": bad})
    assert [RetryPolicy(rand=lambda: 0.0).delay(n) for n in (1, 2, 7, 8)] == [0.5, 1, 32, 32]
    assert RetryPolicy().delay(1, retry_after=12.5) == 12.5
