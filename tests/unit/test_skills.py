"""Skills in Claude Code's format: discovery (the project's over the user's), front matter read
and checked, a bad skill skipped with a warning, the catalogue, a body with its arguments, and
allowed-tools granted only until the agent's piece of work ends."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from messages_api import Turn

from teammate.agent.loop import AgentLoop
from teammate.api.model import ScriptedModel
from teammate.config.skills import SkillSet, body_text, catalogue_text, discover
from teammate.hooks import Hooks
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.base import ToolContext
from teammate.tools.shell import bash
from teammate.tools.skill import skill


def put(base: Path, name: str, text: str) -> Path:
    path = base / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_skills_are_found_checked_and_the_projects_win(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    user, project = tmp_path / "config" / "skills", tmp_path / "repo" / ".claude" / "skills"
    put(user, "release", "---\nname: release\ndescription: user release\n---\nuser body\n")
    put(project, "release", "---\nname: release\ndescription: Cut a release\n"
        "when_to_use: when asked to ship\nallowed-tools: Bash(make release:*), Read\n---\n"
        "Run make release for $ARGUMENTS.\n")  # fmt: skip
    put(project, "plain", "# Tidy imports\nSort them.\n")
    put(project, "broken", "---\nname: [unclosed\n---\nbody\n")
    put(
        project, "bad-tools", "---\nname: bad-tools\ndescription: d\nallowed-tools: Bash(\n---\nx\n"
    )
    put(
        project,
        "hidden",
        "---\nname: hidden\ndescription: d\ndisable-model-invocation: true\n---\nx\n",
    )
    with caplog.at_level(logging.WARNING):
        skills = discover(tmp_path / "repo", tmp_path / "config")
    assert sorted(skills) == ["hidden", "plain", "release"]
    assert "broken/SKILL.md" in caplog.text and "bad-tools/SKILL.md" in caplog.text
    release = skills["release"]
    assert release.description == "Cut a release" and release.body.startswith("Run make")
    assert [str(r) for r in release.allowed_tools] == ["Bash(make release:*)", "Read"]
    assert skills["plain"].description == "Tidy imports"
    catalogue = catalogue_text(skills)
    assert "- release: Cut a release Use when: when asked to ship" in catalogue
    assert "- plain: Tidy imports" in catalogue and "hidden" not in catalogue
    assert "Run make release" not in catalogue  # bodies load on demand only
    assert body_text(release, "v2 $(rm -rf ~)").endswith("Run make release for v2 $(rm -rf ~).")
    assert body_text(skills["plain"], "x.py").endswith("Sort them.\n\nARGUMENTS: x.py")
    assert catalogue_text({}) == ""


def test_allowed_tools_hold_while_the_skill_is_active_and_no_longer(tmp_path: Path) -> None:
    put(tmp_path / "skills", "greet", "---\nname: greet\ndescription: d\n"
        "allowed-tools: Bash(echo:*)\n---\nSay hello with echo.\n")  # fmt: skip
    skills = discover(tmp_path / "none", tmp_path)
    policy = PermissionPolicy("dontAsk", tmp_path)  # dontAsk: what is not allowed is denied
    turns = [
        Turn.tool("Bash", {"command": "echo before"}),
        Turn.tool("Skill", {"skill": "greet"}),
        Turn.tool("Bash", {"command": "echo during"}),
        Turn.text("done"),
        Turn.tool("Bash", {"command": "echo after"}),
        Turn.text("done again"),
    ]
    model = ScriptedModel(turns)
    ctx = ToolContext(cwd=tmp_path, skills=SkillSet(skills, policy.grant))
    loop = AgentLoop(model, [bash, skill], policy, "test", ctx)
    loop.run("greet")
    loop.run("again")
    results = [
        b["content"] for m in loop.messages if m["role"] == "user"
        for b in m["content"] if b.get("type") == "tool_result"
    ]  # fmt: skip
    assert "denied" in results[0]
    assert results[1].startswith("Launching skill: greet") and "Say hello with echo." in results[1]
    assert results[2].strip() == "during"
    assert "denied" in results[3]  # the next piece of work: the skill is no longer active
    unknown = ScriptedModel([Turn.tool("Skill", {"skill": "nope"}), Turn.text("ok")])
    AgentLoop(unknown, [skill], policy, "t", ctx).run("x")
    said = unknown.requests[-1].messages[-1]["content"][0]["content"]
    assert "Unknown skill: 'nope'; available: greet" in said


def test_a_skills_hooks_are_in_force_while_it_is_active(tmp_path: Path) -> None:
    put(tmp_path / "skills", "careful", "---\nname: careful\ndescription: d\nhooks:\n"
        "  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - {type: command, command: 'echo careful: no shell >&2; exit 2'}\n---\nBe careful.\n")  # fmt: skip
    skills = discover(tmp_path / "none", tmp_path)
    policy = PermissionPolicy("bypassPermissions", tmp_path)
    hooks = Hooks(project_dir=tmp_path)
    ctx = ToolContext(cwd=tmp_path, skills=SkillSet(skills, policy.grant), hooks=hooks)
    turns = [
        Turn.tool("Skill", {"skill": "careful"}),
        Turn.tool("Bash", {"command": "echo during"}),
        Turn.text("done"),
        Turn.tool("Bash", {"command": "echo after"}),
        Turn.text("done again"),
    ]
    loop = AgentLoop(ScriptedModel(turns), [bash, skill], policy, "t", ctx, hooks=hooks)
    loop.run("be careful")
    loop.run("again")
    results = [
        b["content"] for m in loop.messages if m["role"] == "user"
        for b in m["content"] if b.get("type") == "tool_result"
    ]  # fmt: skip
    assert "blocked by a PreToolUse hook: careful: no shell" in results[1]
    assert results[2].strip() == "after"  # the skill's work ended: its hook with it
    assert hooks.commands == []
