"""Claude Code's `AskUserQuestion` and `EnterPlanMode` for a Claude agent.

`AskUserQuestion` puts one to four questions, each with two to four options, to the person
behind the team: for a teammate that is its lead, so the questions travel as a permission
request (tool ``AskUserQuestion``, the questions as its input: `swarm permissions`, `swarm
watch`, `swarm lead`'s console and the MCP lead tools show it), answered with `swarm answer ID`
(a permission response whose ``updated_input`` carries ``answers``: question -> the chosen
label(s), or the person's own words). A refusal or no answer in time is the tool's error.

`EnterPlanMode` puts the agent in plan mode (read-only tools) until its plan is approved
(`ExitPlanMode`); the brain that offers it gives `ToolContext.enter_plan_mode`.

`answers_of` reads the answers of a response (`swarm.team.request_text.question_lines` shows
a question request to a person).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from teammate.link import PermissionAsk
from teammate.tools.base import ToolContext, ToolError, tool

QUESTION_TOOL = "AskUserQuestion"


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Annotated[str, Field(min_length=1, description="The choice shown (1-5 words)")]
    description: Annotated[str, Field(description="What choosing it means")]
    preview: Annotated[str | None, Field(description="Content shown with this option")] = None


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: Annotated[str, Field(min_length=1, description="The complete question")]
    header: Annotated[str, Field(description="A very short label (max 12 characters)")]
    options: Annotated[list[Option], Field(min_length=2, max_length=4)]
    multiSelect: Annotated[bool, Field(description="Whether several options may be chosen")] = False


@tool(
    QUESTION_TOOL,
    "Ask the user (your team lead) one to four questions, each with two to four options, "
    "when you need their choice to go on: a library, an approach, what to keep. They may "
    "also answer in their own words. The call waits for their answer. Use it for decisions "
    "only they can make, not for things you can find out yourself.",
    kind="team",
)
def ask_user_question(
    ctx: ToolContext,
    questions: Annotated[
        list[Question], Field(min_length=1, max_length=4, description="Questions to ask (1-4)")
    ],
    answers: Annotated[
        dict[str, str] | None, Field(description="Answers already given (filled in by the UI)")
    ] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="Extra information")] = None,
) -> str:
    asked = [q.model_dump(exclude_none=True) for q in questions]
    if answers:  # answered already (a resumed call): nothing to ask again
        return answered_text(asked, answers)
    link = ctx.link()
    first = questions[0].question
    more = f" (and {len(questions) - 1} more)" if len(questions) > 1 else ""
    ask = PermissionAsk(
        QUESTION_TOOL, {"questions": asked}, f"Question: {first}{more}", ctx.tool_use_id, []
    )
    answer = link.ask_permission(ask)
    if not answer.approved:
        raise ToolError(f"The user did not answer: {answer.reason or 'no reason given'}")
    given = answers_of(answer.updated_input or {})
    if not given:
        raise ToolError("The user answered without choosing anything; ask again or go on.")
    return answered_text(asked, given)


def answers_of(updated_input: dict[str, Any]) -> dict[str, str]:
    """The answers a response carries (question -> answer), the ones that are text."""
    found = updated_input.get("answers")
    if not isinstance(found, dict):
        return {}
    return {str(k): str(v) for k, v in found.items() if isinstance(v, str | int | float)}


def answered_text(questions: list[dict[str, Any]], answers: dict[str, str]) -> str:
    lines = ["The user answered your questions:"]
    for question in questions:
        text = question.get("question", "")
        lines.append(f'- "{text}": {answers.get(text, "(no answer)")}')
    lines.append("Go on with these answers in mind.")
    return "\n".join(lines)


@tool(
    "EnterPlanMode",
    "Switch to plan mode for a task that needs a design before changes: you may read and "
    "search but not change anything until you call ExitPlanMode with your plan and the lead "
    "approves it.",
    kind="team",
)
def enter_plan_mode(ctx: ToolContext) -> str:
    if ctx.enter_plan_mode is None:
        raise ToolError("This agent cannot enter plan mode.")
    return ctx.enter_plan_mode()


QUESTION_TOOLS = (ask_user_question, enter_plan_mode)
