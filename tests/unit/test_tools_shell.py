"""The Bash and Monitor tools with real processes: output, exit status, output too large to
show (kept in a file), the foreground timeout and a message moving a command to the background,
background commands and their notifications, TaskStop of the whole process group."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from teammate.tools.agents import task_output, task_stop
from teammate.tools.base import ToolContext, ToolError
from teammate.tools.shell import MOVED, bash, monitor
from teammate.tools.shells import Shells, printable_output


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work dir"
    work.mkdir()
    context = ToolContext(cwd=work, files_dir=tmp_path / "files")
    context.shells = Shells(lambda: context.files("shells"))
    return context


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


def shell_id(text: str) -> str:
    return text.split("background with ID: ", 1)[1].split(".", 1)[0]


class Link:
    """The agent's team link as Bash sees it: a message arrives when `arrive` is set."""

    def __init__(self) -> None:
        self.arrive = threading.Event()

    def wait_command(self, command: Any, seconds: float, why: str) -> str:
        while not command.wait(0.05):
            if self.arrive.is_set():
                return "message"
        return "done"


def test_name_kind_and_fields() -> None:
    assert (bash.name, bash.kind, bash.read_only) == ("Bash", "execute", False)
    schema = bash.schema()["input_schema"]
    assert set(schema["properties"]) == {
        "command",
        "timeout",
        "description",
        "run_in_background",
        "dangerouslyDisableSandbox",  # as Claude Code's: asks the lead to run outside (sandbox)
    }
    assert schema["required"] == ["command"]


def test_runs_in_the_working_directory(ctx: ToolContext) -> None:
    assert bash.run(ctx, {"command": "pwd", "description": "Show the directory"}) == str(ctx.cwd)


def test_stdout_then_stderr_and_nothing_left_behind(ctx: ToolContext) -> None:
    out = bash.run(ctx, {"command": "echo err >&2; echo out"})
    assert out == "out\nerr"
    assert bash.run(ctx, {"command": "echo only-err >&2"}) == "only-err"
    assert bash.run(ctx, {"command": "true"}) == "(no output)"
    assert list(ctx.files("shells").iterdir()) == []  # small output: its files removed


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


def test_binary_output_reaches_the_model_escaped(ctx: ToolContext) -> None:
    out = bash.run(ctx, {"command": r"printf 'a\000b\033[31mc\377d\n'"})
    assert out == "a\\x00b\\x1b[31mc\\xffd"
    assert printable_output(b"tab\there\r\n") == "tab\there\r\n"


def test_output_too_large_is_kept_in_a_file_with_one_true_marker(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASH_MAX_OUTPUT_LENGTH", "2000")
    out = bash.run(ctx, {"command": "echo START; seq 1 100000; echo END"})
    assert out.startswith("<persisted-output>") and out.endswith("</persisted-output>")
    assert len(out) < 2600 and "START\n1\n2\n" in out and "99999\n100000\nEND" in out
    saved = Path(out.split("bytes (", 1)[1].split(")", 1)[0])
    size = saved.stat().st_size
    assert f"stdout {size:,} bytes" in out and saved.read_text().splitlines()[-1] == "END"
    hidden = int(out.split("[... ", 1)[1].split(" bytes", 1)[0].replace(",", ""))
    shown = out.split("stdout, first part:\n", 1)[1].split("\n[...", 1)[0]
    assert hidden < size and hidden + 2 * len(shown) == pytest.approx(size, abs=4)
    assert out.count("not shown") == 1  # one marker, saying how much


def test_a_foreground_timeout_moves_the_command_to_the_background(
    ctx: ToolContext, tmp_path: Path
) -> None:
    pid_file = tmp_path / "sleeper.pid"
    command = f"echo started; sleep 300 & echo $! > '{pid_file}'; wait"
    out = bash.run(ctx, {"command": command, "timeout": 300})
    assert "had not finished after 300 ms" in out and "it was not stopped" in out
    assert "Output so far:\nstarted" in out
    sleeper = read_pid(pid_file)
    assert alive(sleeper)
    stopped = task_stop.run(ctx, {"task_id": shell_id(out)})
    assert stopped.startswith(f"Stopped {shell_id(out)} (its whole process group)")
    wait_for(lambda: not alive(sleeper), f"the background sleep {sleeper} to be killed")
    assert ctx.shells is not None
    (notice,) = ctx.shells.take_notices()
    assert "<status>killed</status>" in notice and "it was stopped" in notice


def test_a_message_moves_a_running_command_to_the_background(ctx: ToolContext) -> None:
    link = Link()
    ctx.team = link  # type: ignore[assignment]
    link.arrive.set()
    out = bash.run(ctx, {"command": "sleep 1; echo late"})
    assert out.startswith(MOVED)
    assert ctx.shells is not None
    notice = wait_for(lambda: ctx.shells.take_notices() if ctx.shells else None, "its end")[0]
    assert "<status>completed</status>" in notice and "<result>late</result>" in notice


def test_run_in_background_returns_at_once_and_tells_when_it_ends(ctx: ToolContext) -> None:
    woken = threading.Event()
    assert ctx.shells is not None
    ctx.shells.wake = woken.set
    out = bash.run(
        ctx, {"command": "echo one; exit 4", "run_in_background": True, "description": "count"}
    )
    assert out.startswith("Command running in background with ID: b")
    wait_for(woken.is_set, "the agent to be woken")
    (notice,) = ctx.shells.take_notices()
    assert "<status>failed</status>" in notice and "exit code 4" in notice
    assert "<result>one</result>" in notice
    assert task_output.run(ctx, {"task_id": shell_id(out)}).startswith(
        f"{shell_id(out)}: failed (exit code 4)"
    )
    (view,) = ctx.shells.views()
    assert view["state"] == "failed" and view["exitCode"] == 4 and view["description"] == "count"


def test_a_background_command_that_forks_a_daemon_is_stopped_with_its_group(
    ctx: ToolContext, tmp_path: Path
) -> None:
    pid_file = tmp_path / "daemon.pid"
    command = f"(sleep 300 & echo $! > '{pid_file}'); sleep 300"
    out = bash.run(ctx, {"command": command, "run_in_background": True})
    daemon = read_pid(pid_file)
    task_stop.run(ctx, {"task_id": shell_id(out)})
    wait_for(lambda: not alive(daemon), "the daemon it forked to be killed")


def test_a_background_command_ends_at_its_time_limit(ctx: ToolContext) -> None:
    out = bash.run(ctx, {"command": "sleep 300", "run_in_background": True, "timeout": 200})
    assert ctx.shells is not None
    notice = wait_for(lambda: ctx.shells.take_notices() if ctx.shells else None, "its end")[0]
    assert shell_id(out) in notice and "its time limit passed" in notice


def test_what_a_command_leaves_running_with_and_goes_on(ctx: ToolContext, tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    out = bash.run(ctx, {"command": f"sleep 300 & echo $! > '{pid_file}'; echo started"})
    assert out == "started"
    server = read_pid(pid_file)
    try:
        assert alive(server)  # a server started with &: the teammate's token stops it later
    finally:
        os.kill(server, 9)


def test_a_monitor_delivers_each_line_as_it_comes(ctx: ToolContext) -> None:
    out = monitor.run(
        ctx,
        {
            "description": "count",
            "timeout_ms": 30_000,
            "command": "for i in 1 2 3; do echo $i; done",
        },
    )
    assert out.startswith("Monitor started with ID: m")
    assert ctx.shells is not None
    seen: list[str] = []

    def ended() -> bool:
        seen.extend(ctx.shells.take_notices() if ctx.shells else [])
        return any("<task-notification>" in n for n in seen)

    wait_for(ended, "the monitor to end")
    events = [n for n in seen if n.startswith("<monitor-event")]
    assert events and "1\n2\n3" in "\n".join(events)
    with pytest.raises(ToolError, match="`command`"):
        monitor.run(ctx, {"description": "ws", "timeout_ms": 10, "ws": {"url": "ws://x"}})


def test_stop_all_ends_every_running_command(ctx: ToolContext) -> None:
    assert ctx.shells is not None
    outs = [bash.run(ctx, {"command": "sleep 300", "run_in_background": True}) for _ in range(3)]
    ctx.shells.stop_all()
    assert all(view["state"] != "running" for view in ctx.shells.views())
    assert len(outs) == 3


def test_invalid_input_names_the_field(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="invalid input for Bash: command"):
        bash.run(ctx, {"description": "nothing to run"})
    with pytest.raises(ToolError, match="foreground command's timeout is at most 600000 ms"):
        bash.run(ctx, {"command": "true", "timeout": 600_001})
    with pytest.raises(ToolError, match="timeout"):
        bash.run(ctx, {"command": "true", "timeout": 0})
    with pytest.raises(ToolError, match="invalid input for Bash: timeout"):
        bash.run(ctx, {"command": "true", "timeout": 7_200_001, "run_in_background": True})


def test_a_missing_working_directory(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="working directory does not exist"):
        bash.run(ToolContext(cwd=tmp_path / "gone"), {"command": "true"})
