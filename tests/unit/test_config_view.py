"""`swarm config`: what a member loads from Claude Code's files and where each piece comes from
(settings in precedence with their files, CLAUDE.md, skills, memory), for a member as its entry
says it was started and for a directory; env values never shown; a misspelt member is an error."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import swarm

from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_swarm_config_says_where_each_setting_comes_from(config_root: Path, tmp_path: Path) -> None:
    project = tmp_path / "app"
    user = put(
        config_root / "settings.json",
        json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}, "env": {"TOKEN": "s3cret"}}),
    )
    shared = put(
        project / ".claude" / "settings.json",
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
                    ]
                },
                "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}},
            }
        ),
    )
    flag = put(
        tmp_path / "alice.settings.json",
        json.dumps({"permissions": {"defaultMode": "acceptEdits"}}),
    )
    put(project / "CLAUDE.md", "Be brief.\n")
    skill = put(
        project / ".claude" / "skills" / "deploy" / "SKILL.md",
        "---\nname: deploy\ndescription: d\n---\nx\n",
    )
    put(
        project / ".claude" / "agents" / "keeper.md",
        "---\nname: keeper\ndescription: k\nmemory: project\n---\nKeep.\n",
    )
    team = TeamFile(TeamPaths(config_root, "t"))
    team.create(cwd=project)
    team.add_member("alice", cwd=project, agent_type="keeper",
                    swarmSpec={"model": "sonnet", "agent_type": "keeper", "settings": str(flag)})  # fmt: skip
    result = swarm("config", "alice", "--json")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert config["member"] == "alice" and config["agentType"] == "keeper"
    assert config["settingsFiles"] == [str(user), str(shared), str(flag)]
    assert config["permissions"] == [{"behavior": "allow", "rule": "Bash(ls:*)", "from": str(user)}]
    assert config["defaultMode"] == {"mode": "acceptEdits", "from": str(flag)}
    assert config["env"] == [{"key": "TOKEN", "from": str(user)}]
    assert "s3cret" not in result.stdout
    (hook,) = config["hooks"]
    assert (hook["event"], hook["matcher"], hook["command"], hook["from"]) == (
        "PreToolUse",
        "Bash",
        "./guard.sh",
        str(shared),
    )
    assert config["mcpServers"] == [
        {"name": "git", "server": "stdio uvx mcp-server-git", "from": str(shared)}
    ]
    assert str(project / "CLAUDE.md") in config["claudeMd"]
    assert config["skills"] == [{"name": "deploy", "from": str(skill)}]
    assert config["memory"] == str(project / ".claude" / "agent-memory" / "keeper")
    text = swarm("config", "alice").stdout
    assert f"allow Bash(ls:*)  ({user})" in text and "PreToolUse [Bash] ./guard.sh" in text
    assert "s3cret" not in text
    here = swarm("config", "--cwd", str(project), "--json", team=None)
    assert here.returncode == 0 and json.loads(here.stdout)["agentType"] == "general-purpose"
    missing = swarm("config", "alcie")
    assert missing.returncode == 1 and "no member named 'alcie'" in missing.stderr
