"""Sub-agents: the agents a Claude agent runs inside its own turn with the Agent tool, in the
same process (Claude Code's in-process sub-agents; spec agents.md sections 2-3).

Each sub-agent is an `AgentLoop` of its own: its own message history, model (the call's, else
its definition's, else the parent's), tool pool (the definition's allow-list minus its
deny-list, from the parent's file and shell tools: no team tools, no Agent), permission mode
(its definition's, else ``acceptEdits``, but never more than the parent's: the narrower of the
two) under the parent's rules, and cancellation. Its asks go up the parent's path (a teammate's
lead), labelled ``parent \u203a type`` (`subagent_label`). Its usage rolls up into the parent's
status, where it also has an entry of its own (`protocols.member.status.SubAgentStatus`: its state,
last tool call, tokens), kept current on its start, each model and tool call, and its end.

Synchronous (the default): the parent's tool call waits; the result carries the final text, the
``agentId`` and usage. Background (``run_in_background``, or ``background: true`` in the
definition): ``async_launched`` at once, with an output file that grows as it works; when it
ends (completed, failed, or stopped with TaskStop: killed) its ``<task-notification>`` is queued
for the parent exactly once (a flag set under the lock) and the parent is woken: the loop adds
queued notifications before its next model turn, and an idle parent starts a turn for them.
A run's state goes terminal before anything slow, so TaskOutput never waits on clean-up.
A message for a running sub-agent is delivered at its next loop boundary; one for a finished
sub-agent resumes it in the background with its whole conversation.

``isolation: worktree`` gives a sub-agent its own git worktree of the parent's repository (its
file tools kept inside): removed when the run changed nothing, else kept and named in its
result. With forking on, a call without ``subagent_type`` forks the parent
(`teammate.agent.fork`): always in the background, in the parent's own mode, asking the
parent's approver (``bubble``). A run and its texts are in `teammate.agent.subagent_run`, its
link to the team and its usage in `teammate.agent.subagent_link`.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.clock import now_iso
from protocols.fs import safefs
from protocols.fs.jsonio import append_durably
from protocols.member.status import subagent_label
from protocols.paths import config_root
from teammate.agent.context import agent_context
from teammate.agent.fork import (
    FORK_TYPE,
    directive_text,
    fork_messages,
    is_fork_conversation,
)
from teammate.agent.loop import AgentLoop, LoopCancelled
from teammate.agent.subagent_link import SubAgentLink, SubAgentReporter
from teammate.agent.subagent_run import (
    AGENT_ID,
    MAX_TURNS_MARKER,
    NO_VERDICT,
    SUBAGENT_DEFAULT_MODE,
    SubAgentRun,
    completed_text,
    launched_text,
    narrower,
    new_agent_id,
    notification_text,
    subagent_prompt,
)
from teammate.agent.transcript import Transcript, conversation_of, read_transcript
from teammate.agent.worktree import Worktree, WorktreeError, create, wrap_up
from teammate.api.model import Model, ModelError
from teammate.api.model_settings import ModelSettings
from teammate.config.definitions import (
    VERDICT_LINE,
    AgentDefinition,
    tool_rules,
)
from teammate.hooks import Hooks
from teammate.link import TeamLink
from teammate.mcp.agent import AgentServers, servers_for
from teammate.mcp.client import McpManager
from teammate.mcp.config import ServerConfig
from teammate.mcp.tools import McpToolbox
from teammate.permissions.policy import PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.telemetry.spans import agent_span
from teammate.tools.agents import FORK_REFUSED, AgentCall
from teammate.tools.base import Tool, ToolContext, ToolError

DEFAULT_CAP = 8  # background sub-agents running at once, per agent
CAP_VARIABLE = "SWARM_MAX_BACKGROUND_AGENTS"  # another cap, from the environment


def cap_from(environ: Mapping[str, str]) -> int:
    """The cap `CAP_VARIABLE` sets (a positive whole number), else `DEFAULT_CAP`."""
    text = environ.get(CAP_VARIABLE, "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_CAP


@dataclass
class Parent:
    """What sub-agents take from the agent that runs them."""

    name: str  # the teammate's name, or team-lead
    model: Model
    tools: list[Tool]  # the pool a sub-agent's tools are picked from
    policy: PermissionPolicy
    ctx: ToolContext
    agents: Callable[[str], AgentDefinition]  # a definition by type (AgentDefinitionError)
    directory: Path | None  # where sidechain transcripts and output files go
    reporter: StatusReporter | None = None
    link: TeamLink | None = None  # set for each turn of the parent
    wake: Callable[[], None] = lambda: None  # start a parent turn for a notification
    loop: AgentLoop | None = None  # the parent's own loop: what a fork child starts from
    fork: bool = False  # an Agent call without subagent_type forks (`teammate.agent.fork`)
    hooks: Hooks | None = None  # the parent's hooks; a sub-agent adds its definition's
    mcp: McpManager | None = None  # the process's MCP connections (shared with sub-agents)
    mcp_servers: dict[str, ServerConfig] = field(default_factory=dict)  # configured, by name


class SubAgents:
    """One agent's sub-agents: launching, notifications, TaskOutput, TaskStop, messages."""

    def __init__(self, parent: Parent, cap: int = DEFAULT_CAP) -> None:
        self.parent = parent
        self.cap = cap
        self.runs: dict[str, SubAgentRun] = {}
        self._names: dict[str, str] = {}  # name given at launch -> agent id
        self._lock = threading.Lock()
        self._notices: list[tuple[str, str]] = []  # (agent id, notification text)

    # launching

    def launch(self, call: AgentCall, tool_use_id: str) -> str:
        """Run a sub-agent; the Agent tool's result text (sync: its answer; else launched).
        Without a ``subagent_type`` and with forking on, the caller forks (always background)."""
        if call.cwd and call.isolation:
            raise ToolError("give either `cwd` or `isolation`, not both")
        forking = call.subagent_type is None and self.parent.fork
        definition = (
            None if forking else self.parent.agents(call.subagent_type or "general-purpose")
        )
        background = forking or call.run_in_background or bool(definition and definition.background)
        if forking:
            self._check_can_fork()
        with self._lock:
            self._check_room(background, call.name)
        agent_id = new_agent_id()
        tree = self._worktree(agent_id) if call.isolation == "worktree" else None
        directory = tree.path if tree is not None else self._directory(call.cwd)
        try:
            if definition is None:
                run = self._fork_run(agent_id, call, tool_use_id, directory, tree)
            else:
                run = self._new_run(agent_id, definition, call, directory, tree)
            run.tool_use_id = tool_use_id
            run.background = background
            run.notified = not background
            with self._lock:
                self._check_room(background, call.name)
                self.runs[run.agent_id] = run
                if call.name is not None:
                    self._names[call.name] = run.agent_id
        except BaseException:
            if tree is not None:
                wrap_up(tree)  # made for nothing: removed, as nothing changed in it
            raise
        self._report(run)
        if background:
            self._start_thread(run, None if forking else call.prompt)
            return launched_text(run)
        self._play(run, call.prompt)
        return completed_text(run)

    def _check_room(self, background: bool, name: str | None) -> None:
        """Under the lock: a background run fits under the cap, and `name` is free."""
        running = sum(1 for r in self.runs.values() if r.background and r.status == "running")
        if background and running >= self.cap:
            raise ToolError(
                f"{running} background agents are running, the most this agent may run at "
                f"once ({self.cap}); wait for a notification or stop one with TaskStop"
            )
        if name is not None and name in self._names:
            raise ToolError(f"a sub-agent named {name!r} exists already; pick another name")

    def _check_can_fork(self) -> None:
        loop = self.parent.loop
        if loop is None:
            raise ToolError("this agent cannot fork; give a subagent_type to run a sub-agent")
        if is_fork_conversation(loop.messages):  # a fork child's conversation, however it got here
            raise ToolError(FORK_REFUSED)

    def _worktree(self, agent_id: str) -> Worktree:
        """A new git worktree for the sub-agent, from the parent's repository's HEAD."""
        try:
            tree, _created = create(self.parent.ctx.cwd, f"agent-{agent_id}")
        except WorktreeError as exc:
            raise ToolError(f"isolation: worktree failed: {exc}") from None
        return tree

    def _directory(self, cwd: str | None) -> Path:
        if cwd is None:
            return self.parent.ctx.cwd
        directory = self.parent.ctx.resolve(cwd)
        if not directory.is_dir():
            raise ToolError(f"cwd {cwd!r} is not a directory")
        return directory

    def _new_run(
        self,
        agent_id: str,
        definition: AgentDefinition,
        call: AgentCall,
        cwd: Path,
        tree: Worktree | None,
        journal: bool = True,
    ) -> SubAgentRun:
        """A sub-agent of type `definition`: its tools, mode and prompt from the definition."""
        parent = self.parent
        allowed, allow_rules = tool_rules(definition.tools)
        removed, deny_rules = tool_rules(definition.disallowed_tools)
        allowed |= {rule.tool_name for rule in allow_rules}
        tools = [
            t
            for t in parent.tools
            if (definition.tools is None or t.name in allowed) and t.name not in removed
        ]
        mode = narrower(definition.permission_mode or SUBAGENT_DEFAULT_MODE, parent.policy.mode)
        skills = parent.ctx.skills.skills if parent.ctx.skills else {}
        has_skill = any(t.name == "Skill" for t in tools)
        context = agent_context(definition, cwd, config_root(), skills, catalogue=has_skill)
        servers = self._servers(agent_id, definition, allowed)
        model = parent.model.variant(call.model or definition.model)
        run = self._make_run(
            agent_id,
            definition.name,
            call,
            cwd,
            tree,
            color=definition.color,
            tools=tools,
            policy=self._policy(mode, tree, [*allow_rules, *context.rules], deny_rules),
            model=model,
            system_prompt=subagent_prompt(definition, cwd, context.text),
            max_turns=definition.max_turns,
            settings=self._settings(model, definition.effort),
            journal=journal,
            hooks=self._hooks().scoped(
                definition.hooks, f"agent {definition.name} ({definition.source})", "SubagentStop"
            ),
            mcp=servers.toolbox if servers is not None else None,
        )
        run.servers = servers
        return run

    def _servers(
        self, agent_id: str, definition: AgentDefinition, listed: set[str]
    ) -> AgentServers | None:
        """The sub-agent's MCP servers: its inline ones started for it, the required ones
        waited for (a `ToolError` says which is missing: the agent cannot be used)."""
        if self.parent.mcp is None:
            return None
        owner = f"{definition.name}@{agent_id}"
        servers = servers_for(self.parent.mcp, self.parent.mcp_servers, definition, owner, listed)
        problem = servers.require()
        if problem is not None:
            servers.close()
            raise ToolError(f"agent type {definition.name!r} cannot be used: {problem}")
        return servers

    def _fork_run(
        self, agent_id: str, call: AgentCall, tool_use_id: str, cwd: Path, tree: Worktree | None
    ) -> SubAgentRun:
        """A fork child: the parent's system prompt, tools and model as they are, its
        conversation up to this call, and the directive; ``bubble``: the parent's mode."""
        loop = self.parent.loop
        assert loop is not None  # _check_can_fork
        directive = directive_text(
            call.prompt, tree.path if tree else None, self.parent.ctx.cwd if tree else None
        )
        seed = fork_messages(loop.messages, tool_use_id, directive)
        run = self._make_run(
            agent_id,
            FORK_TYPE,
            call,
            cwd,
            tree,
            tools=list(loop.tools.values()),
            policy=self._policy(self.parent.policy.mode, tree),
            model=loop.model,
            system_prompt=loop.system_prompt,
            max_turns=loop.max_turns,
            settings=loop.settings,  # the parent's thinking too: the same prefix
            forked=True,
            mcp=loop.mcp,
        )
        run.loop.restore(seed)
        return run

    def _policy(
        self,
        mode: str,
        tree: Worktree | None,
        allow: list[Any] | None = None,
        deny: list[Any] | None = None,
    ) -> PermissionPolicy:
        """The parent's rules plus the definition's, in `mode`. The directory is the
        parent's (another `cwd` must not widen what it may edit), or its own worktree, to
        which its file tools are then kept."""
        rules = self.parent.policy
        policy = PermissionPolicy(
            mode,
            tree.path if tree is not None else rules.cwd,
            allow=[*rules.rules("allow"), *(allow or [])],
            deny=[*rules.rules("deny"), *(deny or [])],
            ask=rules.rules("ask"),
        )
        policy.confined = True if tree is not None else rules.confined
        return policy

    def _make_run(
        self,
        agent_id: str,
        agent_type: str,
        call: AgentCall,
        cwd: Path,
        tree: Worktree | None,
        *,
        tools: list[Tool],
        policy: PermissionPolicy,
        model: Model,
        system_prompt: str,
        max_turns: int | None,
        settings: ModelSettings | None = None,
        forked: bool = False,
        journal: bool = True,  # record its start (not when it is brought back: it was)
        color: str | None = None,
        hooks: Hooks | None = None,
        mcp: McpToolbox | None = None,
    ) -> SubAgentRun:
        parent = self.parent
        label = subagent_label(parent.name, call.name or agent_type)
        output = parent.directory / f"{agent_id}.output" if parent.directory else None
        transcript = parent.directory / f"{agent_id}.jsonl" if parent.directory else None
        run = SubAgentRun(
            agent_id=agent_id,
            agent_type=agent_type,
            description=call.description,
            prompt=call.prompt,
            name=call.name,
            tool_use_id="",
            output_file=output,
            loop=None,  # type: ignore[arg-type]  # set just below: the loop needs the run
            background=False,
            worktree=tree,
            color=color,
        )
        link = SubAgentLink(self, run, label)
        record = Transcript(transcript)
        if journal:  # what it takes to bring it back in a later process (`find_or_revive`)
            record.record(
                "subagent",
                agent_type=agent_type,
                description=call.description,
                name=call.name,
                model=call.model,
                cwd=str(cwd),
            )
        run.loop = AgentLoop(
            model,
            tools,
            policy,
            system_prompt,
            ToolContext(
                cwd=cwd,
                agent_name=label,
                team=link,
                forked=forked,
                # its skills' allowed tools go to its own policy, not its parent's
                skills=parent.ctx.skills.for_policy(policy.grant) if parent.ctx.skills else None,
                hooks=hooks,
                files_dir=parent.ctx.files_dir,  # its shells and outputs beside its parent's
                shells=parent.ctx.shells,  # its background commands end up with its parent
            ),
            link=link,
            transcript=record,
            reporter=SubAgentReporter(run, parent.reporter),
            max_turns=max_turns,
            say=lambda text: self._output(run, text),
            cancelled=run.cancel,
            settings=settings,
            hooks=hooks or self._hooks(),
            stop_event="SubagentStop",
            mcp=mcp,
        )
        run.loop.stop_payload = {"agent_id": agent_id, "agent_type": agent_type}
        return run

    def _settings(self, model: Model, effort: str | int | None) -> ModelSettings | None:
        """A sub-agent's request settings: its model's, with its definition's effort (the
        window the parent's settings were told, if it was lowered)."""
        parent = self.parent.loop
        window = parent.settings.window if parent is not None else None
        return ModelSettings.of(model.name, effort, window=window)

    def _hooks(self) -> Hooks:
        return self.parent.hooks or Hooks()

    # running

    def _start_thread(self, run: SubAgentRun, prompt: str | None) -> None:
        earlier = run.thread  # a stopped play still in a model call: the resume waits for it
        # in the starter's context: its trace's span (the Agent call) is the sub-agent's parent
        thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._play, run, prompt, run.generation, earlier),
            name=f"subagent-{run.agent_id}",
            daemon=True,
        )
        run.thread = thread
        thread.start()

    def _play(
        self,
        run: SubAgentRun,
        prompt: str | None,
        generation: int = 0,
        earlier: threading.Thread | None = None,
    ) -> None:
        """Run the sub-agent's loop to its end, record how it ended, clean up its worktree,
        then notify (the state is terminal before the clean-up, so nobody waits on it)."""
        if earlier is not None:
            earlier.join()
            with self._lock:
                if run.generation != generation or run.status != "running":
                    return  # stopped again before it could start
                run.cancel.clear()
        if run.worktree is not None and not run.worktree.path.is_dir():
            run.worktree = self._reopen(run, run.worktree)  # removed after an earlier play
        self._output(run, f"[{run.agent_type}] {run.description}")
        if run.servers is not None:
            run.servers.open()  # a resumed play: its own servers were closed when it ended
        with agent_span(run.agent_type, run.agent_id):
            status, text = self._outcome(run, prompt)
        ended_here = self._finish(run, status, text, generation)
        if run.servers is not None:
            run.servers.close()  # the servers it defined inline end with it
        note = wrap_up(run.worktree) if run.worktree is not None else None
        if note:
            self._output(run, note)
        if ended_here:
            if note:
                with self._lock:
                    run.result = f"{run.result}\n\n{note}" if run.result else note
            self._announce(run)

    def _reopen(self, run: SubAgentRun, tree: Worktree) -> Worktree | None:
        """The worktree made again for a resumed play (None, said in its output, if git
        refuses: the play then works in its parent's directory)."""
        try:
            return create(tree.repo, tree.slug)[0]
        except WorktreeError as exc:
            self._output(run, f"[worktree {tree.path} could not be made again: {exc}]")
            run.loop.ctx.cwd = self.parent.ctx.cwd
            return None

    def _outcome(self, run: SubAgentRun, prompt: str | None) -> tuple[str, str]:
        """How the loop ended: (status, result text)."""
        try:
            if prompt is not None:  # a start, not a resume for a notification
                run.loop.hook("SubagentStart", dict(run.loop.stop_payload))
            result = run.loop.run(prompt)
        except LoopCancelled:
            return "killed", run.loop.last_text
        except Exception as exc:  # a sub-agent must not take its parent with it
            partial = run.loop.last_text
            why = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ModelError) else str(exc)
            return "failed", f"{partial}\n\n[failed: {why}]" if partial else why
        text = result.text
        if result.stop == "max_turns":
            text = f"{text}\n\n{MAX_TURNS_MARKER}" if text else MAX_TURNS_MARKER
        elif result.stop in ("refusal", "max_tokens"):
            why = "the model refused" if result.stop == "refusal" else "its answers were cut off"
            return "failed", f"{text}\n\n[failed: {why}]" if text else why
        if run.agent_type == "verification" and not VERDICT_LINE.search(text):
            text = f"{text}\n\n{NO_VERDICT}"  # never a verdict it did not give
        return "completed", text

    def _finish(
        self, run: SubAgentRun, status: str, result: str, generation: int | None = None
    ) -> bool:
        """The run's terminal state, set once per play (TaskStop may have set it first; an
        earlier, stopped play ending late changes nothing). True if this call set it."""
        with self._lock:
            if run.status != "running" or generation not in (None, run.generation):
                return False
            run.status, run.result, run.ended = status, result, time.monotonic()
            run.ended_at = now_iso()
            run.done.set()
        self._report(run)
        self._output(run, f"[{status}]")
        return True

    def _report(self, run: SubAgentRun) -> None:
        """Put the run's entry, as it is when written, in the parent's status file."""
        if self.parent.reporter is not None:
            self.parent.reporter.subagent(run.status_entry)

    def _announce(self, run: SubAgentRun) -> None:
        """Queue the run's notification, unless it was notified (or seen ending) already,
        and wake the parent for it."""
        with self._lock:
            notify = not run.notified
            if notify:
                run.notified = True
                self._notices.append((run.agent_id, notification_text(run)))
        if notify:
            self.parent.wake()

    def _output(self, run: SubAgentRun, text: str) -> None:
        """Append what the sub-agent said to its output file (never fails the sub-agent); a
        synchronous run has none: its caller gets everything in the tool result."""
        if run.output_file is None or not run.background:
            return
        with contextlib.suppress(OSError):
            safefs.makedirs(run.output_file.parent)
            append_durably(run.output_file, (text.rstrip("\n") + "\n").encode(), "process")

    # what the parent's loop and tools use

    def take_notices(self) -> list[str]:
        """Every notification queued so far, oldest first (each is taken once)."""
        with self._lock:
            taken, self._notices = [text for _, text in self._notices], []
        return taken

    def notices_waiting(self) -> bool:
        with self._lock:
            return bool(self._notices)

    def find(self, key: str) -> SubAgentRun | None:
        """A sub-agent by the name it was given or its agent id."""
        with self._lock:
            return self.runs.get(self._names.get(key, key))

    def find_or_revive(self, key: str) -> SubAgentRun | None:
        """`find`, or a sub-agent an earlier process of this agent ran (by its agent id),
        brought back finished from its transcript so a message resumes it. None when `key`
        is no agent id; `ToolError` when it is one whose transcript is gone or unusable."""
        run = self.find(key)
        if run is not None or not AGENT_ID.fullmatch(key) or self.parent.directory is None:
            return run
        path = self.parent.directory / f"{key}.jsonl"
        events = read_transcript(path)
        start = next((e for e in events if e.get("kind") == "subagent"), None)
        messages = conversation_of(events)
        if start is None or not messages:
            raise ToolError(
                f"sub-agent {key} cannot be resumed: its transcript {path} is gone or holds "
                "no conversation; start a new one with the Agent tool"
            )
        run = self._revived(key, start, messages)
        with self._lock:
            return self.runs.setdefault(key, run)

    def _revived(
        self, agent_id: str, start: dict[str, Any], messages: list[dict[str, Any]]
    ) -> SubAgentRun:
        kind = str(start.get("agent_type") or "general-purpose")
        call = AgentCall(
            description=str(start.get("description") or kind),
            prompt="",
            subagent_type=kind,
            model=start.get("model") if isinstance(start.get("model"), str) else None,
        )
        cwd = Path(str(start.get("cwd") or self.parent.ctx.cwd))
        if not cwd.is_dir():
            cwd = self.parent.ctx.cwd  # its worktree was removed: its parent's directory
        if kind == FORK_TYPE:
            loop = self.parent.loop
            if loop is None:
                raise ToolError(f"sub-agent {agent_id} was a fork; this agent cannot fork")
            run = self._make_run(
                agent_id,
                FORK_TYPE,
                call,
                cwd,
                None,
                tools=list(loop.tools.values()),
                policy=self._policy(self.parent.policy.mode, None),
                model=loop.model,
                system_prompt=loop.system_prompt,
                max_turns=loop.max_turns,
                settings=loop.settings,
                forked=True,
                journal=False,
                mcp=loop.mcp,
            )
        else:
            run = self._new_run(agent_id, self.parent.agents(kind), call, cwd, None, journal=False)
        run.loop.restore(messages)
        run.status, run.notified, run.background = "completed", True, True
        run.ended = time.monotonic()
        run.done.set()
        return run

    def output(self, task_id: str, block: bool, timeout_s: float) -> str:
        """TaskOutput: the run's status and output so far, after waiting (with `block`) up to
        `timeout_s` for it to end; seen ending here, it is not notified again."""
        run = self.find(task_id)
        if run is None:
            raise ToolError(f"No task found with ID: {task_id}")
        if block:
            run.done.wait(max(0.0, timeout_s))
        with self._lock:
            if block and run.status != "running" and run.background:
                run.notified = True
                self._notices = [(i, t) for i, t in self._notices if i != run.agent_id]
            status, result = run.status, run.result
        retrieval = "success" if status != "running" else ("timeout" if block else "not_ready")
        so_far = result if status != "running" else run.loop.last_text
        return (
            f"<retrieval_status>{retrieval}</retrieval_status>\n"
            f"<task_id>{run.agent_id}</task_id>\n<task_type>local_agent</task_type>\n"
            f"<status>{status}</status>\n<output>\n{so_far}\n</output>"
        )

    def stop(self, task_id: str) -> str:
        """TaskStop: a running sub-agent stops at its next boundary; it is killed now, with
        what it said so far as its partial result."""
        run = self.find(task_id)
        if run is None:
            raise ToolError(f"No task found with ID: {task_id}")
        if run.status != "running":
            raise ToolError(f"Task {task_id} is not running (status: {run.status})")
        run.cancel.set()
        if self._finish(run, "killed", run.loop.last_text):
            self._announce(run)
        return json.dumps(
            {
                "message": f"Successfully stopped task: {run.agent_id} ({run.description})",
                "task_id": run.agent_id,
                "task_type": "local_agent",
            }
        )

    def message(self, run: SubAgentRun, text: str) -> str:
        """SendMessage to a sub-agent: at its next loop boundary if it runs, else it resumes in
        the background with its whole conversation and this message."""
        with self._lock:
            if run.status == "running":
                run.pending.append(text)
                return (
                    f"Message queued for {run.name or run.agent_id}; it reads it at its next "
                    "tool round."
                )
            if self.cap <= sum(
                1 for r in self.runs.values() if r.background and r.status == "running"
            ):
                raise ToolError(f"{self.cap} background agents are running; try again later")
            run.status, run.result, run.ended = "running", "", None
            run.background, run.notified = True, False
            run.started = time.monotonic()
            run.started_at, run.ended_at = now_iso(), None
            run.generation += 1
            run.done.clear()
        self._report(run)
        self._start_thread(run, text)
        return (
            f"Agent {run.name or run.agent_id} had stopped; it resumed in the background with "
            "your message. You will be notified when it finishes."
            + (f"\noutput_file: {run.output_file}" if run.output_file else "")
        )

    def take_pending(self, run: SubAgentRun) -> list[str]:
        with self._lock:
            taken, run.pending = run.pending, []
        return taken

    def stop_all(self) -> None:
        """Stop every running sub-agent (the parent is stopping)."""
        for run in list(self.runs.values()):
            if run.status == "running":
                run.cancel.set()
                self._finish(run, "killed", run.loop.last_text)
