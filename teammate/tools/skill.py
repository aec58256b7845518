"""The Skill tool (Claude Code's name and input): load a skill's instructions into the
conversation on demand (`teammate.config.skills`), or, for a ``context: fork`` skill, run it in
a sub-agent and return only its answer. A loaded skill's ``allowed-tools`` are allowed, and its
``hooks`` are in force, until the agent's current piece of work ends."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from protocols.errors import Error
from teammate.config.skills import body_text
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolContext, ToolError, tool

SKILL_DESCRIPTION = (
    "Load a skill: instructions for a particular kind of job, listed under Skills in your "
    "system prompt. Call it before starting a job a skill fits; the instructions come back as "
    "this tool's result (a fork skill runs on its own and returns its answer). Follow them."
)


@tool("Skill", SKILL_DESCRIPTION, kind="read")
def skill(
    ctx: ToolContext,
    skill: Annotated[str, Field(description='The skill name, e.g. "pdf" or "review"')],
    args: Annotated[
        str | None, Field(description="Optional arguments for the skill (what to work on)")
    ] = None,
) -> str:
    found = ctx.skills.skills.get(skill.removeprefix("/")) if ctx.skills else None
    if found is None or not found.model_invocable:
        known = [
            s.name for s in (ctx.skills.skills.values() if ctx.skills else ()) if s.model_invocable
        ]
        raise ToolError(
            f"Unknown skill: {skill!r}; available: {', '.join(sorted(known)) or 'none'}"
        )
    text = body_text(found, args)
    if found.context == "fork":
        call = AgentCall(
            description=f"skill {found.name}",
            prompt=text,
            subagent_type=found.agent or "general-purpose",
            model=found.model if found.model in ("sonnet", "opus", "haiku") else None,
        )
        return ctx.sub_agents().launch(call, ctx.tool_use_id)
    assert ctx.skills is not None
    ctx.skills.grant(list(found.allowed_tools))
    allowed = ", ".join(str(rule) for rule in found.allowed_tools)
    note = f"\n\n(Allowed without asking while you do this: {allowed})" if allowed else ""
    if found.hooks and ctx.hooks is not None:
        try:
            ctx.hooks.activate(found.hooks, f"skill {found.name} ({found.directory}/SKILL.md)")
        except Error as exc:  # the skill still loads; its hooks are said to be broken
            note += f"\n\n(This skill's hooks are not in force: {exc})"
    return f"Launching skill: {found.name}\n\n{text}{note}"
