"""The sub-agent tools: Agent (run a sub-agent in this process), TaskOutput and TaskStop, with
Claude Code's names and inputs. They act through `ctx.subagents` (`teammate.agent.subagents`).

A teammate's Agent runs sub-agents only: a teammate cannot spawn teammates (the roster is
flat), so a `name` with a team is refused with the reason. The lead agent's Agent tool
(`swarm.lead.tools`) spawns a teammate for a `name` and calls `run_subagent` otherwise.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from protocols.values import PermissionMode
from teammate.tools.base import ToolContext, ToolError, tool

AGENT_DESCRIPTION = (
    "Launch a sub-agent to handle a task on its own: research a question, review a change, "
    "verify a build. It works with its own tools and context and answers you when done. "
    "`subagent_type` picks an agent definition (general-purpose when omitted). It runs while "
    "you wait, unless `run_in_background` is true: then you are told when it finishes (a "
    "<task-notification>) and can go on meanwhile. Continue a sub-agent with SendMessage to "
    "its agentId."
)


def run_subagent(
    ctx: ToolContext,
    description: str,
    prompt: str,
    subagent_type: str | None,
    model: str | None,
    run_in_background: bool | None,
    name: str | None,
    cwd: str | None,
    isolation: str | None,
) -> str:
    """A sub-agent for this Agent call (both the teammates' and the lead's tool)."""
    return ctx.sub_agents().launch(
        description=description,
        prompt=prompt,
        subagent_type=subagent_type,
        model=model,
        run_in_background=bool(run_in_background),
        name=name,
        cwd=cwd,
        isolation=isolation,
        tool_use_id=ctx.tool_use_id,
    )


@tool("Agent", AGENT_DESCRIPTION, kind="team")
def agent(
    ctx: ToolContext,
    description: Annotated[str, Field(description="A short (3-5 word) description of the task")],
    prompt: Annotated[str, Field(description="The task for the agent to perform")],
    subagent_type: Annotated[
        str | None, Field(description="The type of specialized agent to use for this task")
    ] = None,
    model: Annotated[
        Literal["sonnet", "opus", "haiku"] | None,
        Field(description="Optional model override for this agent"),
    ] = None,
    run_in_background: Annotated[
        bool | None, Field(description="Run the agent in the background; you will be notified")
    ] = None,
    name: Annotated[str | None, Field(description="Name for the spawned agent")] = None,
    team_name: Annotated[str | None, Field(description="Team name for spawning")] = None,
    mode: Annotated[
        PermissionMode | None,
        Field(description="Permission mode for spawning a teammate"),
    ] = None,
    isolation: Annotated[Literal["worktree"] | None, Field(description="Isolation mode")] = None,
    cwd: Annotated[
        str | None, Field(description="Working directory for the agent (not with isolation)")
    ] = None,
) -> str:
    if team_name or mode:
        raise ToolError(
            "only the team lead spawns teammates (the team is flat); leave out team_name and "
            "mode to run a sub-agent of your own, or ask the lead for a teammate"
        )
    return run_subagent(
        ctx, description, prompt, subagent_type, model, run_in_background, name, cwd, isolation
    )


@tool(
    "TaskOutput",
    "The status and output so far of a background sub-agent; with block (the default) waits "
    "up to `timeout` milliseconds for it to finish. Reading its output_file works too.",
    kind="read",
)
def task_output(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task ID to get output from")],
    block: Annotated[bool, Field(description="Whether to wait for completion")] = True,
    timeout: Annotated[int, Field(description="Max wait time in ms", ge=0, le=600_000)] = 30_000,
) -> str:
    return ctx.sub_agents().output(task_id, block, timeout / 1000)


@tool("TaskStop", "Stop a running background sub-agent by its ID.", kind="team")
def task_stop(
    ctx: ToolContext,
    task_id: Annotated[
        str | None, Field(description="The ID of the background task to stop")
    ] = None,
    shell_id: Annotated[str | None, Field(description="Deprecated: use task_id instead")] = None,
) -> str:
    target = task_id or shell_id
    if not target:
        raise ToolError("give the task_id of the background task to stop")
    return ctx.sub_agents().stop(target)


SUBAGENT_TOOLS = (agent, task_output, task_stop)
