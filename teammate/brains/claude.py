"""The Claude brain: a teammate that thinks with a model through `AgentLoop`.

It builds the system prompt (the agent definition's body, the team-communication rules, where
the team's files are), the tool set the agent definition allows, and the permission policy
(``--permission-mode``, ``--plan-mode-required``, rules from the definition). The runtime hands
it plain messages (`respond`) and claimed tasks (`work`); both continue one conversation.

Hooks (`teammate.hooks`): the loop fires the tool, prompt and Stop hooks; the brain fires
``SessionStart`` at its first turn (its stdout is added to that turn), ``SessionEnd`` when it
stops, and ``TeammateIdle`` before the runtime reports it idle (a block sends it back to work
with the reason, at most `MAX_IDLE_BLOCKS` times in a row).

A task counts as resolved when the model marked it completed (TaskUpdate); a turn that ends
with the task still open is ``blocked`` (Claude Code's word), and says why: the runtime marks
the task failed, to be retried; a refusal of the model fails it ("the model refused"), as do
answers cut off again and again.

Its conversation is compacted by the loop when it fills its window, and when the lead asks
(`compact`: ``swarm compact``, a ``compact_request``); after a compaction the model is told its
team, its lead and the task it holds as the board has it now (`_state`). A resumed teammate
(``--resume``) carries on from its transcript's last compaction (`load_conversation`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from protocols.clock import now_ms
from protocols.fs import safefs
from protocols.fs.jsonio import atomic_write_text
from protocols.inbox.entry import InboxEntry, format_for_model
from protocols.messages.models import ShutdownRequest
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.tasks.model import Task
from teammate.agent.context import agent_context
from teammate.agent.loop import AgentLoop, LoopResult
from teammate.agent.subagents import Parent, SubAgents, cap_from
from teammate.agent.transcript import Transcript, conversation_of
from teammate.agent.transcript_history import load_conversation
from teammate.api.model import Model, ModelError
from teammate.api.model_settings import ModelSettings, SettingsValueError
from teammate.config.definitions import AgentDefinition, load_agent, tool_rules
from teammate.config.settings import settings_files
from teammate.config.skills import Skill, SkillSet, discover
from teammate.hooks import Hooks
from teammate.link import Outcome, TeamLink
from teammate.mcp.agent import AgentServers, Reporting, servers_for
from teammate.mcp.client import McpManager, ServerView
from teammate.mcp.config import ServerConfig
from teammate.permissions.policy import PermissionPolicy, Rule
from teammate.reporter import StatusReporter
from teammate.tools.agents import SUBAGENT_TOOLS
from teammate.tools.base import Tool, ToolContext, ToolError
from teammate.tools.files import edit, read, write
from teammate.tools.lsp import LSP_TOOLS
from teammate.tools.lsp_client import LspClient
from teammate.tools.lsp_servers import ServerRegistry
from teammate.tools.notebook import NOTEBOOK_TOOLS
from teammate.tools.questions import QUESTION_TOOLS
from teammate.tools.search import glob, grep
from teammate.tools.shell import bash, monitor
from teammate.tools.shells import Shells
from teammate.tools.skill import skill
from teammate.tools.team import TEAM_TOOLS
from teammate.tools.web import WEB_TOOLS

MAX_IDLE_BLOCKS = 3  # a TeammateIdle hook may send it back to work this many times in a row
# what sub-agents pick from (Skill only where there are skills)
WORK_TOOLS: tuple[Tool, ...] = (
    bash,
    read,
    write,
    edit,
    glob,
    grep,
    *NOTEBOOK_TOOLS,
    *WEB_TOOLS,
    skill,
)
ALL_TOOLS: tuple[Tool, ...] = (
    *WORK_TOOLS,
    monitor,
    *TEAM_TOOLS,
    *QUESTION_TOOLS,
    *SUBAGENT_TOOLS,
)

TEAMMATE_RULES = """
# Agent Teammate Communication

IMPORTANT: You are running as an agent in a team. To communicate with anyone on your team:
- Use the SendMessage tool with `to: "<name>"` to send messages to specific teammates
- Use the SendMessage tool with `to: "*"` sparingly for team-wide broadcasts

Just writing a response in text is not visible to others on your team - you MUST use the
SendMessage tool.

The user interacts primarily with the team lead. Your work is coordinated through the task
system and teammate messaging.
"""


def turns_from(environ: Mapping[str, str]) -> int | None:
    """``CLAUDE_CODE_MAX_TURNS``: a cap on model turns per piece of work (None: no cap)."""
    value = environ.get("CLAUDE_CODE_MAX_TURNS", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise SettingsValueError(f"CLAUDE_CODE_MAX_TURNS must be a positive integer, not {value!r}")
    return int(value)


def _why_stopped(result: LoopResult) -> str:
    """Why a run ended before the model ended its turn, for the lead."""
    if result.stop == "refusal":
        said = result.text.strip().splitlines()[-1][:200] if result.text.strip() else ""
        return f"the model refused{': ' + said if said else ''}"
    if result.stop == "max_tokens":
        return "the model's answers were cut off by the output token limit again and again"
    return f"stopped after {result.turns} model turns (max turns)"


def system_prompt(
    agent: AgentDefinition, name: str, paths: TeamPaths, cwd: Path, context: str = ""
) -> str:
    """The teammate's system prompt; `context` (CLAUDE.md, its memory) goes at the end."""
    return "\n".join(
        [
            agent.system_prompt.strip(),
            TEAMMATE_RULES,
            "# Your team",
            f"You are {name!r}, a member of team {paths.team!r}; the lead is {LEAD_NAME!r}.",
            f"Team config (members): {paths.config}",
            f"Task list directory: {paths.tasks_dir}",
            f"Working directory: {cwd}",
            "When you finish a task, mark it completed with TaskUpdate, tell the lead what you "
            "did with SendMessage, then check TaskList for more work.",
            *([f"\n{context}"] if context else []),
        ]
    )


def _task_extras(task: Task) -> str:
    """What a task's metadata adds to its prompt: its command (a task given to a Claude
    teammate with ``--for``), to run with Bash, and where it was added."""
    meta = task.metadata or {}
    lines = []
    if isinstance(meta.get("command"), str) and meta["command"].strip():
        lines.append(f"Its command, to run with Bash: {meta['command']}")
    if isinstance(meta.get("cwd"), str) and meta["cwd"]:
        lines.append(f"It was added in {meta['cwd']}.")
    return "".join(line + "\n" for line in lines) + ("\n" if lines else "")


def teammate_tools(
    agent: AgentDefinition, skills: Mapping[str, Skill], extra: tuple[Tool, ...] = ()
) -> tuple[list[Tool], set[str], list[Rule], list[Rule]]:
    """A teammate's tools as its definition says (the team tools always, unless disallowed;
    Skill only where there is a skill it may load), the names its allow-list gives, and the
    definition's allow and deny rules."""
    listed, allow_rules = tool_rules(agent.tools)
    removed, deny_rules = tool_rules(agent.disallowed_tools)
    listed |= {rule.tool_name for rule in allow_rules}
    tools = [
        t
        for t in (*ALL_TOOLS, *extra)
        if (agent.tools is None or t.name in listed or t in TEAM_TOOLS)
        and t.name not in removed
        and (t is not skill or any(s.model_invocable for s in skills.values()))
    ]
    return tools, listed, allow_rules, deny_rules


class ClaudeBrain:
    def __init__(
        self,
        model: Model,
        agent: AgentDefinition,
        name: str,
        paths: TeamPaths,
        cwd: Path,
        permission_mode: str = "default",
        plan_mode_required: bool = False,
        max_turns: int | None = None,
        rules: dict[str, list[Rule]] | None = None,
        reporter: StatusReporter | None = None,
        transcript: Transcript | None = None,
        say: Any = print,
        agents: Callable[[str], AgentDefinition] | None = None,
        fork: bool = False,
        resume: bool = False,
        hooks: Hooks | None = None,
        mcp: McpManager | None = None,
        mcp_servers: Mapping[str, ServerConfig] | None = None,
        tell_lead: Callable[[str], None] | None = None,
        settings: ModelSettings | None = None,
        **loop_options: Any,
    ) -> None:
        skills = discover(cwd, paths.root)
        # its language servers (lspServers in its settings files, else PATH), each started at
        # its first use; the LSP tool only where one can run
        registry = ServerRegistry.from_settings(cwd, settings_files(cwd, paths.root, None))
        self.lsp = LspClient(registry)
        lsp_tools = LSP_TOOLS if registry.available() else ()
        tools, listed, allow_rules, deny_rules = teammate_tools(agent, skills, lsp_tools)
        self.mode_after_plan = permission_mode if permission_mode != "plan" else "default"
        mode = "plan" if plan_mode_required else permission_mode
        extra = rules or {}
        context = agent_context(agent, cwd, paths.root, skills, catalogue=skill in tools)
        self.policy = PermissionPolicy(
            mode,
            cwd,
            allow=[*allow_rules, *context.rules, *extra.get("allow", [])],
            deny=[*deny_rules, *extra.get("deny", [])],
            ask=extra.get("ask", []),
        )
        self.paths = paths
        self.name = name
        self.agent = agent
        self.say = say
        self.hooks = hooks or Hooks(project_dir=cwd)
        self.ctx = ToolContext(
            cwd=cwd,
            agent_name=name,
            hooks=self.hooks,
            skills=SkillSet(skills, self.policy.grant),
            files_dir=paths.agent_files(name),
            lsp=self.lsp,
        )
        self.shells = self.ctx.shells = Shells(lambda: self.ctx.files("shells"))
        if reporter is not None:
            self.shells.changed = lambda: reporter.shells(self.shells.views())
        if transcript is not None:
            self.shells.record = lambda shell: transcript.record(
                "shell",
                id=shell.id,
                command=shell.command[:200],
                state=shell.state,
                exit_code=shell.exit_code,
                output_file=str(shell.stdout),
            )
        self.ctx.exit_plan_mode = self._exit_plan_mode
        self.ctx.enter_plan_mode = self._enter_plan_mode
        parent = Parent(
            name=name,
            model=model,
            tools=[t for t in WORK_TOOLS if t in tools],
            policy=self.policy,
            ctx=self.ctx,
            agents=agents or (lambda kind: load_agent(kind, project_dir=cwd)),
            directory=paths.subagents_dir(name),
            reporter=reporter,
            fork=fork,
            hooks=self.hooks,
        )
        self.subagents = self.ctx.subagents = SubAgents(parent, cap=cap_from(os.environ))
        self.mcp = self._start_mcp(mcp, mcp_servers or {}, listed, transcript, tell_lead)
        self.subagents.parent.mcp = mcp
        self.subagents.parent.mcp_servers = dict(mcp_servers or {})
        self.loop = AgentLoop(
            model,
            tools,
            self.policy,
            system_prompt(agent, name, paths, cwd, context.text),
            self.ctx,
            transcript=transcript,
            reporter=reporter,
            max_turns=max_turns or agent.max_turns or turns_from(os.environ),
            settings=settings or ModelSettings.of(model.name, agent.effort),
            say=lambda text: say(f"{name}: {text}"),
            notices=self._notices,
            hooks=self.hooks,
            mcp=self.mcp.toolbox if self.mcp else None,
            state=self._state,
            **loop_options,
        )
        self.subagents.parent.loop = self.loop  # what a fork child starts from
        self._initial_prompt = agent.initial_prompt
        self.resume = resume  # carry on with the conversation the transcript holds
        self._mcp_ready = False  # its required MCP servers were connected once
        self._began = False

    # the Brain interface

    def respond(self, entries: list[InboxEntry], link: TeamLink) -> Outcome | None:
        try:
            self.begin()
            # no entries: a turn for what background sub-agents reported (the loop adds it)
            prompt = self._with_initial(format_for_model(entries)) if entries else None
            result = self._run(prompt, link)
        finally:  # whatever was deferred is done by now, request or not
            self.loop.settle()
        if isinstance(result, Outcome):
            return result
        if result.stop != "end_turn":
            return Outcome("failed", _why_stopped(result))
        return None

    def work(self, task: Task, link: TeamLink) -> Outcome:
        try:
            self.begin()
            prompt = self._with_initial(
                f"You have claimed task #{task.id}: {task.subject}\n\n{task.description}\n\n"
                f"{_task_extras(task)}"
                f"Work on it now. When it is done, mark it completed (TaskUpdate taskId "
                f"{task.id!r}, status completed) and tell {LEAD_NAME} the result with "
                "SendMessage. If you cannot finish it, tell the lead why and leave it in "
                f"progress.\nWorking directory for this task: {self.ctx.cwd}"
            )
            result = self._run(prompt, link)
        finally:  # whatever was deferred is done by now, request or not
            self.loop.settle()
        if isinstance(result, Outcome):
            return result
        now = link.board.get(task.id)
        if result.stop == "refusal":
            return Outcome("failed", f"#{task.id}: {_why_stopped(result)}")
        if now is None or now.status == "completed":
            return Outcome("resolved", f"#{task.id} done: {task.subject}", completed_by_brain=True)
        if result.stop != "end_turn":
            return Outcome("failed", f"#{task.id}: {_why_stopped(result)}")
        why = (
            result.text.strip().splitlines()[-1][:200] if result.text.strip() else "no reason given"
        )
        return Outcome("blocked", f"#{task.id} not completed: {why}")

    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        return True, ""

    def notices_waiting(self) -> bool:
        return self.subagents.notices_waiting() or self.shells.notices_waiting()

    def _notices(self) -> list[str]:
        """What its background work reports: sub-agents that ended, commands that ended, a
        monitor's new lines."""
        return [*self.subagents.take_notices(), *self.shells.take_notices()]

    def quick_answers(self) -> bool:
        return False  # its messages go out as the model sends them, mid-turn

    def defer(self, work: Callable[[], None]) -> bool:
        self.loop.defer(work)  # after its first request has left (`AgentLoop.settle`)
        return True

    def before_idle(self, link: TeamLink) -> Outcome | None:
        """Run the TeammateIdle hooks; while one blocks (a bounded number of times), work on
        with its reason as the next instruction. The last turn's outcome, if it had one."""
        outcome: Outcome | None = None
        for _ in range(MAX_IDLE_BLOCKS):
            hooked = self.loop.hook(
                "TeammateIdle", {"teammate_name": self.name, "team_name": self.paths.team}
            )
            if not hooked.blocked or hooked.stopped:
                break
            self.say(f"{self.name}: a TeammateIdle hook sent it back to work: {hooked.reason}")
            result = self._run(hooked.reason, link)
            outcome = result if isinstance(result, Outcome) else None
        return outcome

    def compact(self, instructions: str, link: TeamLink, now: bool) -> str:
        """Compact now (an idle teammate) or before the next model request (module doc)."""
        if not now:
            self.loop.request_compaction(instructions)
            return "the lead asked for a compaction: it comes before the next model request"
        self.begin()
        self.loop.link = link
        self.ctx.team = link
        before = self.loop.context_size()
        try:
            done = self.loop.compact("manual", instructions)
        except ModelError as exc:
            return f"could not compact: {exc}"
        finally:
            self.loop.settle()
        if not done:
            return "the conversation was not compacted (see its log)"
        return f"compacted its conversation: {before:,} -> {self.loop.context_size():,} tokens"

    def stop(self) -> None:
        self.shells.stop_all()
        self.subagents.stop_all()
        if self.mcp is not None:
            self.mcp.manager.close()  # every server: SIGINT, SIGTERM, SIGKILL for stdio ones
        self.lsp.close()  # every language server: shutdown and exit, SIGTERM, SIGKILL
        if self._began:
            self.loop.hook("SessionEnd", {"reason": "other"})
            self.loop.transcript.record("session_end")

    def begin(self) -> int:
        """Open this instance's record in the transcript (once, at its first turn, when it is
        surely the only instance: the runtime holds the member's single-instance lock), and with
        `resume` carry on with the last instance's conversation. The count of messages taken."""
        if self._began:
            return 0
        self._began = True
        transcript = self.loop.transcript
        events = []
        if self.resume and transcript.path:
            found = load_conversation(transcript.path)
            events = found.events
            for warning in found.warnings:
                self.say(f"{self.name}: {warning}")
                transcript.record("resume_warning", warning=warning)
        transcript.record("session", resumed=self.resume, pid=os.getpid())
        started = self.loop.hook("SessionStart", {"source": "resume" if self.resume else "startup"})
        context = "\n\n".join(started.context)  # given with the first prompt
        if context:
            self._initial_prompt = "\n\n".join(filter(None, [context, self._initial_prompt]))
        if not self.resume:
            return 0
        messages = conversation_of(events)
        self.loop.restore(messages)
        if messages:
            self._initial_prompt = context or None  # the rest was given to the first instance
        self.say(f"{self.name}: resumed with {len(messages)} messages of its earlier conversation")
        return len(messages)

    def set_mode(self, mode: str) -> None:
        self.policy.mode = mode

    def update_permissions(self, updates: list[dict[str, Any]]) -> None:
        self.policy.apply_updates(updates)

    def move_to(self, cwd: Path, confined: bool) -> None:
        self.ctx.cwd = cwd
        self.policy.cwd = cwd
        self.policy.confined = confined

    # helpers

    def _run(self, prompt: str | None, link: TeamLink) -> LoopResult | Outcome:
        if self.mcp is not None and not self._mcp_ready:
            # its required servers, before its first request (a later failure: it goes on)
            if (problem := self.mcp.require()) is not None:
                self.say(f"{self.name}: {problem}")
                return Outcome("failed", f"{self.agent.name} cannot be used: {problem}")
            self._mcp_ready = True
        self.loop.link = link
        self.ctx.team = link
        self.subagents.parent.link = link
        self.subagents.parent.wake = link.wake
        self.shells.wake = link.wake
        try:
            return self.loop.run(prompt)
        except ModelError as exc:
            self.say(f"{self.name}: model call failed: {exc}")
            return Outcome("failed", f"model call failed: {exc}")

    def _start_mcp(
        self,
        manager: McpManager | None,
        configured: Mapping[str, ServerConfig],
        listed: set[str],
        transcript: Transcript | None,
        tell_lead: Callable[[str], None] | None,
    ) -> AgentServers | None:
        """Begin connecting the MCP servers (all at once, in the background) and report their
        states; None without MCP."""
        if manager is None:
            return None

        def record(view: ServerView) -> None:
            if transcript is not None:
                transcript.record(
                    "mcp_server",
                    server=view.key,
                    state=view.state,
                    error=view.error,
                    tools=[t.name for t in view.tools],
                )

        status = self.subagents.parent.reporter
        Reporting(
            manager,
            status.mcp_servers if status is not None else None,
            record,
            lambda text: self.say(f"{self.name}: {text}"),
            tell_lead,
        )
        manager.start(configured.values())
        return servers_for(manager, configured, self.agent, None, listed)

    def _state(self) -> list[str]:
        """What the model must know after a compaction: who it is in which team, and the task
        it holds as the board has it now."""
        lines = [
            f"You are {self.name!r}, a member of team {self.paths.team!r}; the lead is "
            f"{LEAD_NAME!r}. Use SendMessage to talk to them, TaskList/TaskGet for the board."
        ]
        link = self.loop.link
        try:
            held = [t for t in link.board.list() if t.owner == self.name] if link else []
        except Exception:  # the board out of reach: the summary has to do
            held = []
        for task in held:
            if task.status != "completed":
                lines.append(f"You hold task #{task.id} ({task.status}): {task.subject}")
        return ["\n".join(lines)]

    def _with_initial(self, prompt: str) -> str:
        if self._initial_prompt:
            prompt = f"{self._initial_prompt}\n\n{prompt}"
            self._initial_prompt = None
        return prompt

    def _enter_plan_mode(self) -> str:
        if self.policy.mode == "plan":
            return "You are already in plan mode."
        self.mode_after_plan = self.policy.mode
        self.policy.mode = "plan"
        return (
            "You are in plan mode now: read and search, change nothing. When your plan is "
            "ready, call ExitPlanMode with it; once the lead approves it you may make changes."
        )

    def _exit_plan_mode(self, plan: str) -> str:
        if self.policy.mode != "plan":
            raise ToolError("You are not in plan mode; go ahead with the work.")
        if not plan.strip():
            raise ToolError("Give the plan to approve in the `plan` field.")
        link = self.loop.link
        if link is None:
            raise ToolError("there is no lead to approve the plan")
        plan_file = self.paths.plans_dir / f"{self.paths.team}-{self.name}-{now_ms()}.md"
        safefs.makedirs(plan_file.parent)
        atomic_write_text(plan_file, plan)  # never through a link planted in plans/
        verdict = link.ask_plan_approval(plan, str(plan_file))
        if not verdict.approved:
            return (
                f"The team lead rejected your plan. Feedback: {verdict.feedback or 'none given'}\n"
                "You are still in plan mode: revise the plan and call ExitPlanMode again."
            )
        mode = verdict.permission_mode or self.mode_after_plan
        self.policy.mode = "default" if mode == "plan" else mode
        return (
            f"The team lead approved your plan. You can now start making changes "
            f"(permission mode: {self.policy.mode})."
        )
