"""`swarm doctor`: what this machine and project need for a team to run, checked one by one.

Each `Check` is ``ok``, ``warn`` (works, with less: no inotify means slower wake-ups) or
``fail`` (a team cannot run as configured), with what was found and, when not ok, what to do.
Nothing here changes anything but a probe file in the config root, removed at once; nothing
reaches the network: an MCP server is checked by whether its command can be found, or its URL
parses, never by starting or calling it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from protocols.errors import UnusableRoot
from protocols.paths import check_root, config_root
from teammate.config.settings import layered_settings
from teammate.mcp.config import configured_servers

MIN_INOTIFY_WATCHES = 8192  # a team of 200 watches a few hundred files; distributions ship 8192+
MIN_INOTIFY_INSTANCES = 128  # one per teammate process, and one per swarm watch/lead


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # ok, warn or fail
    found: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(project_dir: Path, environ: dict[str, str] | None = None) -> list[Check]:
    env = dict(os.environ if environ is None else environ)
    root = config_root(env)
    checks: list[Callable[[], list[Check]]] = [
        lambda: [_tmux()],
        lambda: _inotify(),
        lambda: [_config_root(root, env)],
        lambda: [_api_key(env)],
        lambda: [_claude_code(env)],
        lambda: [_sandbox()],
        lambda: _mcp_servers(project_dir, root, env),
    ]
    found: list[Check] = []
    for check in checks:
        found.extend(check())
    return found


def _sandbox() -> Check:
    """Whether teammates' commands can run in bubblewrap here, else under Landlock
    (`teammate.sandbox`)."""
    from teammate.sandbox.bwrap import unavailable
    from teammate.sandbox.landlock import available

    why = unavailable()
    used = "teammates in acceptEdits, auto or bypassPermissions mode, or with sandbox.enabled"
    if why is None:
        return Check("sandbox", "ok", f"bubblewrap works (for {used})")
    fix = "install bubblewrap (Debian: apt-get install bubblewrap)"
    abi = available()
    if abi is not None:
        found = f"{why}; Landlock ABI {abi} sandboxes files instead (no namespaces)"
        return Check("sandbox", "warn", found, fix)
    fix += "; until then commands run without one, and sandbox.failIfUnavailable stops the teammate"
    return Check("sandbox", "warn", why, fix)


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout or done.stderr).strip() if done.returncode == 0 else None


def _tmux() -> Check:
    version = _run(["tmux", "-V"]) if shutil.which("tmux") else None
    if version is None:
        return Check(
            "tmux",
            "warn",
            "not found",
            "install tmux for panes (apt-get install tmux); --backend subprocess works without",
        )
    return Check("tmux", "ok", version)


def _inotify() -> list[Check]:
    result = []
    for key, least in (
        ("max_user_watches", MIN_INOTIFY_WATCHES),
        ("max_user_instances", MIN_INOTIFY_INSTANCES),
    ):
        try:
            value = int(Path(f"/proc/sys/fs/inotify/{key}").read_text().strip())
        except (OSError, ValueError):
            result.append(
                Check(f"inotify {key}", "warn", "unknown", "without inotify, waits rescan")
            )
            continue
        if value < least:
            fix = f"sysctl fs.inotify.{key}={least} (teammates fall back to a 1 s rescan)"
            result.append(Check(f"inotify {key}", "warn", str(value), fix))
        else:
            result.append(Check(f"inotify {key}", "ok", str(value)))
    return result


def _config_root(root: Path, env: dict[str, str]) -> Check:
    where = str(root)
    fix = "set CLAUDE_CONFIG_DIR to a directory you can write"
    try:
        check_root(root, env)
    except UnusableRoot as exc:
        return Check("config root", "fail", str(exc), fix)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".swarm-doctor-"):
            pass
    except OSError as exc:
        return Check("config root", "fail", f"{where}: {exc.strerror or exc}", fix)
    return Check("config root", "ok", f"{where} (writable)")


def _api_key(env: dict[str, str]) -> Check:
    if env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"):
        base = env.get("ANTHROPIC_BASE_URL") or "api.anthropic.com"
        return Check("Anthropic API key", "ok", f"set (requests go to {base})")
    fix = "export ANTHROPIC_API_KEY=... for Claude teammates; shell and scripted ones need none"
    return Check("Anthropic API key", "warn", "not set", fix)


def _claude_code(env: dict[str, str]) -> Check:
    program = shutil.which("claude", path=env.get("PATH"))
    if program is None:
        fix = "npm install -g @anthropic-ai/claude-code, to mix Claude Code teammates in"
        return Check("Claude Code", "warn", "not on PATH", fix)
    version = _run([program, "--version"]) or "did not say its version"
    return Check("Claude Code", "ok", f"{program}: {version}")


def _mcp_servers(project_dir: Path, root: Path, env: dict[str, str]) -> list[Check]:
    try:
        settings = layered_settings(project_dir, root)
        servers = configured_servers(project_dir, settings.mcp_servers, settings.origins, None, env)
    except Exception as exc:  # a broken settings file: that is the finding
        return [Check("MCP servers", "fail", str(exc), "fix the file it names")]
    if not servers:
        return [Check("MCP servers", "ok", "none configured")]
    result = []
    for server in servers.values():
        name = f"MCP server {server.name}"
        if server.error:
            result.append(Check(name, "fail", server.error, f"fix {server.origin}"))
        elif server.transport == "stdio":
            found = shutil.which(server.command, path=env.get("PATH"))
            if found is None:
                fix = f"install it, or fix the command in {server.origin}"
                result.append(Check(name, "fail", f"command {server.command!r} not found", fix))
            else:
                result.append(Check(name, "ok", f"stdio: {found}"))
        else:
            url = urlparse(server.url)
            if url.scheme in ("http", "https") and url.netloc:
                result.append(Check(name, "ok", f"{server.transport}: {server.url}"))
            else:
                fix = f"fix the url in {server.origin}"
                result.append(Check(name, "fail", f"not a URL: {server.url!r}", fix))
    return result
