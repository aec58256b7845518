"""Claude Code's settings files: the permission rules and default mode an agent starts with,
agent definitions (``agents``, the ``--agents`` JSON form, which win over every other source of
the same name), ``env`` (read for swarm's own settings such as ``SWARM_FORK_SUBAGENT``, not
passed to commands), ``hooks`` (event -> matcher groups, `teammate.hooks`) and
``mcpServers`` (name -> server, `teammate.mcp`), ``autoCompactWindow`` (the window a
conversation is compacted in, `teammate.api.model_settings`) and ``sandbox`` (the OS sandbox
of its commands, `teammate.sandbox.config`):

    {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"],
                     "ask": ["Bash(git push:*)"], "defaultMode": "acceptEdits"},
     "agents": {"reviewer": {"description": "Reviews diffs", "prompt": "You review."}},
     "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                            "command": "./check.sh"}]}]},
     "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}

`load_settings` reads one file. `layered_settings` reads every file Claude Code reads, lowest
precedence first: the user's ``$CLAUDE_CONFIG_DIR/settings.json``, the project's
``.claude/settings.json``, its ``.claude/settings.local.json``, then ``--settings FILE``.
Rules and hooks add up across files; a later file's ``defaultMode``, ``env`` keys, agents and
MCP servers of the same name win. `Settings.origins` says which file each came from.
`swarm up` writes one ``--settings`` file per member from its team file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.fs import safefs
from protocols.values import PermissionMode
from teammate.config.hook_format import HOOK_EVENTS as HOOK_EVENTS
from teammate.config.hook_format import SettingsError as SettingsError
from teammate.config.hook_format import parse_hooks as parse_hooks
from teammate.sandbox.config import (
    SandboxConfig,
    SandboxSettingsError,
    merge_sandbox,
    parse_sandbox,
)

if TYPE_CHECKING:  # loaded by a settings file that has rules or agents: `swarm task add` reads
    # the hooks of files that mostly have neither
    from teammate.config.definitions import AgentDefinition
    from teammate.permissions.policy import Rule

log = logging.getLogger(__name__)


SCOPES = ("user", "project", "local", "flag")  # lowest precedence first


@dataclass(frozen=True)
class Settings:
    rules: dict[str, list[Rule]] = field(default_factory=dict)  # behavior -> rules
    default_mode: str | None = None
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # settings for the agent, not the shell
    hooks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # event -> groups
    mcp_servers: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> server
    auto_compact_window: int | None = None  # autoCompactWindow: the window to compact in
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)  # `teammate.sandbox`
    # where each came from: "permissions.allow[0]", "defaultMode", "env.X", "hooks.PreToolUse[0]",
    # "mcpServers.git", "agents.reviewer" -> the file's path
    origins: dict[str, str] = field(default_factory=dict)


PermissionSettings = Settings  # the name it had when it held permissions only


def settings_files(project_dir: Path, config_root: Path, flag: Path | None) -> list[Path]:
    """The settings files an agent in `project_dir` reads, lowest precedence first (those that
    exist, and `flag` whether it exists or not: naming a missing file is an error)."""
    found = [
        config_root / "settings.json",
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    ]
    return [p for p in found if p.is_file()] + ([flag] if flag is not None else [])


def layered_settings(project_dir: Path, config_root: Path, flag: Path | None = None) -> Settings:
    """Every settings file Claude Code would read for an agent in `project_dir`, merged."""
    merged = Settings()
    for path in settings_files(project_dir, config_root, flag):
        merged = merge(merged, load_settings(path))
    return merged


def merge(low: Settings, high: Settings) -> Settings:
    """`high` over `low`: rules and hooks add up, the rest is replaced key by key."""
    rules = {b: [*low.rules.get(b, []), *high.rules.get(b, [])] for b in ("allow", "deny", "ask")}
    hooks = {e: [*low.hooks.get(e, []), *high.hooks.get(e, [])] for e in {*low.hooks, *high.hooks}}
    origins = dict(low.origins)
    for key, where in high.origins.items():
        origins[_shifted(key, low)] = where
    return Settings(
        rules=rules,
        default_mode=high.default_mode or low.default_mode,
        agents={**low.agents, **high.agents},
        env={**low.env, **high.env},
        hooks=hooks,
        mcp_servers={**low.mcp_servers, **high.mcp_servers},
        auto_compact_window=high.auto_compact_window or low.auto_compact_window,
        sandbox=merge_sandbox(low.sandbox, high.sandbox),
        origins=origins,
    )


def _shifted(key: str, low: Settings) -> str:
    """A list item's key renumbered after `low`'s items of the same list."""
    head, _, index = key.partition("[")
    if not index:
        return key
    if head.startswith("permissions."):
        before = len(low.rules.get(head.split(".", 1)[1], []))
    elif head.startswith("hooks."):
        before = len(low.hooks.get(head.split(".", 1)[1], []))
    else:
        return key
    return f"{head}[{int(index.rstrip(']')) + before}]"


def load_settings(path: Path) -> Settings:
    """One settings file, checked; `SettingsError` names the file and the key."""
    try:
        value: Any = json.loads(safefs.read_regular(path).decode("utf-8"))
    except OSError as exc:
        raise SettingsError(f"cannot read settings {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SettingsError(f"{path}: not valid JSON: {exc}") from None
    permissions = value.get("permissions", {}) if isinstance(value, dict) else None
    if not isinstance(permissions, dict):
        raise SettingsError(f"{path}: 'permissions' must be an object")
    rules = _rules(permissions, path)
    mode = permissions.get("defaultMode")
    if mode is not None and mode not in PermissionMode.names():
        raise SettingsError(
            f"{path}: permissions.defaultMode {mode!r} is not one of "
            f"{', '.join(PermissionMode.names())}"
        )
    agents = _agents(value.get("agents", {}), f"{path}: agents")
    env = _mapping(value.get("env", {}), str, f"{path}: 'env' must be an object of string values")
    hooks = parse_hooks(value.get("hooks", {}), f"{path}: hooks")
    servers = _mapping(
        value.get("mcpServers", {}),
        dict,
        f"{path}: 'mcpServers' must be an object of server objects",
    )
    window = value.get("autoCompactWindow")
    if window is not None:
        from teammate.api.model_settings import SettingsValueError, parse_window

        try:
            window = parse_window(window, f"{path}: autoCompactWindow")
        except SettingsValueError as exc:
            raise SettingsError(str(exc)) from None
    try:
        sandbox = parse_sandbox(value.get("sandbox"), f"{path}: sandbox")
    except SandboxSettingsError as exc:
        raise SettingsError(str(exc)) from None
    settings = Settings(rules, mode, agents, env, hooks, servers, window, sandbox)
    return dataclasses.replace(settings, origins=_origins(settings, str(path)))


def _agents(value: Any, where: str) -> dict[str, AgentDefinition]:
    if value == {}:
        return {}
    from teammate.config.definitions import AgentDefinitionError, from_json_agents

    try:
        return from_json_agents(value, where)
    except AgentDefinitionError as exc:
        raise SettingsError(str(exc)) from None


def _rules(permissions: dict[str, Any], path: Path) -> dict[str, list[Rule]]:
    rules: dict[str, list[Rule]] = {}
    for behavior in ("allow", "deny", "ask"):
        entries = permissions.get(behavior, [])
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise SettingsError(f"{path}: permissions.{behavior} must be a list of rule strings")
        if not entries:
            rules[behavior] = []
            continue
        from teammate.permissions.policy import parse_rule

        try:
            rules[behavior] = [parse_rule(entry) for entry in entries]
        except ValueError as exc:
            raise SettingsError(f"{path}: permissions.{behavior}: {exc}") from None
    return rules


def _mapping(value: Any, kind: type, problem: str) -> dict[str, Any]:
    """`value` if it is an object of `kind` values by text keys; else `SettingsError`."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, kind) for k, v in value.items()
    ):
        raise SettingsError(problem)
    return dict(value)


def _origins(settings: Settings, where: str) -> dict[str, str]:
    """Every setting of one file's `settings`, by its key in `Settings.origins`, -> `where`."""
    keys = [
        f"permissions.{b}[{i}]" for b, found in settings.rules.items() for i in range(len(found))
    ]
    keys += [f"hooks.{e}[{i}]" for e, groups in settings.hooks.items() for i in range(len(groups))]
    keys += [f"mcpServers.{n}" for n in settings.mcp_servers]
    keys += [f"env.{k}" for k in settings.env] + [f"agents.{n}" for n in settings.agents]
    keys += ["defaultMode"] if settings.default_mode is not None else []
    keys += ["autoCompactWindow"] if settings.auto_compact_window is not None else []
    return dict.fromkeys(keys, where)
