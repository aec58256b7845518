"""What settings files and agent definitions share, so neither imports the other: the settings'
error, the hook events swarm runs, and the check of a ``hooks`` object (`parse_hooks`), which a
settings file and an agent definition's front matter both carry."""

from __future__ import annotations

import logging
from typing import Any

from protocols.errors import Error

log = logging.getLogger(__name__)


class SettingsError(Error, ValueError):
    """A settings file that cannot be used; the message names the file and the key."""


HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Notification",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "SessionEnd",
    # Claude Code 2.1.332: before a shell command written in a skill's text runs as the skill
    # loads; swarm runs no such commands (`teammate.config.skills`), so these hooks are kept,
    # listed and never run
    "PreSkillShellCommand",
)


def parse_hooks(value: Any, where: str) -> dict[str, list[dict[str, Any]]]:
    """Claude Code's ``hooks`` object, checked: ``{event: [{"matcher": regex?, "hooks":
    [{"type": "command", "command": str, "timeout": seconds?}]}]}``."""
    if not isinstance(value, dict):
        raise SettingsError(f"{where} must be an object of events")
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, groups in value.items():
        if event not in HOOK_EVENTS:  # a newer Claude Code's event: not for swarm, not fatal
            log.warning("%s: event %r is not one swarm runs; its hooks are ignored", where, event)
            continue
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise SettingsError(f"{where}.{event} must be a list of matcher groups")
        kept = []
        for i, group in enumerate(groups):
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                raise SettingsError(f"{where}.{event}[{i}].matcher must be a string")
            commands = group.get("hooks")
            if not isinstance(commands, list):
                raise SettingsError(f"{where}.{event}[{i}].hooks must be a list")
            runnable = []
            for j, hook in enumerate(commands):
                if isinstance(hook, dict) and hook.get("type", "command") != "command":
                    log.warning(
                        "%s.%s[%d].hooks[%d]: %r hooks are not run by swarm (command hooks are)",
                        where,
                        event,
                        i,
                        j,
                        hook.get("type"),
                    )
                    continue
                _check_hook(hook, f"{where}.{event}[{i}].hooks[{j}]")
                runnable.append(hook)
            if runnable:
                kept.append({**group, "matcher": matcher, "hooks": runnable})
        if kept:
            hooks[event] = kept
    return hooks


def _check_hook(hook: Any, where: str) -> None:
    if not isinstance(hook, dict) or hook.get("type", "command") != "command":
        raise SettingsError(f'{where}: only {{"type": "command"}} hooks are supported')
    if not isinstance(hook.get("command"), str) or not hook["command"].strip():
        raise SettingsError(f"{where}.command must be a non-empty string")
    timeout = hook.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise SettingsError(f"{where}.timeout must be a positive number of seconds")
