"""Fork's pieces without processes: the setting, the child's conversation, the marker scan, the
worktree notice, and a settings file's ``env``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teammate.agent.fork import (
    PLACEHOLDER,
    directive_text,
    fork_enabled,
    fork_messages,
    is_fork_conversation,
)
from teammate.config.settings import SettingsError, load_settings
from teammate.tools.base import ToolError


def test_forking_is_off_unless_the_environment_or_the_settings_turn_it_on() -> None:
    assert not fork_enabled({})
    assert not fork_enabled({"SWARM_FORK_SUBAGENT": "0"}, {"SWARM_FORK_SUBAGENT": "1"})
    assert fork_enabled({"SWARM_FORK_SUBAGENT": "1"})
    assert fork_enabled({}, {"SWARM_FORK_SUBAGENT": "true"})
    assert not fork_enabled({}, {"SWARM_FORK_SUBAGENT": "maybe"})


HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "work"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "forking"},
            {"type": "tool_use", "id": "t1", "name": "Agent", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {}},
        ],
    },
]


def test_a_child_answers_every_tool_use_of_the_forking_turn_with_the_placeholder() -> None:
    messages = fork_messages(HISTORY, "t1", "DIRECTIVE")
    assert messages[:2] == HISTORY and messages[0] is not HISTORY[0]  # a copy
    *answers, directive = messages[2]["content"]
    assert [(a["tool_use_id"], a["content"]) for a in answers] == [
        ("t1", PLACEHOLDER),
        ("t2", PLACEHOLDER),
    ]
    assert "cache_control" in answers[-1] and "cache_control" not in answers[0]
    assert directive == {"type": "text", "text": "DIRECTIVE"}


def test_a_fork_needs_the_turn_that_called_it() -> None:
    with pytest.raises(ToolError, match="turn that calls Agent"):
        fork_messages(HISTORY[:1], "t1", "x")
    with pytest.raises(ToolError, match="not in it"):
        fork_messages(HISTORY, "t9", "x")


def test_the_marker_counts_only_at_the_start_of_a_users_text_block() -> None:
    child = fork_messages(HISTORY, "t1", directive_text("do it"))
    assert is_fork_conversation(child)
    assert not is_fork_conversation(HISTORY)
    quoted = [{"role": "user", "content": [{"type": "text", "text": "see <forked-worker>"}]}]
    assert not is_fork_conversation(quoted)


def test_the_directive_asks_for_the_answer_form_and_tells_a_worktree_child_to_translate() -> None:
    plain = directive_text("find the bug")
    assert plain.startswith("<forked-worker>") and plain.endswith("</forked-worker>")
    assert "Directive: find the bug" in plain and "worktree" not in plain
    for part in ("Scope:", "Result:", "Key files:", "Files changed:", "Issues:"):
        assert part in plain
    moved = directive_text("x", Path("/repo/.claude/worktrees/agent-1"), Path("/repo"))
    assert "/repo/.claude/worktrees/agent-1" in moved and "read a file again" in moved


def test_a_settings_files_env_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"env": {"SWARM_FORK_SUBAGENT": "1"}}))
    assert load_settings(good).env == {"SWARM_FORK_SUBAGENT": "1"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"env": {"SWARM_FORK_SUBAGENT": 1}}))
    with pytest.raises(SettingsError, match="'env' must be an object of string values"):
        load_settings(bad)
