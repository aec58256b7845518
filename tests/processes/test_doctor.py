"""`swarm doctor`: each finding, from a real project directory and config root."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import swarm


def checks(result_stdout: str) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(result_stdout)}


def test_doctor_finds_what_works_and_what_does_not(tmp_path: Path, config_root: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    servers = {
        "here": {"command": sys.executable, "args": ["-V"]},
        "gone": {"command": "no-such-mcp-server-$(id)"},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    result = swarm("doctor", "--cwd", str(project), "--json", team=None, env={"PATH": ""})
    assert result.returncode == 1, result.stderr  # a server's command is missing
    found = checks(result.stdout)
    assert found["config root"]["state"] == "ok"
    assert found["MCP server here"]["state"] == "ok"
    gone = found["MCP server gone"]
    assert gone["state"] == "fail" and "not found" in gone["found"] and ".mcp.json" in gone["fix"]
    assert found["MCP server web"]["state"] == "ok"
    assert found["Claude Code"]["state"] == "warn"  # not on this PATH
    sandbox = found["sandbox"]  # nor is bubblewrap
    assert sandbox["state"] == "warn" and "bubblewrap" in sandbox["found"] + sandbox["fix"]
    assert list(config_root.iterdir()) == [] or all(
        not p.name.startswith(".swarm-doctor-") for p in config_root.iterdir()
    )


def test_doctor_fails_on_a_config_root_it_cannot_write(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    result = swarm("doctor", "--json", team=None, env={"CLAUDE_CONFIG_DIR": str(blocked)})
    assert result.returncode == 1
    root = checks(result.stdout)["config root"]
    assert root["state"] == "fail" and "CLAUDE_CONFIG_DIR" in root["fix"]
    assert blocked.read_text() == "not a directory"
