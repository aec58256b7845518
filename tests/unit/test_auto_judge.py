"""The auto permission mode's judge: exactly what it is sent, and how its answer decides (a
clear ALLOW or DENY; anything else, or a failed call, asks the lead)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from messages_api import Turn

from teammate.api.model import ScriptedModel
from teammate.permissions.auto import JUDGE_MAX_TOKENS, JUDGE_PROMPT, judge, judge_request


def test_the_judge_is_sent_the_call_and_the_rules_and_nothing_else() -> None:
    rules = {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"], "ask": []}
    call = {"command": "rm -rf build 'x' $(y)"}
    request = judge_request("Bash", call, rules, Path("/work/p"))
    assert request.system == [{"type": "text", "text": JUDGE_PROMPT}]
    assert request.tools == [] and request.max_tokens == JUDGE_MAX_TOKENS
    (message,) = request.messages
    assert message["content"][0]["text"] == (
        "Working directory: /work/p\n"
        f"Permission rules: {json.dumps(rules)}\n"
        "Tool: Bash\n"
        f"Input: {json.dumps(call)}"
    )


def test_only_a_clear_answer_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("teammate.permissions.auto.JUDGE_BACKOFF_S", 0.0)
    answers = {
        "ALLOW: only lists files": ("allow", "auto mode: only lists files"),
        "deny: deletes the build": ("deny", "auto mode: deletes the build"),
        "ASK: not sure": ("ask", "auto mode could not decide: ASK: not sure"),
        "Sure, go ahead": ("ask", "auto mode could not decide: Sure, go ahead"),
    }
    for said, (behavior, reason) in answers.items():
        verdict = judge(ScriptedModel([Turn.text(said)]), "Bash", {}, {}, Path("."))
        assert (verdict.behavior, verdict.reason) == (behavior, reason)
    # a passing failure is tried again (twice); one that goes on, or one that is no passing
    # failure, leaves the call to the lead
    once = ScriptedModel([Turn.failure(529, message="overloaded"), Turn.text("ALLOW: ls")])
    assert judge(once, "Bash", {}, {}, Path(".")).behavior == "allow"
    failing = ScriptedModel([Turn.failure(529, message="overloaded")] * 3)
    verdict = judge(failing, "Bash", {}, {}, Path("."))
    assert verdict.behavior == "ask" and "the auto-mode check failed" in verdict.reason
    refused = ScriptedModel([Turn.failure(400, message="bad"), Turn.text("ALLOW: ls")])
    assert judge(refused, "Bash", {}, {}, Path(".")).behavior == "ask"
