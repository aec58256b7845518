"""The sub-agent tools: Agent (run a sub-agent in this process), TaskOutput and TaskStop, with
Claude Code's names and inputs. They act through `ctx.subagents` (`teammate.agent.subagents`).

One Agent tool serves every agent. Where the context can spawn teammates (the lead agent sets
`ToolContext.spawn_teammate`, `swarm.lead.tools`), a call with a `name` or `team_name` spawns a
teammate; elsewhere such a call is refused with the reason (the team is flat: a teammate cannot
spawn teammates) and every other call runs a sub-agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from protocols.values import PermissionMode
from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.shells import Shell, tail_text

AGENT_DESCRIPTION = (
    "Launch a sub-agent to handle a task on its own: research a question, review a change, "
    "verify a build. It works with its own tools and context and answers you when done. "
    "`subagent_type` picks an agent definition (general-purpose when omitted). It runs while "
    "you wait, unless `run_in_background` is true: then you are told when it finishes (a "
    "<task-notification>) and can go on meanwhile. Continue a sub-agent with SendMessage to "
    "its agentId. Where forking is enabled (SWARM_FORK_SUBAGENT=1), omitting `subagent_type` "
    "forks you instead: a background copy of you that knows this whole conversation, does the "
    "`prompt` as its directive and reports in a fixed format; fork several at once in one "
    "turn to share the cached conversation."
)
FORK_REFUSED = (
    "You are a forked worker: you cannot fork again or start agents of your own. Do the work "
    "yourself with your tools and report it."
)


@dataclass(frozen=True)
class AgentCall:
    """What an Agent call asks for (Claude Code's input)."""

    description: str
    prompt: str
    subagent_type: str | None = None
    model: str | None = None
    run_in_background: bool = False
    name: str | None = None
    team_name: str | None = None
    mode: PermissionMode | None = None
    isolation: str | None = None
    cwd: str | None = None
    host: str | None = None  # swarm's: the host a spawned teammate runs on (the lead's tool)


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
        Field(description='Permission mode for a spawned teammate ("plan": plan approval first)'),
    ] = None,
    isolation: Annotated[Literal["worktree"] | None, Field(description="Isolation mode")] = None,
    cwd: Annotated[
        str | None, Field(description="Working directory for the agent (not with isolation)")
    ] = None,
) -> str:
    call = AgentCall(
        description, prompt, subagent_type, model, bool(run_in_background), name, team_name,
        mode, isolation, cwd,
    )  # fmt: skip
    if ctx.forked:
        raise ToolError(FORK_REFUSED)
    if ctx.spawn_teammate is not None and (name or team_name):
        return ctx.spawn_teammate(call)
    if team_name or mode:
        raise ToolError(
            "only the team lead spawns teammates (the team is flat); leave out team_name and "
            "mode to run a sub-agent of your own, or ask the lead for a teammate"
        )
    return ctx.sub_agents().launch(call, ctx.tool_use_id)


@tool(
    "TaskOutput",
    "The status and output so far of a background sub-agent or command; with block (the "
    "default) waits up to `timeout` milliseconds for it to finish. Reading its output file "
    "works too.",
    kind="read",
)
def task_output(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task ID to get output from")],
    block: Annotated[bool, Field(description="Whether to wait for completion")] = True,
    timeout: Annotated[int, Field(description="Max wait time in ms", ge=0, le=600_000)] = 30_000,
) -> str:
    shell = ctx.shells.find(task_id) if ctx.shells is not None else None
    if shell is not None:
        if block:
            shell.wait(timeout / 1000)
        return shell_output(shell)
    return ctx.sub_agents().output(task_id, block, timeout / 1000)


def shell_output(shell: Shell) -> str:
    """A command's state and the tail of its output."""
    state = (
        shell.state if shell.exit_code is None else f"{shell.state} (exit code {shell.exit_code})"
    )
    tail = tail_text(shell.stdout, lines=40) or "(no output yet)"
    errors = tail_text(shell.stderr, lines=10)
    text = f"{shell.id}: {state}\noutput file: {shell.stdout}\n{tail}"
    return text + (f"\nstderr:\n{errors}" if errors else "")


@tool(
    "TaskStop",
    "Stop a running background sub-agent, command or monitor by its ID (KillShell and "
    "KillBash are its old names).",
    kind="team",
)
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
    shell = ctx.shells.find(target) if ctx.shells is not None else None
    if shell is not None:
        if not shell.running:
            raise ToolError(f"{target} is not running: it {shell.state}")
        assert ctx.shells is not None
        ctx.shells.stop(target)
        return f"Stopped {target} (its whole process group): {shell.command[:200]}"
    return ctx.sub_agents().stop(target)


SUBAGENT_TOOLS = (agent, task_output, task_stop)
