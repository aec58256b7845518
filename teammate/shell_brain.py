"""The offline brain: runs a task's shell command, no model and no network.

For a claimed task it runs ``metadata.command`` (or, when there is none, the description) with
``/bin/sh -c`` in the teammate's working directory, with a timeout. Exit 0 resolves the task and
reports the tail of the output; anything else fails it, keeping the exit code and output tail.

Commands matching an "ask" rule (fnmatch patterns; by default a short list of destructive
commands) need the lead's approval first, by the permission protocol. Permission modes:
``bypassPermissions`` asks nothing; ``dontAsk`` refuses what would need asking; ``plan`` asks
before every command; the others ask for matching commands only.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path
from typing import Any

from protocols.inbox import InboxEntry
from protocols.messages import ShutdownRequest
from protocols.task import Task
from teammate.brain import Outcome, TeamLink

DEFAULT_ASK_RULES = (
    "rm -r*",
    "rm -f*",
    "rm * -r*",
    "git push*",
    "git reset --hard*",
    "sudo *",
    "dd *",
    "mkfs*",
    "chmod -R*",
    "chown -R*",
    "shutdown*",
    "reboot*",
)
OUTPUT_TAIL_CHARS = 2000
_SEPARATORS = re.compile(r"(?:&&|\|\||[;&|\n(){}`]|\$\()")


def needs_approval(command: str, rules: tuple[str, ...]) -> str | None:
    """The first rule that `command` (or any command chained inside it) matches, else None."""
    parts = [command.strip(), *(p.strip() for p in _SEPARATORS.split(command))]
    for part in parts:
        for rule in rules:
            if part and fnmatch.fnmatchcase(part, rule):
                return rule
    return None


def tail(text: str, limit: int = OUTPUT_TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


class ShellBrain:
    """Runs task commands; answers plain messages with an acknowledgement."""

    def __init__(
        self,
        cwd: Path,
        ask_rules: tuple[str, ...] = DEFAULT_ASK_RULES,
        permission_mode: str = "default",
        timeout_s: float = 600.0,
    ) -> None:
        self.cwd = cwd
        self.ask_rules = ask_rules
        self.permission_mode = permission_mode
        self.timeout_s = timeout_s

    def work(self, task: Task, link: TeamLink) -> Outcome:
        command = str((task.metadata or {}).get("command") or task.description).strip()
        if not command:
            return Outcome("failed", f"#{task.id} has no command (metadata.command or description)")
        rule = "*" if self.permission_mode == "plan" else needs_approval(command, self.ask_rules)
        if rule is not None and self.permission_mode != "bypassPermissions":
            if self.permission_mode == "dontAsk":
                return Outcome("failed", f"not allowed to run {command!r} (matches {rule!r})")
            answer = link.ask_permission("Bash", {"command": command}, f"Run: {command}")
            if not answer.approved:
                reason = answer.reason or "denied"
                return Outcome(
                    "failed", f"permission denied: {reason}", metadata={"denied": reason}
                )
            if answer.updated_input and isinstance(answer.updated_input.get("command"), str):
                command = answer.updated_input["command"]
        return self._run(task, command)

    def _run(self, task: Task, command: str) -> Outcome:
        try:
            result = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=self.cwd,
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
        return Outcome(
            "failed",
            f"#{task.id} failed with exit code {result.returncode}",
            report=output,
            metadata={"exitCode": result.returncode, "outputTail": output},
        )

    def respond(self, entries: list[InboxEntry], link: TeamLink) -> Outcome | None:
        """Acknowledge each message to its sender (a shell worker cannot do more)."""
        for entry in entries:
            if entry.from_ == link.name:
                continue
            first_line = entry.text.strip().splitlines()[0][:60] if entry.text.strip() else ""
            gist = entry.summary or first_line
            reply = f"Received: {gist!r}. I am a shell worker: I run the commands of tasks I claim."
            link.send(entry.from_, reply, summary="acknowledged")
        return None

    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        return True, ""

    def set_mode(self, mode: str) -> None:
        self.permission_mode = mode

    def move_to(self, cwd: Path, confined: bool) -> None:
        self.cwd = cwd  # commands run there; a shell worker has no file tools to confine

    def update_permissions(self, updates: list[dict[str, Any]]) -> None:
        """Rules are not used by the shell worker (its --ask patterns decide); modes are."""
        for update in updates:
            if update.get("type") == "setMode" and isinstance(update.get("mode"), str):
                self.permission_mode = update["mode"]
