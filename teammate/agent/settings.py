"""Claude Code's ``--settings FILE``: the permission rules and default mode a teammate starts
with, and agent definitions (``agents``, the ``--agents`` JSON form, which win over every other
source of the same name), and ``env``, read for swarm's own settings (``SWARM_FORK_SUBAGENT``)
and not passed to commands. The ``permissions``, ``agents`` and ``env`` objects are used:

    {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"],
                     "ask": ["Bash(git push:*)"], "defaultMode": "acceptEdits"},
     "agents": {"reviewer": {"description": "Reviews diffs", "prompt": "You review."}}}

`swarm up` writes one such file per member from its team file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.errors import Error
from protocols.values import PermissionMode
from teammate.agent.definitions import AgentDefinition, AgentDefinitionError, from_json_agents
from teammate.permissions.policy import Rule, parse_rule


class SettingsError(Error, ValueError):
    """A settings file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class PermissionSettings:
    rules: dict[str, list[Rule]] = field(default_factory=dict)  # behavior -> rules
    default_mode: str | None = None
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # settings for the agent, not the shell


def load_settings(path: Path) -> PermissionSettings:
    try:
        value: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"cannot read settings {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SettingsError(f"{path}: not valid JSON: {exc}") from None
    permissions = value.get("permissions", {}) if isinstance(value, dict) else None
    if not isinstance(permissions, dict):
        raise SettingsError(f"{path}: 'permissions' must be an object")
    rules: dict[str, list[Rule]] = {}
    for behavior in ("allow", "deny", "ask"):
        entries = permissions.get(behavior, [])
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise SettingsError(f"{path}: permissions.{behavior} must be a list of rule strings")
        try:
            rules[behavior] = [parse_rule(entry) for entry in entries]
        except ValueError as exc:
            raise SettingsError(f"{path}: permissions.{behavior}: {exc}") from None
    mode = permissions.get("defaultMode")
    if mode is not None and mode not in PermissionMode.names():
        raise SettingsError(
            f"{path}: permissions.defaultMode {mode!r} is not one of "
            f"{', '.join(PermissionMode.names())}"
        )
    try:
        agents = from_json_agents(value.get("agents", {}), f"{path}: agents")
    except AgentDefinitionError as exc:
        raise SettingsError(str(exc)) from None
    env = value.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise SettingsError(f"{path}: 'env' must be an object of string values")
    return PermissionSettings(rules, mode, agents, env)
