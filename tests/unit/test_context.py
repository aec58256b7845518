"""CLAUDE.md and agent memory: which files an agent reads and in what order, ``@path`` imports
(relative, from home, nested, cycles, code left alone), a file that cannot be read, the memory
directory per scope with its first 200 lines, and the rules that let the agent keep it."""

from __future__ import annotations

from pathlib import Path

import pytest

from teammate.agent.context import (
    agent_context,
    claude_md_files,
    claude_md_text,
    imports_of,
    memory_dir,
    read_with_imports,
)
from teammate.config.definitions import AgentDefinition
from teammate.permissions.policy import PermissionPolicy


def test_the_files_are_read_from_the_user_then_the_root_down_to_the_working_directory(
    tmp_path: Path,
) -> None:
    root, project = tmp_path / "config", tmp_path / "repo"
    sub = project / "pkg" / "mod"
    sub.mkdir(parents=True)
    root.mkdir()
    files = [
        root / "CLAUDE.md",
        project / "CLAUDE.md",
        project / ".claude" / "CLAUDE.md",
        project / "CLAUDE.local.md",
        sub / "CLAUDE.md",
    ]
    for i, path in enumerate(files):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"rule {i}\n")
    (project / "pkg" / "other").mkdir()
    (project / "pkg" / "other" / "CLAUDE.md").write_text("not on the way\n")
    assert claude_md_files(sub, root) == files
    text = claude_md_text(sub, root)
    assert [text.index(f"rule {i}") for i in range(5)] == sorted(
        text.index(f"rule {i}") for i in range(5)
    )
    assert "not on the way" not in text
    assert claude_md_text(tmp_path / "nowhere", tmp_path / "none") == ""


def test_imports_are_followed_once_relative_to_their_file_and_never_in_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "prefs.md").write_text("from home\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("style: short lines\n@../CLAUDE.md\n@deep.md\n")
    (tmp_path / "docs" / "deep.md").write_text("deep rule\n")
    main = tmp_path / "CLAUDE.md"
    main.write_text(
        "See @docs/style.md and @~/prefs.md.\n"
        "```\n@not/imported.md\n```\n"
        "Use `@decorator` and email me@example.com.\n"
        "@missing.md\n"
    )
    assert imports_of(main.read_text()) == ["docs/style.md", "~/prefs.md", "missing.md"]
    text = read_with_imports(main)
    assert "style: short lines" in text and "deep rule" in text and "from home" in text
    assert text.count("See @docs/style.md") == 1  # the cycle back to CLAUDE.md is not followed
    unreadable = tmp_path / "locked" / "CLAUDE.md"
    unreadable.mkdir(parents=True)  # a directory where a file should be
    assert "could not be read" in read_with_imports(unreadable)


def test_imports_stop_at_five_levels(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"f{i}.md").write_text(f"level {i}\n@f{i + 1}.md\n")
    text = read_with_imports(tmp_path / "f0.md")
    assert "level 5" in text and "level 6" not in text and "more than 5 imports deep" in text


def test_memory_lives_where_its_scope_says_and_the_agent_may_keep_it(tmp_path: Path) -> None:
    root, project = tmp_path / "config", tmp_path / "repo"
    project.mkdir()
    assert memory_dir("user", "keeper", project, root) == root / "agent-memory" / "keeper"
    assert memory_dir("project", "keeper", project, root) == project / ".claude/agent-memory/keeper"
    assert (
        memory_dir("local", "keeper", project, root)
        == project / ".claude/agent-memory-local/keeper"
    )
    with pytest.raises(ValueError):
        memory_dir("project", "../escape", project, root)
    directory = memory_dir("project", "keeper", project, root)
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("".join(f"note {i}\n" for i in range(250)))
    keeper = AgentDefinition("keeper", "keeps notes", "p", memory="project", loads_claude_md=False)
    context = agent_context(keeper, project, root)
    assert "note 199" in context.text and "note 200" not in context.text
    assert "[50 more lines in" in context.text
    policy = PermissionPolicy("default", project, allow=list(context.rules))
    inside = {"file_path": str(directory / "notes.md"), "content": "x"}
    outside = {"file_path": str(project / "x.md"), "content": "x"}
    assert policy.decide("Write", "edit", inside).behavior == "allow"
    assert policy.decide("Write", "edit", outside).behavior == "ask"
    plain = AgentDefinition("plain", "d", "p", loads_claude_md=False)
    assert agent_context(plain, project, root).text == ""
