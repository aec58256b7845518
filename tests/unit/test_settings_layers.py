"""Settings files in Claude Code's precedence: the user's, the project's, the local one, then
--settings; rules and hooks add up, the rest is replaced by name; each setting says which file it
came from; hooks and MCP servers are checked, and what a newer Claude Code has that swarm does
not run (another event, a prompt hook) is left out with a warning, never fatal."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from teammate.config.settings import SettingsError, layered_settings, load_settings


def put(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def hook(command: str) -> dict[str, object]:
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}


def test_the_four_files_layer_in_claude_codes_order(tmp_path: Path) -> None:
    root, project = tmp_path / "config", tmp_path / "project"
    user = put(
        root / "settings.json",
        {
            "permissions": {"allow": ["Bash(ls:*)"], "defaultMode": "plan"},
            "env": {"A": "user", "B": "user"},
            "hooks": {"PreToolUse": [hook("user.sh")]},
            "mcpServers": {"git": {"command": "user-git"}, "db": {"command": "db"}},
        },
    )
    shared = put(
        project / ".claude" / "settings.json",
        {
            "permissions": {"deny": ["Read(./.env)"]},
            "hooks": {
                "PreToolUse": [hook("project.sh")],
                "Stop": [{"hooks": [{"command": "s.sh"}]}],
            },
            "mcpServers": {"git": {"command": "project-git"}},
        },
    )
    local = put(
        project / ".claude" / "settings.local.json",
        {
            "permissions": {"allow": ["Bash(make:*)"], "defaultMode": "acceptEdits"},
            "env": {"B": "local"},
        },
    )
    flag = put(tmp_path / "flag.json", {"hooks": {"PreToolUse": [hook("flag.sh")]}})
    settings = layered_settings(project, root, flag)
    assert [str(r) for r in settings.rules["allow"]] == ["Bash(ls:*)", "Bash(make:*)"]
    assert [str(r) for r in settings.rules["deny"]] == ["Read(./.env)"]
    assert settings.default_mode == "acceptEdits"
    assert settings.env == {"A": "user", "B": "local"}
    commands = [g["hooks"][0]["command"] for g in settings.hooks["PreToolUse"]]
    assert commands == ["user.sh", "project.sh", "flag.sh"]
    assert settings.mcp_servers == {"git": {"command": "project-git"}, "db": {"command": "db"}}
    assert settings.origins["permissions.allow[0]"] == str(user)
    assert settings.origins["permissions.allow[1]"] == str(local)
    assert settings.origins["hooks.PreToolUse[1]"] == str(shared)
    assert settings.origins["hooks.PreToolUse[2]"] == str(flag)
    assert settings.origins["mcpServers.git"] == str(shared)
    assert settings.origins["defaultMode"] == str(local)
    assert settings.origins["env.B"] == str(local)
    # nothing there: empty settings; a --settings file that is missing: an error naming it
    empty = layered_settings(tmp_path / "none", tmp_path / "none")
    assert not any(empty.rules.values()) and not empty.hooks and not empty.mcp_servers
    with pytest.raises(SettingsError, match=r"cannot read settings .*missing.json"):
        layered_settings(project, root, tmp_path / "missing.json")


def test_hooks_and_servers_are_checked_and_newer_kinds_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = [
        ({"hooks": []}, "hooks must be an object of events"),
        ({"hooks": {"Stop": {}}}, r"hooks.Stop must be a list of matcher groups"),
        ({"hooks": {"Stop": [{"matcher": 3, "hooks": []}]}}, r"matcher must be a string"),
        ({"hooks": {"Stop": [{"hooks": [{"command": ""}]}]}}, r"command must be a non-empty"),
        ({"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": -1}]}]}}, r"timeout must be"),
        ({"mcpServers": {"git": "uvx"}}, "'mcpServers' must be an object of server objects"),
    ]
    for value, message in bad:
        with pytest.raises(SettingsError, match=message):
            load_settings(put(tmp_path / "s.json", value))
    newer = {
        "hooks": {
            "PermissionRequest": [hook("x.sh")],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "ok?"}, {"command": "ok.sh"}]}],
        }
    }
    with caplog.at_level(logging.WARNING):
        settings = load_settings(put(tmp_path / "s.json", newer))
    assert list(settings.hooks) == ["Stop"]
    assert settings.hooks["Stop"][0]["hooks"] == [{"command": "ok.sh"}]
    assert "'PermissionRequest' is not one swarm runs" in caplog.text
    assert "'prompt' hooks are not run by swarm" in caplog.text
