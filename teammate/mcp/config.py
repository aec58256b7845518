"""Which MCP servers an agent has: Claude Code's server objects from every place they are
configured, read into one typed list.

    {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"X": "${X}"}},
                    "docs": {"type": "http", "url": "https://example.com/mcp",
                             "headers": {"Authorization": "Bearer ${TOKEN}"}},
                    "old": {"type": "sse", "url": "http://127.0.0.1:9000/sse"}}}

Sources, lowest precedence first (a later server of the same name replaces an earlier one):
``<project>/.mcp.json``, the settings files' ``mcpServers`` (`Settings.mcp_servers`, already
layered), ``--mcp-config FILE`` (a file of the same shape as ``.mcp.json``). An agent
definition's ``mcpServers`` names configured servers (shared) or defines its own inline
(`definition_servers`: owned by that agent).

``${VAR}`` and ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``url`` and
``headers``, as Claude Code does. A server that cannot be used (a malformed file, an unknown
transport, a missing variable) is still listed, with `ServerConfig.error` naming the file and
the key: it is reported as failed, never started, and never stops the agent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRANSPORTS = {"stdio": "stdio", "http": "http", "streamable-http": "http", "sse": "sse"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: how to reach it, where it was configured, and who owns it."""

    name: str
    transport: str = "stdio"  # stdio, http (streamable HTTP) or sse
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    origin: str = ""  # "<file>: mcpServers.<name>"
    owner: str | None = None  # the agent that defined it inline (closed when that agent ends)
    error: str | None = None  # why it cannot be used: reported as failed, never started

    @property
    def key(self) -> str:
        """How the connection manager knows it: the name, or ``owner/name`` for an owned one."""
        return self.name if self.owner is None else f"{self.owner}/{self.name}"


def sanitize(name: str) -> str:
    """A server or tool name as it appears in a tool name: ``[A-Za-z0-9_-]``, the rest ``_``."""
    return _UNSAFE.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{sanitize(server)}__{sanitize(tool)}"


def expand(text: str, environ: Mapping[str, str]) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced; `KeyError` names a variable that is unset
    and has no default."""

    def value(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise KeyError(name)

    return _VARIABLE.sub(value, text)


def parse_server(
    name: str, value: Any, origin: str, environ: Mapping[str, str], owner: str | None = None
) -> ServerConfig:
    """One server object checked and expanded; a problem becomes `ServerConfig.error`."""
    where = f"{origin}: mcpServers.{name}"
    try:
        return _parse(name, value, where, environ, owner)
    except ValueError as exc:
        return ServerConfig(name, origin=where, owner=owner, error=str(exc))


def _parse(
    name: str, value: Any, where: str, environ: Mapping[str, str], owner: str | None
) -> ServerConfig:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object")
    kind = value.get("type", "stdio" if "command" in value or "url" not in value else "http")
    if kind not in TRANSPORTS:
        raise ValueError(
            f"{where}.type {kind!r} is not a transport swarm supports (stdio, http, sse)"
        )
    transport = TRANSPORTS[kind]

    def text(key: str, required: bool) -> str:
        raw = value.get(key, "")
        if not isinstance(raw, str) or (required and not raw.strip()):
            raise ValueError(f"{where}.{key} must be a non-empty string")
        return _expanded(raw, f"{where}.{key}", environ)

    def mapping(key: str) -> dict[str, str]:
        raw = value.get(key, {})
        if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
        ):
            raise ValueError(f"{where}.{key} must be an object of strings")
        return {k: _expanded(v, f"{where}.{key}.{k}", environ) for k, v in raw.items()}

    if transport == "stdio":
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{where}.args must be a list of strings")
        return ServerConfig(
            name,
            transport,
            command=text("command", True),
            args=tuple(_expanded(a, f"{where}.args", environ) for a in args),
            env=mapping("env"),
            origin=where,
            owner=owner,
        )
    url = text("url", True)
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{where}.url must be an http:// or https:// URL, got {url!r}")
    return ServerConfig(
        name, transport, url=url, headers=mapping("headers"), origin=where, owner=owner
    )


def _expanded(text: str, where: str, environ: Mapping[str, str]) -> str:
    try:
        return expand(text, environ)
    except KeyError as exc:
        raise ValueError(
            f"{where}: environment variable {exc.args[0]} is not set (write "
            f"${{{exc.args[0]}:-default}} for a default)"
        ) from None


def read_file(path: Path, environ: Mapping[str, str], must_exist: bool) -> list[ServerConfig]:
    """The servers of a ``.mcp.json``-shaped file; a file that cannot be read is one failed
    entry named after the file (its problem is reported like a server's)."""
    if not path.is_file() and not must_exist:
        return []
    try:
        value: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        problem = f"cannot read MCP config {path}: {exc.strerror or exc}"
    except ValueError as exc:
        problem = f"{path}: not valid JSON: {exc}"
    else:
        return _servers_of(value, str(path), path.name, environ)
    return [ServerConfig(path.name, origin=str(path), error=problem)]


def _servers_of(
    value: Any, origin: str, name: str, environ: Mapping[str, str]
) -> list[ServerConfig]:
    servers = value.get("mcpServers") if isinstance(value, dict) else None
    if isinstance(servers, dict):
        return [parse_server(n, v, origin, environ) for n, v in servers.items()]
    problem = f"{origin}: 'mcpServers' must be an object of server objects"
    return [ServerConfig(name, origin=origin, error=problem)]


def read_flag(given: str | Path, environ: Mapping[str, str]) -> list[ServerConfig]:
    """The servers of ``--mcp-config``: a file, or (as Claude Code also takes it) the JSON
    itself when the text starts with ``{``."""
    if isinstance(given, Path) or not given.lstrip().startswith("{"):
        return read_file(Path(given), environ, must_exist=True)
    try:
        value = json.loads(given)
    except ValueError as exc:
        problem = f"--mcp-config: not valid JSON: {exc}"
        return [ServerConfig("mcp-config", origin="--mcp-config", error=problem)]
    return _servers_of(value, "--mcp-config", "mcp-config", environ)


def configured_servers(
    project_dir: Path,
    settings_servers: Mapping[str, dict[str, Any]] | None = None,
    settings_origins: Mapping[str, str] | None = None,
    flag: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, ServerConfig]:
    """Every configured server by name: ``.mcp.json``, then settings, then ``--mcp-config``."""
    env = os.environ if environ is None else environ
    found: dict[str, ServerConfig] = {}
    for server in read_file(project_dir / ".mcp.json", env, must_exist=False):
        found[server.name] = server
    origins = settings_origins or {}
    for name, value in (settings_servers or {}).items():
        origin = origins.get(f"mcpServers.{name}", "settings")
        found[name] = parse_server(name, value, origin, env)
    if flag is not None:
        for server in read_flag(flag, env):
            found[server.name] = server
    return found


def definition_servers(
    entries: Iterable[Any],
    configured: Mapping[str, ServerConfig],
    owner: str,
    origin: str,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[str], list[ServerConfig]]:
    """An agent definition's ``mcpServers``: the configured servers it names (shared), and the
    servers it defines inline (owned by `owner`). A name nobody configured is an owned entry
    with an error, so it is reported like any failed server."""
    env = os.environ if environ is None else environ
    shared: list[str] = []
    owned: list[ServerConfig] = []
    for entry in entries:
        if isinstance(entry, str):
            if entry in configured:
                shared.append(entry)
            else:
                problem = f"{origin}: mcpServers names {entry!r}, which no MCP config defines"
                owned.append(ServerConfig(entry, origin=origin, owner=owner, error=problem))
        elif isinstance(entry, dict):
            for name, value in entry.items():
                owned.append(parse_server(str(name), value, origin, env, owner=owner))
    return shared, owned
