"""What an agent started in a directory will load, and where each piece comes from: the
settings files Claude Code reads (permission rules, default mode, env keys, hooks, MCP servers,
agents), the CLAUDE.md files, the skills, and its agent type's memory directory. `swarm config`
prints it for a member (its directory, ``--settings`` file and agent type from its entry) or for
a directory. It only reads; env values are left out (they may be secrets), their keys shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocols.paths import TeamPaths
from protocols.printable import printable_line
from protocols.store.selection import open_store
from swarm.team.members import member_spec
from teammate.agent.context import MEMORY_DIRS, claude_md_files, memory_dir
from teammate.config.definitions import load_agent
from teammate.config.settings import layered_settings, settings_files
from teammate.config.skills import discover


def member_config(paths: TeamPaths, name: str) -> dict[str, Any]:
    """`effective_config` for member `name`, as its entry says it was started."""
    member = open_store(paths).team_file().load().require(name)
    spec = member_spec(member)
    cwd = Path(member.cwd) if member.cwd else Path.cwd()
    settings = Path(spec.settings) if spec is not None and spec.settings else None
    agent_type = (spec.agent_type if spec else None) or member.agentType or "general-purpose"
    return {"member": name, **effective_config(cwd, paths.root, settings, agent_type)}


def effective_config(
    cwd: Path, config_root: Path, flag: Path | None = None, agent_type: str = "general-purpose"
) -> dict[str, Any]:
    """Everything an agent of `agent_type` working in `cwd` loads, each with its file."""
    settings = layered_settings(cwd, config_root, flag)
    origin = settings.origins
    agent = load_agent(agent_type, project_dir=cwd, settings=settings.agents or None)
    memory = (
        str(memory_dir(agent.memory, agent.name, cwd, config_root))
        if agent.memory in MEMORY_DIRS
        else None
    )
    return {
        "cwd": str(cwd),
        "agentType": agent.name,
        "settingsFiles": [str(p) for p in settings_files(cwd, config_root, flag)],
        "permissions": [
            {"behavior": b, "rule": str(rule), "from": origin.get(f"permissions.{b}[{i}]")}
            for b, rules in settings.rules.items()
            for i, rule in enumerate(rules)
        ],
        "defaultMode": {"mode": settings.default_mode, "from": origin.get("defaultMode")}
        if settings.default_mode
        else None,
        "env": [{"key": k, "from": origin.get(f"env.{k}")} for k in settings.env],
        "hooks": [
            {
                "event": event,
                "matcher": group.get("matcher", ""),
                "command": hook.get("command"),
                "timeout": hook.get("timeout"),
                "from": origin.get(f"hooks.{event}[{i}]"),
            }
            for event, groups in settings.hooks.items()
            for i, group in enumerate(groups)
            for hook in group.get("hooks", [])
        ],
        "mcpServers": [
            {"name": n, "server": _server_text(s), "from": origin.get(f"mcpServers.{n}")}
            for n, s in settings.mcp_servers.items()
        ],
        "agents": [{"name": n, "from": origin.get(f"agents.{n}")} for n in settings.agents],
        "claudeMd": [str(p) for p in claude_md_files(cwd, config_root)]
        if agent.loads_claude_md
        else [],
        "skills": [
            {"name": s.name, "from": str(s.directory / "SKILL.md")}
            for s in sorted(discover(cwd, config_root).values(), key=lambda s: s.name)
        ],
        "memory": memory,
    }


def _server_text(server: dict[str, Any]) -> str:
    if "url" in server:
        return f"{server.get('type', 'http')} {server['url']}"
    args = " ".join(str(a) for a in server.get("args", []) if isinstance(a, str | int))
    return f"stdio {server.get('command', '?')} {args}".strip()


def config_text(config: dict[str, Any]) -> str:
    """`effective_config` for a person: one line per item, each with where it came from."""
    head = f"member {config['member']}: " if "member" in config else ""
    lines = [f"{head}agent type {config['agentType']} in {config['cwd']}"]

    def section(title: str, items: list[str]) -> None:
        lines.append(f"{title}:" if items else f"{title}: none")
        lines.extend(f"  {printable_line(item)}" for item in items)

    section("settings files", config["settingsFiles"])
    section(
        "permission rules",
        [f"{p['behavior']:<5} {p['rule']}  ({p['from']})" for p in config["permissions"]],
    )
    mode = config["defaultMode"]
    lines.append(f"default mode: {mode['mode']} ({mode['from']})" if mode else "default mode: none")
    section("env (keys)", [f"{e['key']}  ({e['from']})" for e in config["env"]])
    section(
        "hooks",
        [
            f"{h['event']} [{h['matcher'] or '*'}] {h['command']}  ({h['from']})"
            for h in config["hooks"]
        ],
    )
    section(
        "MCP servers", [f"{m['name']}: {m['server']}  ({m['from']})" for m in config["mcpServers"]]
    )
    section("agents from settings", [f"{a['name']}  ({a['from']})" for a in config["agents"]])
    section("CLAUDE.md", config["claudeMd"])
    section("skills", [f"{s['name']}  ({s['from']})" for s in config["skills"]])
    lines.append(f"memory: {config['memory'] or 'none'}")
    return "\n".join(lines)
