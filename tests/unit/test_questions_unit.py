"""AskUserQuestion's input as Claude Code's (1-4 questions, 2-4 options each), its answers read
from a response, and how `swarm answer` reads a person's answers (numbers, labels, own words)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarm.team.approvals import QuestionError, _chosen
from teammate.link import Approval, PermissionAsk
from teammate.tools.base import ToolContext, ToolError
from teammate.tools.questions import answers_of, ask_user_question

QUESTION = {
    "question": "Which checks?",
    "header": "Checks",
    "options": [
        {"label": "Tests", "description": "pytest"},
        {"label": "Lint", "description": "ruff"},
    ],
    "multiSelect": True,
}


class Lead:
    def __init__(self, answer: Approval) -> None:
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        self.asked.append({"tool": ask.tool_name, **ask.tool_input})
        return self.answer


def test_the_schema_and_its_limits(tmp_path: Path) -> None:
    schema = ask_user_question.schema()["input_schema"]
    assert set(schema["properties"]) == {"questions", "answers", "metadata"}
    ctx = ToolContext(cwd=tmp_path)
    with pytest.raises(ToolError, match="questions"):
        ask_user_question.run(ctx, {"questions": []})
    one_option = {**QUESTION, "options": QUESTION["options"][:1]}
    with pytest.raises(ToolError, match="options"):
        ask_user_question.run(ctx, {"questions": [one_option]})


def test_the_lead_is_asked_and_its_answers_come_back(tmp_path: Path) -> None:
    lead = Lead(Approval(True, updated_input={"answers": {"Which checks?": "Tests, Lint"}}))
    ctx = ToolContext(cwd=tmp_path, team=lead)  # type: ignore[arg-type]
    out = ask_user_question.run(ctx, {"questions": [QUESTION]})
    assert '"Which checks?": Tests, Lint' in out and lead.asked[0]["tool"] == "AskUserQuestion"
    denied = ToolContext(cwd=tmp_path, team=Lead(Approval(False, "later")))  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="did not answer: later"):
        ask_user_question.run(denied, {"questions": [QUESTION]})
    assert answers_of({"answers": {"q": 1, "r": ["x"]}}) == {"q": "1"}


@pytest.mark.parametrize(
    ("given", "chosen"),
    [("1", "Tests"), ("lint", "Lint"), ("2,1", "Lint, Tests"), ("9", "9"), ("both", "both")],
)
def test_answers_are_option_numbers_labels_or_own_words(given: str, chosen: str) -> None:
    assert _chosen(QUESTION, given) == chosen


def test_an_empty_answer_is_refused() -> None:
    with pytest.raises(QuestionError, match="empty answer"):
        _chosen({**QUESTION, "multiSelect": False}, "  ")
