"""MCP configuration: servers merged from .mcp.json, the settings files and --mcp-config (a
later source wins by name), ${VAR} expansion, agent definitions' shared and inline servers, bad
input as a failed entry naming file and key (never an exception), tool names sanitised, and
permission decisions for MCP tools (read-only annotated tools are reads; others ask)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from teammate.config.settings import layered_settings
from teammate.mcp.client import McpManager, ToolInfo
from teammate.mcp.config import (
    configured_servers,
    definition_servers,
    expand,
    parse_server,
    sanitize,
    tool_name,
)
from teammate.mcp.tools import McpToolbox, make_tool
from teammate.permissions.policy import PermissionPolicy, parse_rule


def write(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value) if not isinstance(value, str) else value)
    return path


def test_servers_come_from_mcp_json_then_settings_then_the_flag_file(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    write(
        project / ".mcp.json",
        {"mcpServers": {"git": {"command": "git-a"}, "db": {"command": "db", "args": ["-x"]}}},
    )
    write(project / ".claude" / "settings.json", {"mcpServers": {"git": {"command": "git-b"}}})
    flag = write(
        tmp_path / "flag.json",
        {"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}},
    )
    settings = layered_settings(project, home)
    found = configured_servers(project, settings.mcp_servers, settings.origins, flag, environ={})
    assert sorted(found) == ["db", "git", "web"]
    assert found["git"].command == "git-b"  # the settings file over .mcp.json
    assert str(project / ".claude" / "settings.json") in found["git"].origin
    assert found["db"].args == ("-x",) and found["db"].transport == "stdio"
    assert found["web"].transport == "http" and found["web"].url == "http://127.0.0.1:1/mcp"
    over = write(tmp_path / "over.json", {"mcpServers": {"db": {"command": "db2"}}})
    assert configured_servers(project, {}, {}, over, environ={})["db"].command == "db2"


def test_variables_expand_with_defaults_and_a_missing_one_is_a_clear_error() -> None:
    env = {"HOME_DIR": "/h", "TOKEN": "s3cret"}
    assert expand("${HOME_DIR}/x ${NOPE:-dflt}", env) == "/h/x dflt"
    server = parse_server(
        "api",
        {"type": "sse", "url": "https://x/${NOPE:-sse}", "headers": {"A": "Bearer ${TOKEN}"}},
        "cfg.json",
        env,
    )
    assert server.error is None and server.url == "https://x/sse"
    assert server.headers == {"A": "Bearer s3cret"}
    bad = parse_server("s", {"command": "run", "env": {"K": "${MISSING}"}}, "cfg.json", env)
    assert bad.error is not None
    assert "cfg.json: mcpServers.s.env.K" in bad.error and "MISSING is not set" in bad.error


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"type": "ws", "url": "ws://x"}, "mcpServers.s.type 'ws' is not a transport"),
        ({"command": ""}, "mcpServers.s.command must be a non-empty string"),
        ({"command": "x", "args": "a b"}, "mcpServers.s.args must be a list of strings"),
        ({"type": "http", "url": "ftp://x"}, "mcpServers.s.url must be an http"),
        ("npx srv", "mcpServers.s must be an object"),
    ],
)
def test_a_bad_server_is_a_failed_entry_naming_file_and_key(value: object, problem: str) -> None:
    server = parse_server("s", value, "/p/.mcp.json", {})
    assert server.error is not None and problem in server.error
    assert server.error.startswith("/p/.mcp.json: ")


def test_a_malformed_mcp_json_is_one_failed_entry_and_a_missing_flag_file_too(
    tmp_path: Path,
) -> None:
    write(tmp_path / ".mcp.json", "{not json")
    found = configured_servers(tmp_path, environ={})
    (entry,) = found.values()
    assert entry.error is not None and ".mcp.json: not valid JSON" in entry.error
    write(tmp_path / ".mcp.json", {"mcpServers": ["git"]})
    (entry,) = configured_servers(tmp_path, environ={}).values()
    assert entry.error is not None and "'mcpServers' must be an object" in entry.error
    missing = configured_servers(tmp_path / "none", flag=tmp_path / "gone.json", environ={})
    (entry,) = missing.values()
    assert entry.error is not None and "cannot read MCP config" in entry.error


def test_definition_servers_are_shared_by_name_or_inline_and_owned() -> None:
    configured = {"git": parse_server("git", {"command": "g"}, "x", {})}
    shared, owned = definition_servers(
        ["git", {"local": {"command": "./srv"}}, "ghost"], configured, "rev@a1", "agent.md"
    )
    assert shared == ["git"]
    assert [(s.name, s.key, s.error is None) for s in owned] == [
        ("local", "rev@a1/local", True),
        ("ghost", "rev@a1/ghost", False),
    ]
    assert "names 'ghost', which no MCP config defines" in (owned[1].error or "")


def test_names_are_sanitised_into_mcp_tool_names() -> None:
    assert sanitize("my server.v2") == "my_server_v2"
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert tool_name("a.b", "do it!") == "mcp__a_b__do_it_"
    assert tool_name("ok-name_1", "x-y") == "mcp__ok-name_1__x-y"


def tools_of(manager: McpManager) -> dict[str, str]:
    info = [
        ToolInfo("git_status", "status", {"type": "object"}, True),
        ToolInfo("git_commit", "commit", {"type": "object"}, False),
    ]
    made = [make_tool(manager, "git", "git", i) for i in info]
    return {t.name: t.kind for t in made}


def test_mcp_tools_obey_modes_and_rules(tmp_path: Path) -> None:
    kinds = tools_of(McpManager(tmp_path))
    assert kinds == {"mcp__git__git_status": "read", "mcp__git__git_commit": "execute"}

    def decide(mode: str, name: str, **rules: list[str]) -> str:
        policy = PermissionPolicy(
            mode, tmp_path, **{b: [parse_rule(r) for r in rs] for b, rs in rules.items()}
        )
        return policy.decide(name, kinds[name], {"repo_path": "."}).behavior

    assert decide("default", "mcp__git__git_status") == "allow"  # annotated read-only
    assert decide("default", "mcp__git__git_commit") == "ask"
    assert decide("acceptEdits", "mcp__git__git_commit") == "ask"
    assert decide("plan", "mcp__git__git_commit") == "deny"
    assert decide("plan", "mcp__git__git_status") == "allow"
    assert decide("dontAsk", "mcp__git__git_commit") == "deny"
    assert decide("bypassPermissions", "mcp__git__git_commit") == "allow"
    assert decide("default", "mcp__git__git_commit", allow=["mcp__git"]) == "allow"
    assert decide("default", "mcp__git__git_commit", allow=["mcp__git__git_commit"]) == "allow"
    assert decide("default", "mcp__git__git_commit", allow=["mcp__other"]) == "ask"
    assert decide("default", "mcp__git__git_status", deny=["mcp__git"]) == "deny"
    assert decide("bypassPermissions", "mcp__git__git_commit", deny=["mcp__git"]) == "deny"
    assert decide("default", "mcp__git__git_status", ask=["mcp__git__git_status"]) == "ask"


def test_a_toolbox_without_connected_servers_is_empty(tmp_path: Path) -> None:
    manager = McpManager(tmp_path)
    manager.start([parse_server("bad", {"type": "ws"}, "x", {})])
    assert McpToolbox(manager).tools() == []
    (view,) = manager.views()
    assert view.state == "failed" and "'ws' is not a transport" in (view.error or "")
    assert manager.wait(["bad"], 0.1)["bad"] is not None
    manager.close()


def test_the_commands_and_the_teammate_import_no_mcp_sdk_until_a_server_starts() -> None:
    code = (
        "import sys, swarm.cli.main, swarm.cli.messages, teammate.cli, teammate.mcp.tools, "
        "teammate.mcp.agent; print('mcp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_three_consecutive_connection_errors_of_calls_ask_for_a_reconnect(tmp_path: Path) -> None:
    import asyncio

    from teammate.mcp.client import McpError, _Connection

    class Dropping:  # a session whose transport fails every call
        calls = 0

        async def call_tool(self, name: str, arguments: dict[str, object], **_: object) -> None:
            Dropping.calls += 1
            raise ConnectionError("connection reset")

    manager = McpManager(tmp_path)
    loop = manager._running_loop()
    conn = _Connection(parse_server("web", {"type": "http", "url": "http://x/mcp"}, "f", {}))
    conn.state, conn.session = "connected", Dropping()

    async def event() -> asyncio.Event:
        return asyncio.Event()

    conn.wake = asyncio.run_coroutine_threadsafe(event(), loop).result(5)
    manager._conns["web"] = conn
    for attempt in range(1, 4):
        with pytest.raises(McpError, match="connection reset"):
            manager.call_tool("web", "echo", {})
        assert conn.wake.is_set() is (attempt == 3)
    assert conn.reason == "reconnect" and Dropping.calls == 3
    conn.state = "closed"
    manager.close()


def test_an_ask_flag_naming_an_mcp_server_or_tool_is_a_rule_for_it() -> None:
    from teammate.permissions.policy import rule_or_command_pattern

    assert str(rule_or_command_pattern("mcp__git")) == "mcp__git"
    assert rule_or_command_pattern("mcp__git__git_add").tool_name == "mcp__git__git_add"
    assert rule_or_command_pattern("git push*").tool_name == "Bash"


def test_a_team_files_member_mcp_servers_go_to_its_settings_file(tmp_path: Path) -> None:
    from swarm.up.apply import plan_up
    from swarm.up.spec import load_team_file

    team = write(
        tmp_path / "team.yaml",
        "team: mcpup\nmembers:\n  - name: ann\n    prompt: hi\n    model: sonnet\n"
        "    allow: [mcp__git]\n"
        "    mcp_servers: {git: {command: uvx, args: [mcp-server-git]}}\n",
    )
    (member,) = plan_up(load_team_file(team)).members
    assert member.settings == {
        "permissions": {"allow": ["mcp__git"], "deny": [], "ask": []},
        "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}},
    }
