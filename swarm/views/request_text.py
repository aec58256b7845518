"""How a request waiting for the lead is shown to a person: the tool and the real input it would
act on, apart from the description the teammate wrote about it.

A teammate may be hostile, and the description of a permission request is its own words: it
may say ``Run: ls docs`` of ``rm -rf ~``. So what a person approves is always shown from the
request's input (`target`: a Bash command, a file tool's path, a host, else the whole input as
JSON), in full and escaped (`protocols.printable`); the description follows on a line of its own,
labelled as the teammate's. `target` is raw text (for JSON and for callers that escape it
themselves); `ask_line` and `details` are escaped, ready to print.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from protocols.printable import printable, printable_line

if TYPE_CHECKING:
    from swarm.team.approvals import Pending

FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead"})
PLAN_KIND = "plan_approval_request"
QUESTION_TOOL = "AskUserQuestion"  # teammate.tools.questions' request: its questions are shown
DESCRIPTION_LABEL = "the teammate's description (unverified)"


def target(tool: str, tool_input: dict[str, Any]) -> str:
    """What a call of `tool` with `tool_input` acts on, unescaped: a Bash command, a file tool's
    path, a network host; the whole input as JSON for anything else."""
    for key, tools in (
        ("command", {"Bash"}),
        ("file_path", FILE_TOOLS),
        ("notebook_path", FILE_TOOLS),
        ("host", {"network"}),
    ):
        value = tool_input.get(key)
        if tool in tools and isinstance(value, str):
            return value
    return json.dumps(tool_input, ensure_ascii=False, default=str)


def ask_line(pending: Pending) -> str:
    """``Bash: <the full command>``, ``Write: <path>``, ``ExitPlanMode: a plan``,
    ``AskUserQuestion: 2 questions``: one line, escaped."""
    what = "a plan" if pending.kind == PLAN_KIND else target(pending.tool, pending.input)
    if pending.tool == QUESTION_TOOL:
        count = len(pending.input.get("questions") or [])
        what = f"{count} question{'s' if count != 1 else ''} (swarm answer {pending.id} ...)"
    return f"{printable_line(pending.tool)}: {printable_line(what)}"


def details(pending: Pending) -> list[str]:
    """The lines shown under `ask_line`, escaped: a plan's content (its lines kept), or the
    teammate's description of a permission request when it says something else than the
    input does (without the label of the sub-agent that asked: `Pending.agent`)."""
    if pending.kind == PLAN_KIND:
        return printable(pending.description).splitlines() or ["(an empty plan)"]
    if pending.tool == QUESTION_TOOL:
        return [printable_line(line) for line in question_lines(pending.input)]
    asked = pending.asked  # without the label of the sub-agent that asked
    if pending.kind not in ("permission_request", "file") or not asked:
        return []  # a sandbox request's description is swarm's own ("connect to HOST")
    if asked == target(pending.tool, pending.input):
        return []
    return [f"{DESCRIPTION_LABEL}: {printable_line(asked)}"]


def question_lines(tool_input: dict[str, Any]) -> list[str]:
    """A question request (`teammate.tools.questions`) as a person reads it, unescaped: each
    question, then its options, numbered (what `swarm answer` takes)."""
    lines: list[str] = []
    questions = tool_input.get("questions")
    for number, question in enumerate(questions if isinstance(questions, list) else [], 1):
        if not isinstance(question, dict):
            continue
        several = " (several may be chosen: 1,3)" if question.get("multiSelect") else ""
        lines.append(f"{number}. {question.get('question', '')}{several}")
        for index, option in enumerate(question.get("options") or [], 1):
            if isinstance(option, dict):
                label, about = option.get("label", ""), option.get("description", "")
                lines.append(f"   {index}) {label}: {about}")
    return lines
