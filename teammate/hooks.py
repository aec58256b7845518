"""Claude Code's command hooks: who runs them, with what input, and what their answer means.

`Hooks` holds the hooks in force for one agent: those of the settings files (user, project,
local, ``--settings``; `teammate.config.settings`) plus those of its agent definition's front
matter, which apply only while that agent runs (`Hooks.scoped`). `Hooks.run(event, payload,
target)` runs every hook of `event` whose matcher fits `target` (a regex on the tool name for
the tool events, the agent type for the sub-agent events; empty or ``*`` matches all), one after
the other, and folds their answers into one `HookResult`.

A hook is ``/bin/sh -c COMMAND`` (the user's own configured text, as Claude Code runs it) in
the project directory with ``CLAUDE_PROJECT_DIR`` set; what the event is about (tool input, the
prompt, a task) goes only on its stdin as one JSON object, never into the command line. Its own
process group is killed at its timeout (default 60 s). Exit 0: go on (its stdout is context
for ``UserPromptSubmit`` and ``SessionStart``); exit 2: block, stderr is the reason; any other
exit (127: no such command), a timeout or a failure to start: a non-blocking error, logged and
returned in `HookResult.errors` for the caller's transcript. JSON on stdout may decide instead:
``{"decision": "block", "reason"}``, ``{"continue": false, "stopReason"}`` (the agent ends its
turn: the action does not happen, and a Stop hook's stop is not a "work on"), and for
``PreToolUse`` ``hookSpecificOutput.permissionDecision`` (``allow``, ``deny``, ``ask``). A hook
never raises: a bad hook cannot stop the agent that runs it. ``PreSkillShellCommand`` hooks
(Claude Code 2.1.332) are accepted and listed but never run: swarm runs no shell commands from a
skill's text (`teammate.config.skills`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.errors import Error
from teammate.config.settings import (
    HOOK_EVENTS,
    Settings,
    SettingsError,
    layered_settings,
    parse_hooks,
)

if TYPE_CHECKING:
    from teammate.sandbox.bwrap import Sandbox

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 60.0
SHELL = "/bin/sh"
BLOCK_EXIT = 2
MAX_OUTPUT = 10_000  # characters of a hook's stdout or stderr that are kept
DECISIONS = ("deny", "ask", "allow")  # the strongest first


@dataclass(frozen=True)
class HookCommand:
    """One command hook in force: its event, matcher, command, timeout and where it came from."""

    event: str
    matcher: str
    command: str
    timeout_s: float
    source: str  # the settings file, or "agent <type> (<file>)"

    def matches(self, target: str | None) -> bool:
        """The matcher against the whole tool name or agent type (``Write`` is only Write;
        ``Edit|Write``, ``mcp__.*``); a matcher that is no regex matches by equality."""
        if self.matcher in ("", "*") or target is None:
            return True
        try:
            return re.fullmatch(self.matcher, target) is not None
        except re.error:
            return self.matcher == target

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "matcher": self.matcher,
            "command": self.command,
            "timeout": self.timeout_s,
            "source": self.source,
        }


@dataclass
class HookResult:
    """What the hooks of one event said, folded: `blocked` (exit 2, or a JSON ``decision:
    block``) or `stopped` (``continue: false``) with `reason`, a PreToolUse `decision`, `context`
    (stdout to add for UserPromptSubmit / SessionStart) and the non-blocking `errors`."""

    blocked: bool = False
    stopped: bool = False  # ``continue: false``: the agent stops its turn (reason: stopReason)
    reason: str = ""
    decision: str | None = None  # PreToolUse: allow / deny / ask
    context: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    ran: int = 0

    @property
    def refused(self) -> bool:
        """Blocked, or stopped: either way the action does not happen."""
        return self.blocked or self.stopped


class Hooks:
    """The hooks in force for one agent, and the session facts every hook's input carries."""

    def __init__(
        self,
        commands: list[HookCommand] | None = None,
        project_dir: Path | None = None,
        session_id: str = "",
        transcript_path: str = "",
    ) -> None:
        self.commands = list(commands or [])
        self._temporary: list[HookCommand] = []  # a loaded skill's, until its work ends
        self.project_dir = project_dir or Path.cwd()
        self.session_id = session_id
        self.transcript_path = transcript_path
        # the agent's sandbox, its hooks' commands run in too: a hook the agent wrote into the
        # project's settings must not take it out (`teammate.sandbox`)
        self.sandbox: Sandbox | None = None

    @classmethod
    def from_groups(
        cls,
        groups: Mapping[str, list[dict[str, Any]]],
        origins: Mapping[str, str] | None = None,
        source: str = "",
        project_dir: Path | None = None,
        **session: str,
    ) -> Hooks:
        """From Claude Code's ``hooks`` object (checked by `settings.parse_hooks`); `origins`
        maps ``hooks.<Event>[i]`` to the file a group came from."""
        return cls(commands_of(groups, origins or {}, source), project_dir, **session)

    def scoped(
        self, definition_hooks: Mapping[str, Any] | None, source: str, stop_as: str
    ) -> Hooks:
        """These hooks plus an agent definition's, for as long as that agent runs; the
        definition's ``Stop`` hooks fire as `stop_as` (``SubagentStop`` for a sub-agent).
        Always a new `Hooks`: what a skill adds to it (`activate`) stays the agent's own."""
        if not definition_hooks:
            return self._like(self.commands, self.session_id, self.transcript_path)
        groups = parse_hooks(dict(definition_hooks), source)
        if "Stop" in groups and stop_as != "Stop":
            groups[stop_as] = [*groups.get(stop_as, []), *groups.pop("Stop")]
        extra = commands_of(groups, {}, source)
        return self._like([*self.commands, *extra], self.session_id, self.transcript_path)

    def activate(self, groups: Mapping[str, Any], source: str) -> None:
        """Add a loaded skill's hooks until `end_temporary` (the agent's piece of work ends);
        `SettingsError` (nothing added) when they are malformed."""
        extra = commands_of(parse_hooks(dict(groups), source), {}, source)
        self.commands.extend(extra)
        self._temporary.extend(extra)

    def end_temporary(self) -> None:
        """Take away what `activate` added."""
        self.commands = [c for c in self.commands if not any(c is t for t in self._temporary)]
        self._temporary = []

    def with_session(self, session_id: str, transcript_path: str) -> Hooks:
        return self._like(self.commands, session_id, transcript_path)

    def _like(self, commands: list[HookCommand], session_id: str, transcript: str) -> Hooks:
        """New hooks of the same project and sandbox."""
        made = Hooks(commands, self.project_dir, session_id, transcript)
        made.sandbox = self.sandbox
        return made

    def has(self, event: str) -> bool:
        return any(c.event == event for c in self.commands)

    def listing(self) -> list[dict[str, Any]]:
        """Every hook, by event in Claude Code's order, then in the order they run."""
        ordered = sorted(self.commands, key=lambda c: HOOK_EVENTS.index(c.event))
        return [c.to_json() for c in ordered]

    def run(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        target: str | None = None,
        cwd: Path | None = None,
        permission_mode: str = "default",
    ) -> HookResult:
        """Run `event`'s hooks that match `target`, in order; never raises."""
        result = HookResult()
        chosen = [c for c in self.commands if c.event == event and c.matches(target)]
        if not chosen:
            return result
        data = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(cwd or self.project_dir),
            "permission_mode": permission_mode,
            "hook_event_name": event,
            **(payload or {}),
        }
        stdin = _json_bytes(data)
        for command in chosen:
            result.ran += 1
            try:
                answer = run_command(command, stdin, self.project_dir, self.sandbox)
            except Exception as exc:  # never raises: a bad hook is an error, not a crash
                answer = None, "", f"could not run: {type(exc).__name__}: {exc}"
            _fold(result, command, *answer)
        for error in result.errors:
            log.warning("%s", error)
        return result


def _json_bytes(data: dict[str, Any]) -> bytes:
    """The hook's stdin: UTF-8 JSON; text that is not valid Unicode (a lone surrogate from a
    hostile message) is escaped instead."""
    try:
        return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True, default=str).encode("ascii")


def commands_of(
    groups: Mapping[str, list[dict[str, Any]]], origins: Mapping[str, str], source: str
) -> list[HookCommand]:
    commands = []
    for event, event_groups in groups.items():
        for i, group in enumerate(event_groups):
            where = origins.get(f"hooks.{event}[{i}]", source)
            for hook in group.get("hooks", []):
                commands.append(
                    HookCommand(
                        event=event,
                        matcher=str(group.get("matcher") or ""),
                        command=str(hook["command"]),
                        timeout_s=float(hook.get("timeout") or DEFAULT_TIMEOUT_S),
                        source=where,
                    )
                )
    return commands


def run_command(
    command: HookCommand, stdin: bytes, project_dir: Path, sandbox: Sandbox | None = None
) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr) of one hook, in `sandbox` when there is one; None for the
    code when it timed out or could not start (the reason is then in stderr). Its whole process
    group is killed at the timeout."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project_dir)}
    argv = [SHELL, "-c", command.command]
    if sandbox is not None and not sandbox.excluded(command.command):
        argv = sandbox.wrap(argv)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=project_dir if project_dir.is_dir() else None,
            env=env,
            start_new_session=True,  # its own process group: killed whole at the timeout
        )
    except OSError as exc:
        return None, "", f"could not start: {exc}"
    try:
        out, err = process.communicate(stdin, timeout=command.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None, "", f"timed out after {command.timeout_s:g} s and was killed"
    return process.returncode, _text(out), _text(err)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    try:  # the group is dead; a child that left it may hold the pipes: do not wait for it
        process.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")[:MAX_OUTPUT]


def _fold(result: HookResult, command: HookCommand, code: int | None, out: str, err: str) -> None:
    """Add one hook's answer to `result`."""
    label = f"{command.event} hook {command.command!r} ({command.source})"
    if code is None:
        result.errors.append(f"{label} {err}")
        return
    if code == BLOCK_EXIT:
        _block(result, err.strip() or f"blocked by {label}")
        return
    if code != 0:
        detail = "command not found" if code == 127 else f"exit code {code}"
        result.errors.append(f"{label} failed ({detail}): {err.strip()[:500]}")
        return
    answer = _json_answer(out)
    if answer is None:
        if out.strip() and command.event in ("UserPromptSubmit", "SessionStart"):
            result.context.append(out.strip())
        return
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict):
        decision = specific.get("permissionDecision")
        if command.event == "PreToolUse" and decision in DECISIONS:
            why = str(specific.get("permissionDecisionReason") or "")
            _decide(result, decision, why or f"{decision} by {label}")
        extra = specific.get("additionalContext")
        if isinstance(extra, str) and extra.strip():
            result.context.append(extra.strip())
    if answer.get("decision") == "block":
        _block(result, str(answer.get("reason") or f"blocked by {label}"))
    if answer.get("continue") is False:
        result.stopped = True
        _add_reason(result, str(answer.get("stopReason") or f"stopped by {label}"))


def _json_answer(out: str) -> dict[str, Any] | None:
    text = out.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _block(result: HookResult, reason: str) -> None:
    result.blocked = True
    _add_reason(result, reason)


def _add_reason(result: HookResult, reason: str) -> None:
    result.reason = f"{result.reason}\n{reason}" if result.reason else reason


def _decide(result: HookResult, decision: str, reason: str) -> None:
    """The strongest decision wins: deny over ask over allow."""
    if result.decision is None or DECISIONS.index(decision) < DECISIONS.index(result.decision):
        result.decision = decision
        if decision != "allow":
            result.reason = reason


def settings_hooks(settings: Settings, project_dir: Path, **session: str) -> Hooks:
    """The hooks of merged settings files, each remembering its file."""
    return Hooks.from_groups(settings.hooks, settings.origins, "settings", project_dir, **session)


def project_hooks(project_dir: Path, config_root: Path) -> Hooks:
    """The hooks a command run in `project_dir` is under (the user's, the project's and the
    local settings): `swarm task` fires TaskCreated and TaskCompleted with these. A settings
    file that cannot be read is a warning here, and no hooks: it must not stop the command."""
    try:
        settings = layered_settings(project_dir, config_root)
    except SettingsError as exc:
        log.warning("hooks not run: %s", exc)
        return Hooks(project_dir=project_dir)
    return settings_hooks(settings, project_dir)


def task_fields(task_id: str | None, subject: str, description: str) -> dict[str, Any]:
    """The task part of a TaskCreated / TaskCompleted hook's input."""
    fields: dict[str, Any] = {"task_subject": subject, "task_description": description}
    if task_id is not None:
        fields["task_id"] = task_id
    return fields


class HookBlocked(Error):
    """A hook blocked the action (exit 2 or a JSON block); the message is the hook's reason."""


def before_task_created(
    hooks: Hooks | None, subject: str, description: str, actor: str, team: str
) -> None:
    """Run the TaskCreated hooks before a task is written (so there is no id yet); raises
    `HookBlocked` with the reason when one blocks: the task is then not created."""
    _task_event(hooks, "TaskCreated", task_fields(None, subject, description), actor, team)


def before_task_completed(hooks: Hooks | None, task: Any, actor: str, team: str) -> None:
    """Run the TaskCompleted hooks before `task` is marked completed; raises `HookBlocked` with
    the reason when one blocks: the task then keeps its status (in progress)."""
    fields = task_fields(str(task.id), task.subject, task.description)
    _task_event(hooks, "TaskCompleted", fields, actor, team)


def _task_event(
    hooks: Hooks | None, event: str, fields: dict[str, Any], actor: str, team: str
) -> None:
    if hooks is None or not hooks.has(event):
        return
    result = hooks.run(event, {**fields, "teammate_name": actor, "team_name": team})
    if result.refused:
        raise HookBlocked(f"{event} hook blocked it: {result.reason}")
