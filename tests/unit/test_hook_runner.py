"""The hook runner with real ``/bin/sh`` processes: exit codes, JSON answers, the timeout that
kills a hanging hook's whole process group, a missing command, matchers, the JSON input that
arrives byte for byte and never reaches a shell, ``CLAUDE_PROJECT_DIR``, an agent definition's
hooks scoped to it, and the settings files a listing names."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from teammate.hooks import (
    HookBlocked,
    HookCommand,
    Hooks,
    before_task_completed,
    project_hooks,
)


def hooks_of(event: str, command: str, matcher: str = "", timeout: float = 10) -> Hooks:
    groups = {event: [{"matcher": matcher, "hooks": [{"command": command, "timeout": timeout}]}]}
    return Hooks.from_groups(groups, project_dir=Path.cwd())


def python_hook(tmp_path: Path, body: str) -> str:
    """A hook command running a Python script with `body`."""
    script = tmp_path / f"hook{len(list(tmp_path.glob('hook*.py')))}.py"
    script.write_text("import json, sys\n" + body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_exit_0_goes_on_and_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    assert not hooks_of("PreToolUse", "true").run("PreToolUse", {}, "Bash").blocked
    result = hooks_of("PreToolUse", "echo 'no rm here' >&2; exit 2").run("PreToolUse", {}, "Bash")
    assert result.blocked and result.reason == "no rm here" and result.ran == 1


def test_other_exits_and_a_missing_command_are_non_blocking_errors(tmp_path: Path) -> None:
    failing = hooks_of("PostToolUse", "echo broken >&2; exit 1").run("PostToolUse", {}, "Read")
    assert (
        not failing.blocked and "exit code 1" in failing.errors[0] and "broken" in failing.errors[0]
    )
    missing = hooks_of("PostToolUse", str(tmp_path / "no-such-hook.sh")).run("PostToolUse", {})
    assert not missing.blocked and "command not found" in missing.errors[0]
    assert "no-such-hook.sh" in missing.errors[0]  # the error names the hook


def test_json_answers_decide_instead_of_the_exit_code(tmp_path: Path) -> None:
    def decide(answer: dict[str, Any]) -> Any:
        command = f"printf %s {shlex.quote(json.dumps(answer))}"
        return hooks_of("PreToolUse", command).run("PreToolUse", {}, "Write")

    specific = {"hookEventName": "PreToolUse", "permissionDecisionReason": "reviewed only"}
    denied = decide({"hookSpecificOutput": {**specific, "permissionDecision": "deny"}})
    assert denied.decision == "deny" and denied.reason == "reviewed only" and not denied.blocked
    allowed = decide({"hookSpecificOutput": {**specific, "permissionDecision": "allow"}})
    assert allowed.decision == "allow"
    blocked = decide({"decision": "block", "reason": "not today"})
    assert blocked.blocked and blocked.reason == "not today"
    stopped = decide({"continue": False, "stopReason": "halt"})
    assert stopped.stopped and stopped.refused and stopped.reason == "halt"
    assert not stopped.blocked  # a Stop hook's stop is not a "work on"


def test_the_strongest_decision_of_several_hooks_wins(tmp_path: Path) -> None:
    def answer(decision: str) -> dict[str, Any]:
        text = json.dumps({"hookSpecificOutput": {"permissionDecision": decision}})
        return {"command": f"printf %s {shlex.quote(text)}"}

    groups = {"PreToolUse": [{"matcher": "", "hooks": [answer("allow"), answer("ask")]}]}
    result = Hooks.from_groups(groups).run("PreToolUse", {}, "Bash")
    assert result.decision == "ask" and result.ran == 2


def test_the_matcher_is_a_regex_on_the_tool_name() -> None:
    hook = HookCommand("PreToolUse", "Bash|Write", "true", 1, "x")
    assert hook.matches("Bash") and hook.matches("Write") and not hook.matches("Read")
    assert not hook.matches("BashOutput")  # the whole name
    assert HookCommand("PreToolUse", "*", "true", 1, "x").matches("Read")
    assert HookCommand("PreToolUse", "", "true", 1, "x").matches("Read")
    assert HookCommand("PreToolUse", "mcp__.*", "true", 1, "x").matches("mcp__git__log")


def test_a_hanging_hook_is_killed_with_its_process_group_at_its_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sleep 300 & echo $! > {shlex.quote(str(pid_file))}; wait"
    result = hooks_of("PreToolUse", command, timeout=0.5).run("PreToolUse", {}, "Bash")
    assert not result.blocked and "timed out after 0.5 s" in result.errors[0]
    child = int(wait_for(lambda: pid_file.read_text().strip(), "the hook's child pid"))

    def gone() -> bool:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z")

    wait_for(gone, "the hook's sleeping child to be killed")


HOSTILE = {
    "command": "echo $(touch pwned) `touch pwned2` \"double\" 'single' ; rm -rf / #",
    "lines": "one\ntwo\r\nthree\x00four",
    "unicode": "é ✓ 日本 \U0001f600 \u202e",
    "backslash": "\\n is not a newline \\",
}


def test_hostile_input_arrives_byte_for_byte_on_stdin_and_never_reaches_a_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / "seen.json"
    hooks = hooks_of("PreToolUse", f"cat > {shlex.quote(str(seen))}")
    hooks.session_id = "s-1"
    hooks.run("PreToolUse", {"tool_name": "Bash", "tool_input": HOSTILE}, "Bash", tmp_path)
    raw = seen.read_bytes()
    data = json.loads(raw)
    assert data["tool_input"] == HOSTILE
    assert raw == json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert data["hook_event_name"] == "PreToolUse" and data["session_id"] == "s-1"
    assert data["cwd"] == str(tmp_path) and data["permission_mode"] == "default"
    assert {"transcript_path", "tool_name"} <= set(data)
    assert not list(tmp_path.glob("pwned*"))  # nothing in the input was run


def test_a_hook_runs_in_the_project_with_claude_project_dir_set(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    command = f'printf "%s|%s" "$CLAUDE_PROJECT_DIR" "$PWD" > {shlex.quote(str(out))}'
    groups = {"SessionStart": [{"hooks": [{"command": command}]}]}
    Hooks.from_groups(groups, project_dir=tmp_path).run("SessionStart", {"source": "startup"})
    assert out.read_text() == f"{tmp_path}|{tmp_path}"


def test_session_start_stdout_is_context(tmp_path: Path) -> None:
    result = hooks_of("SessionStart", "echo 'the build is red'").run("SessionStart", {})
    assert result.context == ["the build is red"]
    assert hooks_of("PreToolUse", "echo chatter").run("PreToolUse", {}).context == []


def test_definition_hooks_are_added_and_its_stop_hooks_fire_as_subagent_stop() -> None:
    base = hooks_of("PreToolUse", "true", "Bash")
    scoped = base.scoped(
        {"Stop": [{"hooks": [{"command": "echo no >&2; exit 2"}]}]},
        "agent reviewer",
        "SubagentStop",
    )
    assert [c.event for c in base.commands] == ["PreToolUse"]  # the parent's are unchanged
    assert [c.event for c in scoped.commands] == ["PreToolUse", "SubagentStop"]
    assert scoped.commands[1].source == "agent reviewer"
    assert scoped.run("SubagentStop", {}).blocked and not scoped.run("Stop", {}).blocked


def test_task_completed_blocked_raises_with_the_hook_s_reason(tmp_path: Path) -> None:
    record = tmp_path / "task.json"
    body = (
        f"open({str(record)!r}, 'w').write(sys.stdin.read())\n"
        "print('tests must pass first', file=sys.stderr)\nsys.exit(2)\n"
    )
    hooks = hooks_of("TaskCompleted", python_hook(tmp_path, body))

    class Task:
        id, subject, description = "7", "ship it", "all of it"

    with pytest.raises(HookBlocked, match="tests must pass first"):
        before_task_completed(hooks, Task(), "alice", "t")
    data = json.loads(record.read_text())
    assert (data["task_id"], data["task_subject"], data["teammate_name"]) == (
        "7",
        "ship it",
        "alice",
    )
    assert data["hook_event_name"] == "TaskCompleted" and data["team_name"] == "t"


def test_project_hooks_read_user_project_and_local_settings_and_list_their_files(
    tmp_path: Path, config_root: Path
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)

    def settings(path: Path, event: str) -> None:
        path.write_text(json.dumps({"hooks": {event: [{"hooks": [{"command": "true"}]}]}}))

    settings(config_root / "settings.json", "Stop")
    settings(project / ".claude" / "settings.json", "PreToolUse")
    settings(project / ".claude" / "settings.local.json", "PreToolUse")
    listing = project_hooks(project, config_root).listing()
    assert [(h["event"], Path(h["source"]).name) for h in listing] == [
        ("PreToolUse", "settings.json"),
        ("PreToolUse", "settings.local.json"),
        ("Stop", "settings.json"),
    ]
    assert listing[2]["source"] == str(config_root / "settings.json")
    assert listing[0]["timeout"] == 60.0


def test_a_broken_settings_file_means_no_hooks_not_a_failure(
    tmp_path: Path, config_root: Path
) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    assert project_hooks(tmp_path, config_root).commands == []


def loop_with(tmp_path: Path, groups: dict[str, Any], turns: list[Any]) -> Any:
    from teammate.agent.loop import AgentLoop
    from teammate.api.model import ScriptedModel
    from teammate.permissions.policy import PermissionPolicy
    from teammate.tools.base import ToolContext
    from teammate.tools.files import read

    model = ScriptedModel(turns)
    hooks = Hooks.from_groups(groups, project_dir=tmp_path)
    agent = AgentLoop(
        model, [read], PermissionPolicy("default", tmp_path), "test", ToolContext(cwd=tmp_path),
        hooks=hooks,
    )  # fmt: skip
    return agent, model


def test_a_blocking_user_prompt_submit_hook_drops_the_prompt_and_exit_0_adds_context(
    tmp_path: Path,
) -> None:
    from teammate.api.script import Turn

    body = (
        "prompt = json.load(sys.stdin)['prompt']\n"
        "if 'password' in prompt:\n    print('no secrets in prompts', file=sys.stderr)\n"
        "    sys.exit(2)\nprint('Today is release day.')\n"
    )
    groups = {"UserPromptSubmit": [{"hooks": [{"command": python_hook(tmp_path, body)}]}]}
    agent, model = loop_with(tmp_path, groups, [Turn.text("ok")])
    dropped = agent.run("the password is hunter2")
    assert dropped.turns == 0 and not model.requests and not agent.messages  # never sent
    assert agent.run("what day is it?").text == "ok"
    sent = json.dumps(model.requests[0].messages)
    assert "what day is it?" in sent and "Today is release day." in sent
    assert "hunter2" not in sent


def test_a_stop_hook_that_always_blocks_is_bounded(tmp_path: Path) -> None:
    from teammate.agent.loop import MAX_STOP_BLOCKS
    from teammate.api.script import Turn

    groups = {"Stop": [{"hooks": [{"command": "echo 'keep going' >&2; exit 2"}]}]}
    turns = [Turn.text(f"stop {i}") for i in range(MAX_STOP_BLOCKS + 1)]
    agent, model = loop_with(tmp_path, groups, turns)
    result = agent.run("work")
    assert result.stop == "end_turn" and len(model.requests) == MAX_STOP_BLOCKS + 1
    assert json.dumps(model.requests[1].messages).count("keep going") == 1


def test_continue_false_ends_the_turn_and_the_calls_after_it_do_not_run(tmp_path: Path) -> None:
    from teammate.api.script import Turn

    (tmp_path / "a.txt").write_text("A")
    answer = json.dumps({"continue": False, "stopReason": "enough for today"})
    groups = {"PreToolUse": [{"hooks": [{"command": f"printf %s {shlex.quote(answer)}"}]}]}
    reads = [("Read", {"file_path": "a.txt"}), ("Read", {"file_path": "a.txt"})]
    agent, model = loop_with(tmp_path, groups, [Turn.tools(reads), Turn.text("never")])
    result = agent.run("read twice")
    assert result.stop == "end_turn" and len(model.requests) == 1  # no further model call
    results = agent.messages[-1]["content"]
    assert [r["is_error"] for r in results] == [True, True]
    assert "enough for today" in results[0]["content"] and "Not run" in results[1]["content"]


def test_a_stop_hook_answering_continue_false_lets_the_agent_stop(tmp_path: Path) -> None:
    from teammate.api.script import Turn

    answer = json.dumps({"continue": False, "stopReason": "done"})
    groups = {"Stop": [{"hooks": [{"command": f"printf %s {shlex.quote(answer)}"}]}]}
    agent, model = loop_with(tmp_path, groups, [Turn.text("finished"), Turn.text("never")])
    assert agent.run("go").text == "finished" and len(model.requests) == 1


def test_a_bad_hook_in_an_agent_file_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    from teammate.config.definitions import AgentDefinitionError, parse_agent_text

    text = "---\nname: r\ndescription: d\nhooks:\n  PreToolUse:\n    - hooks: [{command: 3}]\n---\n"
    with pytest.raises(AgentDefinitionError, match=r"r\.md:4: .*command must be a non-empty"):
        parse_agent_text(text, tmp_path / "r.md")


def test_input_that_is_not_valid_unicode_is_escaped_not_a_crash(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    hooks = hooks_of("PreToolUse", f"cat > {shlex.quote(str(seen))}")
    result = hooks.run("PreToolUse", {"tool_input": {"command": "echo \ud800 é"}}, "Bash")
    assert not result.errors
    assert json.loads(seen.read_bytes())["tool_input"]["command"] == "echo \ud800 é"
