"""The offline brain: runs a task's shell command, no model and no network.

For a claimed task it runs ``metadata.command`` (or, when there is none, the description) with
``/bin/sh -c`` where the task was added (``metadata.cwd``: `task_directory`), else in the
teammate's working directory, with a timeout. Exit 0 resolves the task and
reports the tail of the output; anything else fails it, keeping the exit code and output tail.

Whether a command may run is decided by the same `PermissionPolicy` and rule language as a
Claude teammate's Bash calls (`shell_policy`): deny rules refuse, ask rules (by default a short
list of destructive commands, `DEFAULT_ASK_RULES`) need the lead's approval by the permission
protocol, every other command is allowed (the worker exists to run them). Modes:
``bypassPermissions`` asks nothing (deny rules still refuse); ``dontAsk`` refuses what would
need asking; ``plan`` asks before every command; the others ask for matching commands only.
PreToolUse hooks for ``Bash`` run first, with the command as ``tool_input.command``: a block or
``deny`` fails the task with the hook's reason, ``ask`` asks the lead, and ``allow`` skips
asking (a deny of the policy still wins). A command that succeeded completes its task only if
no TaskCompleted hook blocks; else the task stays in progress with the hook's reason.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from protocols.inbox.entry import InboxEntry
from protocols.messages.models import ShutdownRequest
from protocols.tasks.model import Task
from protocols.values import PermissionMode
from teammate.agent.worktree import WORKTREES_DIR
from teammate.hooks import HookBlocked, Hooks, before_task_completed
from teammate.link import Outcome, PermissionAsk, TeamLink
from teammate.permissions.policy import Decision, PermissionPolicy, Rule, rule_or_command_pattern
from teammate.sandbox.bwrap import Sandbox

DEFAULT_ASK_RULES = (
    "Bash(rm -r*)",
    "Bash(rm -f*)",
    "Bash(rm * -r*)",
    "Bash(git push*)",
    "Bash(git reset --hard*)",
    "Bash(sudo *)",
    "Bash(dd *)",
    "Bash(mkfs*)",
    "Bash(chmod -R*)",
    "Bash(chown -R*)",
    "Bash(shutdown*)",
    "Bash(reboot*)",
)
OUTPUT_TAIL_CHARS = 2000
WORKTREES = "/" + WORKTREES_DIR.as_posix() + "/"  # in a worker's home: it is a worktree


def shell_policy(
    mode: str,
    cwd: Path,
    ask: Iterable[str] = (),
    rules: Mapping[str, Iterable[Rule]] | None = None,
) -> PermissionPolicy:
    """The shell worker's policy: every command allowed except what `ask` (default:
    `DEFAULT_ASK_RULES`) or the settings' ask rules ask about, or their deny rules refuse."""
    extra = rules or {}
    return PermissionPolicy(
        mode,
        cwd,
        allow=[Rule("Bash"), *extra.get("allow", [])],
        deny=list(extra.get("deny", [])),
        ask=[
            *(rule_or_command_pattern(text) for text in (tuple(ask) or DEFAULT_ASK_RULES)),
            *extra.get("ask", []),
        ],
    )


def tail(text: str, limit: int = OUTPUT_TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


class ShellBrain:
    """Runs task commands; answers plain messages with an acknowledgement."""

    def __init__(
        self,
        cwd: Path,
        policy: PermissionPolicy | None = None,
        timeout_s: float = 600.0,
        hooks: Hooks | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.cwd = cwd
        self.policy = policy or shell_policy(PermissionMode.DEFAULT, cwd)
        self.timeout_s = timeout_s
        self.hooks = hooks or Hooks(project_dir=cwd)
        self.sandbox = sandbox  # task commands run in it (`teammate.sandbox`)

    def decide(self, command: str) -> Decision:
        """Whether `command` may run: allow, deny, or ask the lead (PreToolUse hooks first)."""
        call = {"tool_name": "Bash", "tool_input": {"command": command}}
        hooked = self.hooks.run("PreToolUse", call, "Bash", self.cwd, self.policy.mode)
        if hooked.refused or hooked.decision == "deny":
            return Decision("deny", f"blocked by a PreToolUse hook: {hooked.reason}")
        decision = self.policy.decide("Bash", "execute", {"command": command})
        if decision.behavior != "deny" and hooked.decision == "allow":
            return Decision("allow", "a PreToolUse hook allowed it")
        if decision.behavior != "deny" and hooked.decision == "ask":
            return Decision("ask", hooked.reason or "a PreToolUse hook asks")
        if decision.by_plan_mode:  # a shell worker has no plan to present: it asks instead
            return Decision("ask", "plan mode: every command needs the lead's approval")
        return decision

    def work(self, task: Task, link: TeamLink) -> Outcome:
        command = str((task.metadata or {}).get("command") or task.description).strip()
        if not command:
            return Outcome("failed", f"#{task.id} has no command (metadata.command or description)")
        decision = self.decide(command)
        if decision.behavior == "deny":
            return Outcome("failed", f"not allowed to run {command!r}: {decision.reason}")
        if decision.behavior == "ask":
            answer = link.ask_permission(
                PermissionAsk("Bash", {"command": command}, f"Run: {command}")
            )
            if not answer.approved:
                reason = answer.reason or "denied"
                return Outcome(
                    "failed", f"permission denied: {reason}", metadata={"denied": reason}
                )
            if answer.updated_input and isinstance(answer.updated_input.get("command"), str):
                command = answer.updated_input["command"]
        where = task_directory(task, self.cwd)
        if isinstance(where, str):
            return Outcome("failed", f"#{task.id}: {where}")
        outcome = self._run(task, command, where)
        if outcome.status != "resolved":
            return outcome
        try:  # a TaskCompleted hook may refuse the completion: the task stays in progress
            before_task_completed(self.hooks, task, link.name, link.paths.team)
        except HookBlocked as exc:
            return Outcome("blocked", f"#{task.id} not completed: {exc}", report=outcome.report)
        return outcome

    def _run(self, task: Task, command: str, cwd: Path) -> Outcome:
        argv = ["/bin/sh", "-c", command]
        sandbox = self.sandbox
        if sandbox is not None and not sandbox.excluded(command):
            sandbox = dataclasses.replace(sandbox, cwd=cwd.resolve())  # the task's directory
            argv = sandbox.wrap(argv)
        else:
            sandbox = None
        try:
            result = subprocess.run(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as expired:
            output = (expired.stdout or b"").decode("utf-8", "replace")
            return Outcome(
                "failed",
                f"#{task.id} timed out after {self.timeout_s:g} s",
                report=tail(output),
                metadata={"exitCode": None, "outputTail": tail(output), "timedOut": True},
            )
        output = tail(result.stdout.decode("utf-8", "replace"))
        if result.returncode == 0:
            return Outcome("resolved", f"#{task.id} done: {task.subject}", report=output)
        stopped = sandbox.why(output) if sandbox is not None else None
        return Outcome(
            "failed",
            f"#{task.id} failed with exit code {result.returncode}"
            + (f"\n{stopped}" if stopped else ""),
            report=output,
            metadata={"exitCode": result.returncode, "outputTail": output},
        )

    def respond(self, entries: list[InboxEntry], link: TeamLink) -> Outcome | None:
        """Acknowledge each message to its sender (a shell worker cannot do more)."""
        for entry in entries:
            if entry.from_ == link.name or entry.unverified:  # forged: nobody to answer
                continue
            first_line = entry.text.strip().splitlines()[0][:60] if entry.text.strip() else ""
            gist = entry.summary or first_line
            reply = f"Received: {gist!r}. I am a shell worker: I run the commands of tasks I claim."
            link.send(entry.from_, reply, summary="acknowledged")
        return None

    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        return True, ""

    def set_mode(self, mode: str) -> None:
        self.policy.mode = mode

    def notices_waiting(self) -> bool:
        return False  # it runs no sub-agents

    def quick_answers(self) -> bool:
        return True  # an acknowledgement per message, nothing else

    def defer(self, work: Callable[[], None]) -> bool:
        return False  # no model request to wait for: the runtime does it at once

    def before_idle(self, link: TeamLink) -> Outcome | None:
        """A shell worker has no model to send back to work: TeammateIdle is not run."""
        return None

    def compact(self, instructions: str, link: TeamLink, now: bool) -> str:
        return "a shell worker keeps no conversation: there is nothing to compact"

    def stop(self) -> None:
        """Nothing runs in the background of a shell worker."""

    def move_to(self, cwd: Path, confined: bool) -> None:
        self.cwd = cwd  # commands run there; a shell worker has no file tools to confine
        self.policy.cwd = cwd

    def update_permissions(self, updates: list[dict[str, Any]]) -> None:
        """Claude Code permission updates (rules and mode), as a Claude teammate applies them."""
        self.policy.apply_updates(updates)


def task_directory(task: Task, home: Path) -> Path | str:
    """Where `task`'s command runs: the directory recorded when it was added (``metadata.cwd``:
    where ``swarm task add`` was typed, or its ``--cwd``), else the worker's own `home`. A
    worker in a git worktree (``<repo>/.claude/worktrees/<name>``) runs it at the same place
    inside its worktree when the directory is in that repository, and at `home` otherwise,
    never in the repository itself. A reason (a string) when the directory is not there."""
    recorded = (task.metadata or {}).get("cwd")
    if not isinstance(recorded, str) or not recorded:
        return home
    wanted = Path(recorded)
    if not wanted.is_absolute():
        return f"its directory {recorded!r} is not an absolute path"
    repo, marker, rest = str(home).partition(WORKTREES)
    if marker:  # home is a worktree of `repo`: the same place in it, if the task is in `repo`
        tree = Path(repo + marker + rest.split("/", 1)[0])
        try:
            inside = wanted.relative_to(repo)
        except ValueError:
            return home
        wanted = tree / inside
    if not wanted.is_dir():
        return f"its directory {str(wanted)!r} does not exist (it was recorded when it was added)"
    return wanted
