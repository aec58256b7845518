"""The lead agent: a Claude agent loop (teammate's `AgentLoop`) with the team-management tools,
run on its own thread so the console keeps showing messages and requests while it thinks. Its
MCP servers are those of the project's ``.mcp.json`` and settings files (`teammate.mcp`),
started in the background when it starts and stopped with it.

What the human types is queued, one turn each, in order. Teammates' messages reach it in the
order they arrive, each once: between a running turn's model calls, or (when no turn is running
or one ends before taking them) as the input of a turn of their own. `LeadLink` keeps them and
whether a turn runs under one lock; the queue then only carries a wake-up, never the messages.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from protocols.errors import Error
from protocols.inbox.entry import InboxEntry, format_for_model
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.trace_context import telemetry_enabled
from protocols.values import MemberState
from swarm.lead.tools import LEAD_TOOLS, LeadLink, spawn_teammate
from teammate.agent.context import claude_md_text
from teammate.agent.fork import fork_enabled
from teammate.agent.loop import AgentLoop
from teammate.agent.subagents import Parent, SubAgents
from teammate.agent.transcript import Transcript
from teammate.api.model import Model, ModelError
from teammate.brains.claude import TEAMMATE_RULES
from teammate.budget import Budget
from teammate.config.definitions import load_agent
from teammate.config.settings import Settings, layered_settings
from teammate.config.skills import Skill, SkillSet, body_text, catalogue_text, discover
from teammate.hooks import Hooks, settings_hooks
from teammate.mcp.agent import Reporting
from teammate.mcp.client import McpManager
from teammate.mcp.config import configured_servers
from teammate.mcp.tools import McpToolbox
from teammate.permissions.policy import PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.telemetry.spans import LEAD_SERVICE, lead_turn_span
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolContext
from teammate.tools.files import read
from teammate.tools.search import glob, grep
from teammate.tools.skill import skill
from teammate.tools.team import send_message, task_create, task_get, task_list, task_update

LEAD_PROMPT = """You are the team lead of team {team!r}, working for a person at the console.

- Spawn teammates with the Agent tool (always give a `name`; `subagent_type` picks an agent
  definition; `mode: "plan"` makes the teammate send you a plan before it changes anything).
  Each teammate is its own process; the prompt you give is its first message.
- Talk to teammates with SendMessage (`to: "*"` reaches everyone). Their messages reach you as
  <teammate-message> blocks. A teammate goes idle after every turn: that is normal, not an
  error; it wakes when it gets a message or a task.
- Keep work on the task board (TaskCreate, TaskUpdate, TaskList, TaskGet): idle teammates claim
  open, unblocked tasks on their own. A task listed [failed] waits for you: TaskGet shows why;
  TaskUpdate it to status "pending" to retry it (an idle teammate takes it), or delete it.
- The person approves teammates' permission and plan requests; you see the outcome.
- To stop a teammate, send it {{"type": "shutdown_request"}} with SendMessage. TeamDelete only
  works once every teammate has shut down.
- You can read files (Read, Glob, Grep) but do the work through teammates.
Working directory: {cwd}
"""


def lead_prompt(paths: TeamPaths, cwd: Path, skills: dict[str, Skill]) -> str:
    """The lead agent's system prompt, with the project's and user's CLAUDE.md and the skills
    catalogue at the end."""
    context = "\n\n".join(t for t in (claude_md_text(cwd, paths.root), catalogue_text(skills)) if t)
    prompt = LEAD_PROMPT.format(team=paths.team, cwd=cwd) + TEAMMATE_RULES
    return f"{prompt}\n{context}" if context else prompt


def lead_policy(settings: Settings | None, cwd: Path) -> PermissionPolicy:
    """The lead agent's policy: ``default`` with the settings files' rules, which are what
    lets a non-read-only MCP tool run (the lead has nobody to ask)."""
    rules = settings.rules if settings is not None else {}
    return PermissionPolicy(
        "default",
        cwd,
        allow=rules.get("allow", []),
        deny=rules.get("deny", []),
        ask=rules.get("ask", []),
    )


class _Wake:
    """Queued when teammates' messages wait and no turn is running to take them."""


_WAKE = _Wake()


class _Compact(str):
    """A person's ``/compact`` (its instructions), queued as a turn of its own."""


class LeadAgent:
    def __init__(
        self,
        model: Model,
        link: LeadLink,
        say: Callable[[str], None],
        transcript_path: Path | None = None,
        budget: Budget | None = None,
    ) -> None:
        paths: TeamPaths = link.paths
        self.link = link
        self.say = say
        self.reporter = StatusReporter(paths, LEAD_NAME, model.name)
        if budget is not None:  # its own and its sub-agents' calls count (`swarm lead`)
            self.reporter.attach_budget(budget)
        self.skills = discover(link.cwd, paths.root)
        usable = any(s.model_invocable for s in self.skills.values())
        tools = [read, glob, grep, send_message, task_create, task_update, task_list, task_get]
        tools += [skill] if usable else []
        settings = self._settings(paths, link.cwd)
        policy = lead_policy(settings, link.cwd)
        # the hooks of the settings where the lead runs (the user's, the project's, the local)
        hooks = (
            settings_hooks(settings, link.cwd)
            if settings is not None
            else Hooks(project_dir=link.cwd)
        ).with_session(str(uuid.uuid4()), str(transcript_path or ""))
        ctx = ToolContext(
            cwd=link.cwd,
            agent_name=LEAD_NAME,
            team=link,
            skills=SkillSet(self.skills, policy.grant),
            hooks=hooks,
            files_dir=paths.agent_files(LEAD_NAME),
        )
        ctx.spawn_teammate = functools.partial(spawn_teammate, link)
        self.mcp = McpManager(link.cwd)
        servers = (
            configured_servers(link.cwd, settings.mcp_servers, settings.origins)
            if settings is not None
            else configured_servers(link.cwd)
        )
        # the lead's sub-agents read and search, as the lead does: the work is the teammates'
        self.subagents = SubAgents(
            Parent(
                name=LEAD_NAME,
                model=model,
                tools=[read, glob, grep, *([skill] if usable else [])],
                policy=policy,
                ctx=ctx,
                agents=lambda kind: load_agent(kind, project_dir=link.cwd),
                directory=paths.subagents_dir(LEAD_NAME),
                reporter=self.reporter,
                link=link,
                wake=link.wake,
                fork=fork_enabled(os.environ),
                hooks=hooks,
                mcp=self.mcp,
                mcp_servers=servers,
            )
        )
        ctx.subagents = self.subagents
        link.on_wake = lambda: self._inputs.put(_WAKE)
        self.loop = AgentLoop(
            model,
            [*tools, *LEAD_TOOLS],
            policy,
            lead_prompt(paths, link.cwd, self.skills if usable else {}),
            ctx,
            link=link,
            transcript=Transcript(transcript_path),
            reporter=self.reporter,
            say=lambda text: say(f"lead: {text}"),
            notices=self.subagents.take_notices,
            hooks=hooks,
            mcp=McpToolbox(self.mcp),
        )
        self._report_mcp()
        self.mcp.start(servers.values())
        self.subagents.parent.loop = self.loop  # what a fork child starts from
        self._inputs: queue.Queue[str | _Wake | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="lead-agent", daemon=True)

    def start(self) -> LeadAgent:
        if telemetry_enabled():  # this process's spans are the lead's (docs/telemetry.md)
            from teammate.telemetry import tracing

            tracing.setup(LEAD_SERVICE)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the agent: its running sub-agents are stopped (killed) first."""
        self.subagents.stop_all()
        self._inputs.put(None)
        self._thread.join(timeout=5)
        self.mcp.close()

    def _report_mcp(self) -> None:
        """MCP servers' states to the status file, the transcript and the console."""
        Reporting(
            self.mcp,
            self.reporter.mcp_servers,
            lambda view: self.loop.transcript.record(
                "mcp_server",
                server=view.key,
                state=view.state,
                error=view.error,
                tools=[t.name for t in view.tools],
            ),
            lambda text: self.say(f"lead: {text}"),
            None,  # it is the lead: the console shows what it says
        )

    def _settings(self, paths: TeamPaths, cwd: Path) -> Settings | None:
        """The project's settings files, for their permission rules and MCP servers (None,
        said, when one cannot be read: then only ``.mcp.json`` is used)."""
        try:
            return layered_settings(cwd, paths.root)
        except Error as exc:
            self.say(f"lead: settings files not used: {exc}")
            return None

    def tell(self, text: str) -> None:
        """A person's message: the agent's next turn (queued behind a running one)."""
        self._inputs.put(text)

    def compact(self, instructions: str = "") -> str:
        """A person's ``/compact``: before the running turn's next model request, or at once
        (a turn of its own). What to tell the person."""
        if self.busy:
            self.loop.request_compaction(instructions)
            return "the lead agent compacts before its next model request"
        self._inputs.put(_Compact(instructions))
        return "the lead agent compacts its conversation now"

    def invoke_skill(self, name: str, args: str) -> str | None:
        """A person's ``/name args``: the skill's instructions as the agent's next turn, or a
        ``context: fork`` skill run as a background sub-agent (its answer comes back as a
        notification). None when there is no such skill for people to invoke."""
        found = self.skills.get(name)
        if found is None or not found.user_invocable:
            return None
        text = body_text(found, args or None)
        if found.context == "fork":
            call = AgentCall(
                description=f"/{name}",
                prompt=text,
                subagent_type=found.agent or "general-purpose",
                run_in_background=True,
            )
            self.subagents.launch(call, tool_use_id="")
            return f"/{name} runs in a sub-agent; its answer comes to the lead agent"
        self.tell(
            f"<command-name>/{name}</command-name>\n<command-args>{args}</command-args>\n\n{text}"
        )
        return f"/{name} goes to the lead agent"

    @property
    def busy(self) -> bool:
        """Is a turn running?"""
        return self.link.busy

    def hand_over(self, entries: list[InboxEntry]) -> None:
        """Teammate events (the console's thread): between the current turn's model calls, or
        as a new turn."""
        if entries and not self.link.deliver(entries):
            self._inputs.put(_WAKE)

    def _run(self) -> None:
        while (item := self._inputs.get()) is not None:
            self.link.begin_turn()
            try:
                if isinstance(item, _Compact):
                    self._compact(str(item))
                elif isinstance(item, str):
                    self._turn(item)
                # else messages or sub-agents' notifications, unless an earlier turn took them
                elif (arrived := self.link.between_turns()) or self.subagents.notices_waiting():
                    self._turn(format_for_model(arrived) if arrived else None)
            finally:
                # delivered, or reported, after the turn's last take
                if self.link.end_turn() or self.subagents.notices_waiting():
                    self._inputs.put(_WAKE)

    def _compact(self, instructions: str) -> None:
        self.reporter.set(MemberState.WORKING, "compacting its conversation")
        before = self.loop.context_size()
        try:
            if self.loop.compact("manual", instructions):
                after = self.loop.context_size()
                self.say(f"lead: compacted the conversation: {before:,} -> {after:,} tokens")
        except ModelError as exc:
            self.say(f"lead: could not compact: {exc}")
        except Exception as exc:  # the console must outlive any bug in a compaction
            self.say(f"lead: the compaction failed: {type(exc).__name__}: {exc}")
        finally:
            self.loop.settle()
            self.reporter.set(MemberState.IDLE, "waiting")

    def _turn(self, text: str | None) -> None:
        self.reporter.set(MemberState.WORKING, "thinking")
        try:
            with lead_turn_span(f"{LEAD_NAME}@{self.link.paths.team}"):
                result = self.loop.run(text)
            if result.stop == "max_turns":
                self.say(f"lead: stopped after {result.turns} model turns")
            elif result.stop == "refusal":
                self.say("lead: the model refused to answer")
            elif result.stop == "max_tokens":
                self.say("lead: the model's answers were cut off by the output limit")
        except ModelError as exc:
            self.say(f"lead: the model call failed: {exc}")
        except Exception as exc:  # the console must outlive any bug in a turn
            self.say(f"lead: the turn failed: {type(exc).__name__}: {exc}")
        finally:
            self.reporter.set(MemberState.IDLE, "waiting")
