"""Starting teammates with Claude Code 2.1.332 on either side (docs/interop.md).

A 2.1.332 lead starts a pane teammate (swarm's, through ``CLAUDE_CODE_TEAMMATE_COMMAND``) with
2.1.330's flags and more environment: ``CLAUDE_PROJECT_UUID``, ``CLAUDE_CODE_SPEND_PROJECT``
and two ``CLAUDE_CODE_USER_DELEGATED_SESSION_*_CHECK_PROVIDERS`` always (empty here), and
``CLAUDE_CODE_DISABLE_CRON``, ``CLAUDE_CODE_DISABLE_SHIP``,
``CLAUDE_CODE_DISABLE_RESPONSE_COMPRESSION`` and ``CLAUDE_CODE_BRIDGE_CHILD_HELD_TO_AUTO``
when its own environment has them. swarm's teammate takes that command line and builds its
brain in that environment. The other way, swarm starts a Claude Code teammate with
``CLAUDE_CODE_ENABLE_TODO_TOOLS=1``: without it 2.1.330 and 2.1.332 give a teammate on a newer
model (``claude-sonnet-5-5``, the ``sonnet`` alias) no Task tools. And a settings file's
``PreSkillShellCommand`` hooks (2.1.332's new event) are taken without a warning, and never run.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from pathlib import Path

import pytest
from messages_api import Turn

from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.backends.stub import StubBackend
from swarm.team.lifecycle import spawn_member
from teammate.agent.loop import AgentLoop
from teammate.api.model import ScriptedModel
from teammate.cli import build_brain
from teammate.config.settings import parse_hooks
from teammate.config.skills import SkillSet, discover
from teammate.hooks import Hooks
from teammate.options import MemberSpec, parse
from teammate.permissions.policy import PermissionPolicy
from teammate.reporter import StatusReporter
from teammate.tools.base import ToolContext
from teammate.tools.shell import bash
from teammate.tools.skill import skill

NEW_ENVIRONMENT = {  # what 2.1.332 adds to 2.1.330's teammate environment
    "CLAUDE_PROJECT_UUID": "",
    "CLAUDE_CODE_SPEND_PROJECT": "",
    "CLAUDE_CODE_USER_DELEGATED_SESSION_SERVER_CHECK_PROVIDERS": "",
    "CLAUDE_CODE_USER_DELEGATED_SESSION_ROUTINE_SERVER_CHECK_PROVIDERS": "",
    "CLAUDE_CODE_DISABLE_CRON": "1",
    "CLAUDE_CODE_DISABLE_SHIP": "1",
    "CLAUDE_CODE_DISABLE_RESPONSE_COMPRESSION": "1",
    "CLAUDE_CODE_BRIDGE_CHILD_HELD_TO_AUTO": "1",
}


def lead_command(program: str, script: Path) -> str:
    """A pane teammate's command as a 2.1.332 lead builds it (``cd``, ``env`` with its
    assignments, the program, the flags), every optional flag given."""
    environment = {
        "CLAUDECODE": "1", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        "CLAUDE_CODE_TASK_LIST_ID": "session-1a2b3c4d", "ANTHROPIC_PROFILE": "",
        "ANTHROPIC_CONFIG_DIR": "", "CLAUDE_CODE_ATTRIBUTION_PROJECT": "",
        **NEW_ENVIRONMENT,
        "CLAUDE_CODE_USER_DELEGATED_SESSION_ALLOWED_CHECK_MODELS": "",
        "CLAUDE_CODE_EVEN_MORE_DANGEROUSLY_SKIP_PERMISSIONS": "",
    }  # fmt: skip
    flags = [
        "--agent-id", "alice@session-1a2b3c4d", "--agent-name", "alice",
        "--team-name", "session-1a2b3c4d", "--agent-color", "blue",
        "--parent-session-id", "1a2b3c4d-0000-4000-8000-000000000000",
        "--agent-type", "general-purpose", "--permission-mode", "acceptEdits",
        "--proactivity", "high", "--disallowed-tools", "Bash(rm:*)", "--tools", "Read",
        "--effort", "high", "--setting-sources=user,project", "--managed-settings=",
        "--plugin-dir", "/p", "--plugin-dir-no-mcp", "/q", "--plugin-url", "https://x/p.zip",
        "--project-config-root", "/r", "--mcp-config", '{"mcpServers":{}}',
        "--strict-mcp-config", "--include-unsupported-models", "--no-chrome",
        "--model", "scripted", "--script", str(script),
    ]  # fmt: skip
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in environment.items())
    return f"cd /tmp && env {assignments} {shlex.quote(program)} {shlex.join(flags)}"


def test_swarms_teammate_takes_a_2_1_332_leads_command_line_and_environment(
    paths: TeamPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text("- text: hi\n")
    words = shlex.split(lead_command("swarm-teammate", script))
    program = words.index("swarm-teammate")
    assignments = dict(word.split("=", 1) for word in words[words.index("env") + 1 : program])
    assert NEW_ENVIRONMENT.items() <= assignments.items()

    options = parse(words[program + 1 :])
    assert (options.agent_name, options.team_name) == ("alice", "session-1a2b3c4d")
    assert (options.spec.effort, options.spec.mcp_config) == ("high", '{"mcpServers":{}}')
    assert {"--plugin-dir-no-mcp", "--setting-sources=user,project"} <= set(options.ignored)
    for name, value in assignments.items():
        monkeypatch.setenv(name, value)
    reporter = StatusReporter(None, "alice", "scripted")
    brain = build_brain(options, paths, reporter, print)  # reads the environment
    brain.stop()


def test_a_claude_code_teammate_gets_the_task_tools_and_swarms_own_gets_nothing_new(
    paths: TeamPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_LEAD_SIGNATURES", "off")
    TeamFile(paths).create(cwd=tmp_path)
    stub = StubBackend()
    claude = MemberSpec(
        model="claude-sonnet-5-5", cwd=str(tmp_path), teammate_command=sys.executable
    )
    spawn_member(paths, "cc", "Go.", claude, env={"ANTHROPIC_API_KEY": "k"}, backend=stub)
    spawn_member(paths, "own", "Go.", MemberSpec(cwd=str(tmp_path)), backend=stub, wait_s=0)
    foreign, own = stub.requests
    assert foreign.argv[0] == sys.executable and foreign.argv[-2:] == [
        "--model",
        "claude-sonnet-5-5",
    ]
    assert foreign.env["CLAUDE_CODE_ENABLE_TODO_TOOLS"] == "1"
    assert "CLAUDE_CODE_ENABLE_TODO_TOOLS" not in own.env
    assert {"CLAUDECODE", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"} <= own.env.keys()


def test_pre_skill_shell_command_hooks_are_taken_without_a_warning_and_never_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hooked, inline = tmp_path / "hook-ran", tmp_path / "inline-ran"
    hook = {"type": "command", "command": f"touch {shlex.quote(str(hooked))}"}
    groups = [{"matcher": "Bash", "hooks": [hook]}]
    with caplog.at_level(logging.WARNING):
        parsed = parse_hooks({"PreSkillShellCommand": groups}, "settings.json.hooks")
    assert parsed == {"PreSkillShellCommand": groups} and not caplog.records
    hooks = Hooks.from_groups(parsed, project_dir=tmp_path)
    assert [h["event"] for h in hooks.listing()] == ["PreSkillShellCommand"]

    body = f"Check first: !`touch {inline}`"
    skill_file = tmp_path / "skills" / "check" / "SKILL.md"
    skill_file.parent.mkdir(parents=True)
    skill_file.write_text(f"---\nname: check\ndescription: d\n---\n{body}\n")
    policy = PermissionPolicy("bypassPermissions", tmp_path)
    ctx = ToolContext(
        cwd=tmp_path, skills=SkillSet(discover(tmp_path / "none", tmp_path)), hooks=hooks
    )
    turns = [Turn.tool("Skill", {"skill": "check"}), Turn.text("done")]
    loop = AgentLoop(ScriptedModel(turns), [bash, skill], policy, "t", ctx, hooks=hooks)
    loop.run("check")
    loaded = json.dumps(loop.messages[2]["content"])
    assert json.dumps(body)[1:-1] in loaded  # the text as written: no command ran
    assert not hooked.exists() and not inline.exists()
