"""The Bash tool with real processes: output, exit status, the time limit and its cleanup."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import wait_for

from teammate.tools.base import ToolContext, ToolError
from teammate.tools.shell import bash


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work dir"
    work.mkdir()
    return ToolContext(cwd=work)


def alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def read_pid(path: Path) -> int:
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), f"{path.name}"))


def test_name_kind_and_fields() -> None:
    assert (bash.name, bash.kind, bash.read_only) == ("Bash", "execute", False)
    schema = bash.schema()["input_schema"]
    assert set(schema["properties"]) == {"command", "timeout", "description", "run_in_background"}
    assert schema["required"] == ["command"]


def test_runs_in_the_working_directory(ctx: ToolContext) -> None:
    assert bash.run(ctx, {"command": "pwd", "description": "Show the directory"}) == str(ctx.cwd)


def test_stdout_then_stderr(ctx: ToolContext) -> None:
    out = bash.run(ctx, {"command": "echo err >&2; echo out"})
    assert out == "out\nerr"
    assert bash.run(ctx, {"command": "echo only-err >&2"}) == "only-err"
    assert bash.run(ctx, {"command": "true"}) == "(no output)"


def test_stdin_is_closed(ctx: ToolContext) -> None:
    assert bash.run(ctx, {"command": "cat; echo done"}) == "done"


def test_non_zero_exit_is_an_error_with_the_output(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as caught:
        bash.run(ctx, {"command": "echo partial; echo bad >&2; exit 3"})
    assert str(caught.value) == "Exit code 3\npartial\nbad"
    with pytest.raises(ToolError, match=r"^Exit code 137\n"):
        bash.run(ctx, {"command": "kill -9 $$"})


def test_command_substitution_quotes_and_newlines_reach_bash_intact(ctx: ToolContext) -> None:
    assert bash.run(ctx, {"command": 'echo "$(echo inner) $((1 + 2))"'}) == "inner 3"
    command = "printf '%s|' \"a b\" 'c \"d\"' $'e\\tf'\nprintf 'second line\\n'"
    assert bash.run(ctx, {"command": command}) == 'a b|c "d"|e\tf|second line'
    (ctx.cwd / "f.txt").write_text("héllo 🐍\n")
    assert bash.run(ctx, {"command": "cat f.txt"}) == "héllo 🐍"


def test_output_is_capped_keeping_head_and_tail(ctx: ToolContext) -> None:
    ctx.output_limit = 1000
    out = bash.run(
        ctx, {"command": "echo START; head -c 5000 /dev/zero | tr '\\0' x; echo; echo END"}
    )
    assert len(out) < 1100
    assert out.startswith("START\nxxx")
    assert out.endswith("xxx\nEND")
    assert "characters truncated] ..." in out


def test_timeout_kills_the_whole_process_group(ctx: ToolContext, tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    command = f"echo started; sleep 300 & echo $! > '{pid_file}'; wait"
    with pytest.raises(ToolError) as caught:
        bash.run(ctx, {"command": command, "timeout": 2000})
    assert str(caught.value) == "Command timed out after 2 s\nstarted"
    sleeper = read_pid(pid_file)
    wait_for(lambda: not alive(sleeper), f"the background sleep {sleeper} to be killed")


def test_a_background_child_holding_the_output_does_not_hang(
    ctx: ToolContext, tmp_path: Path
) -> None:
    pid_file = tmp_path / "sleeper.pid"
    out = bash.run(ctx, {"command": f"sleep 300 & echo $! > '{pid_file}'; echo done"})
    assert out == "done"
    sleeper = read_pid(pid_file)
    wait_for(lambda: not alive(sleeper), f"the background sleep {sleeper} to be killed")


def test_a_detached_background_child_is_left_alone(ctx: ToolContext, tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    command = f"sleep 300 > /dev/null 2>&1 & echo $! > '{pid_file}'; echo done"
    assert bash.run(ctx, {"command": command}) == "done"
    sleeper = read_pid(pid_file)
    try:
        assert alive(sleeper)
    finally:
        os.kill(sleeper, 9)


def test_invalid_input_names_the_field(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="invalid input for Bash: command"):
        bash.run(ctx, {"description": "nothing to run"})
    with pytest.raises(ToolError, match=r"invalid input for Bash: timeout.*600000"):
        bash.run(ctx, {"command": "true", "timeout": 600_001})
    with pytest.raises(ToolError, match="timeout"):
        bash.run(ctx, {"command": "true", "timeout": 0})
    with pytest.raises(ToolError, match=r"^Background commands are not supported"):
        bash.run(ctx, {"command": "true", "run_in_background": True})


def test_a_missing_working_directory(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="working directory does not exist"):
        bash.run(ToolContext(cwd=tmp_path / "gone"), {"command": "true"})
