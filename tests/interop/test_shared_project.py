"""One project directory, two kinds of teammate: a real Claude Code 2.1.88 teammate and a swarm
Claude teammate, both working in it, load the same Claude Code files (`docs/interop.md`): the
project's CLAUDE.md with what it imports, its skills (the catalogue, then a skill's body once
each loads it with the Skill tool), its hooks (a PreToolUse hook of the project's settings
sees each one's Bash call, with Claude Code's hook input) and its MCP servers (`.mcp.json`: each
lists the server's tools as ``mcp__tools__*`` and calls one). The test reads what each sent to
the model, and what the hook was given."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import claude_code
import pytest
import test_interop
from claude_code import MODEL
from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn, by_agent
from test_interop import START_S, spawn_claude_code

from protocols.paths import TeamPaths

pytestmark = pytest.mark.interop


claude = test_interop.claude  # the fixtures, shared
work = test_interop.work
team = test_interop.team


def project(work: Path) -> None:
    (work / "CLAUDE.md").write_text(
        "Project rule: name every branch MANGO-<topic>.\n@docs/more.md\n"
    )
    (work / "docs").mkdir()
    (work / "docs" / "more.md").write_text("Imported rule: tag releases PAPAYA.\n")
    skill = work / ".claude" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets the team KIWI\n---\nSay GUAVA to everyone.\n"
    )


def hooked(work: Path) -> Path:
    """A PreToolUse hook on Bash that keeps every input it is given, one JSON object a line."""
    log = work / "hook-inputs.jsonl"
    hook = {"type": "command", "command": f"cat >> '{log}'; echo >> '{log}'"}
    settings = {
        "permissions": {"allow": ["Bash(echo:*)", "Bash(sleep:*)", "mcp__tools"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]},
        "enableAllProjectMcpServers": True,  # Claude Code asks before using .mcp.json otherwise
    }
    (work / ".claude" / "settings.json").write_text(json.dumps(settings))
    return log


def served(work: Path) -> None:
    """The project's .mcp.json: the test suite's small MCP server over stdio."""
    server = Path(__file__).resolve().parent.parent / "mcp_server.py"
    config = {"mcpServers": {"tools": {"command": sys.executable, "args": [str(server), "stdio"]}}}
    (work / ".mcp.json").write_text(json.dumps(config))


def results(body: dict[str, Any]) -> int:
    return sum(
        1 for m in body["messages"] if isinstance(m["content"], list)
        for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
    )  # fmt: skip


def test_claude_code_and_swarm_load_the_same_claude_md_and_skills(
    claude: Path,
    team: TeamPaths,
    work: Path,
    tmux_socket: str,
) -> None:
    project(work)
    log = hooked(work)
    served(work)
    seen: dict[str, list[dict[str, Any]]] = {"alice": [], "bob": []}

    def player(name: str) -> Any:
        def play(body: dict[str, Any]) -> Turn:
            if not body.get("tools"):  # Claude Code's side calls (a session title)
                return Turn.text("title")
            seen[name].append(body)
            said = json.dumps(body["messages"], ensure_ascii=False)
            if results(body) == 0:
                return Turn.tool("Skill", {"skill": "greet"})
            if f"from-{name}" not in said:
                return Turn.tool("Bash", {"command": f"echo from-{name}", "description": "say"})
            if f"echo: mcp-{name}" in said:
                return Turn.text("greeted")
            if any(t["name"] == "mcp__tools__echo" for t in body["tools"]):
                return Turn.tool("mcp__tools__echo", {"text": f"mcp-{name}"})
            # Claude Code 2.1.330 defers MCP tools: it names them, and ToolSearch loads them
            deferred = "mcp__tools__echo" in said and "select:mcp__tools__" not in said
            if deferred and any(t["name"] == "ToolSearch" for t in body["tools"]):
                query = "select:mcp__tools__echo,mcp__tools__shout"
                return Turn.tool("ToolSearch", {"query": query})
            # the server is still starting (its tools join once it is connected): wait a little
            return Turn.tool("Bash", {"command": "sleep 0.2", "description": "wait"})

        return play

    with MessagesAPI(by_agent({"alice": player("alice"), "bob": player("bob")})) as api:
        spawned = swarm(
            "spawn", "bob", "-p", "Greet the team.", "--model", MODEL, "--backend", "tmux",
            "--cwd", str(work),
            env={"ANTHROPIC_BASE_URL": api.url_for("bob"), "ANTHROPIC_API_KEY": claude_code.API_KEY},
        )  # fmt: skip
        assert spawned.returncode == 0, spawned.stderr
        # bob joins first: Claude Code 2.1.88 rewrites config.json without a lock, and a member
        # added while it runs can be lost (docs/interop.md)
        wait_for(lambda: seen["bob"], "bob's first request", START_S)
        spawn_claude_code("alice", api, claude, work, "Greet the team.")
        for name in ("alice", "bob"):
            wait_for(
                lambda n=name: any(f"echo: mcp-{n}" in json.dumps(b["messages"]) for b in seen[n]),
                f"{name} to use a skill, Bash and the MCP server",
                START_S,
            )
        for name in ("bob", "alice"):
            swarm("shutdown", name, "--force", "--wait", "5")

    for name, bodies in seen.items():
        sent = [json.dumps([b.get("system"), b["messages"]], ensure_ascii=False) for b in bodies]
        assert "name every branch MANGO-<topic>" in sent[0], name  # CLAUDE.md
        assert "tag releases PAPAYA" in sent[0], name  # what it imports
        assert any("- greet: Greets the team KIWI" in s for s in sent), name  # the catalogue
        assert "Say GUAVA to everyone." not in sent[0], name  # the body only once loaded
        after = json.dumps(bodies[1]["messages"][-1], ensure_ascii=False)
        assert "Launching skill: greet" in after and "Say GUAVA to everyone." in after, name
        ran = json.dumps(bodies[2]["messages"][-1], ensure_ascii=False)
        assert f"from-{name}" in ran, name  # the hook let the call run
        listed = next(b for b in bodies if any(t["name"] == "mcp__tools__echo" for t in b["tools"]))
        assert "mcp__tools__shout" in [t["name"] for t in listed["tools"]], name
        assert any(f"echo: mcp-{name}" in json.dumps(b["messages"]) for b in bodies), name
    inputs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by_command = {i["tool_input"]["command"]: i for i in inputs}
    for name in ("alice", "bob"):
        given = by_command[f"echo from-{name}"]
        assert (given["hook_event_name"], given["tool_name"]) == ("PreToolUse", "Bash"), given
        assert Path(given["cwd"]).resolve() == work.resolve(), given
        assert given["session_id"] and given["transcript_path"], given
