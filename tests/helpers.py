"""Helpers for tests that drive real processes: run `swarm`, build a teammate command line, and
wait on a condition with a deadline (never a fixed sleep)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

# how long a test waits for a condition before it fails: long enough for a teammate process to
# start and answer on a machine loaded many times over (a passing test never waits it out)
DEADLINE_S = 45.0


def wait_for(condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S) -> Any:
    """Poll `condition` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# commands that start processes outliving the command (their children would become the test
# process's zombies, which look alive) or that run until stopped always run as a process
NEEDS_A_PROCESS = {"spawn", "restart", "start", "up", "lead", "watch", "wait", "mcp"}


def finishes(action: Callable[[], object], seconds: float = 30.0) -> object:
    """What `action` returned or raised, run in a thread: a hang fails the test, not the run."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(action())
        except BaseException as exc:  # handed to the test to judge
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"{action} still blocked after {seconds} s"
    return outcome[0]


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """A list whose length says how often `owner.name` was called from now on."""
    calls: list[int] = []
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def swarm(
    *args: str, team: str | None = "t", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `swarm` command ARGS with SWARM_TEAM set to `team` and `env` added.

    A command that needs no process of its own (reading and writing team files) runs in this
    process through the same `main` the console script calls, with stdout, stderr, the
    environment and the exit code as a process would have them: a Python start costs 0.4 s
    and the suite runs a few hundred commands. The others, and calls from other threads (the
    environment and streams are process-wide), start ``python -m swarm``. SWARM_CLI_PROCESS=1
    runs every command as a process.
    """
    command = next((a for a in args if not a.startswith("-")), "")
    in_process = (
        command not in NEEDS_A_PROCESS
        and threading.current_thread() is threading.main_thread()
        and os.environ.get("SWARM_CLI_PROCESS") != "1"
    )
    if in_process:
        return _swarm_in_process(list(args), {**(env or {}), "SWARM_TEAM": team or None})
    full_env = {**os.environ, **(env or {})}
    full_env.pop("SWARM_TEAM", None)
    if team:
        full_env["SWARM_TEAM"] = team
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
    )


def _swarm_in_process(
    args: list[str], env: dict[str, str | None]
) -> subprocess.CompletedProcess[str]:
    """`swarm.cli.main.main(args)` with click's test isolation (stdin empty, stdout and stderr
    captured, `env` over os.environ, all restored after). Warnings go to stderr as Python's
    last-resort handler prints them in a process; an unexpected exception becomes a traceback
    on stderr and exit code 1, as in a process."""
    from click.testing import CliRunner

    from swarm.cli.main import main

    runner = CliRunner()
    with runner.isolation(input="", env=env) as (out, err, _mixed):
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        logging.getLogger().addHandler(handler)
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            logging.getLogger().removeHandler(handler)
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["swarm", *args], code, stdout, stderr)


def ctrl_c_obeyed() -> None:
    """A `preexec_fn` for a child the test will send SIGINT: SIGINT back to its default (a
    shell that runs the suite in the background starts it, and so every child, with SIGINT
    ignored, and Python then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_worker(name: str, work: Path, *extra: str) -> int:
    """`swarm spawn NAME` as a subprocess teammate working in `work` (shell unless `extra`
    says otherwise); its pid."""
    import json

    spawned = swarm(
        "spawn", name, "-p", "Work the board.", "--backend", "subprocess",
        "--cwd", str(work), "--json", *extra,
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr
    return int(json.loads(spawned.stdout)["pid"])


def teammate_argv(name: str, *extra: str, team: str = "t", model: str = "shell") -> list[str]:
    return [
        sys.executable,
        "-m",
        "teammate",
        "--agent-id",
        f"{name}@{team}",
        "--agent-name",
        name,
        "--team-name",
        team,
        "--agent-color",
        "blue",
        "--model",
        model,
        *extra,
    ]


def read_lines(proc: subprocess.Popen[str]) -> list[str]:
    """The lines `proc` prints on its stdout, gathered as they come by a daemon thread (the
    list grows while the process runs)."""
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    return lines


class Processes:
    """Teammate processes started by a test; `close` kills whatever is still running."""

    def __init__(self, cwd: Any) -> None:
        self.cwd = cwd
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            argv,
            cwd=self.cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


BACKENDS = [
    "subprocess",
    pytest.param(
        "tmux", marks=pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")
    ),
]


def tmux(socket: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Run ``tmux -L socket ARGS`` (a test's private server); its output, "" when it fails."""
    result = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, env=env, check=False
    )
    return result.stdout if result.returncode == 0 else ""


def new_session(
    socket: str, name: str, command: str, size: tuple[int, int], env: dict[str, str] | None = None
) -> None:
    """A detached session `name` running `command` (given to tmux, never typed) in a window of
    `size` columns and lines; `env` is the environment of a server this starts."""
    width, height = size
    created = subprocess.run(
        [
            "tmux",
            "-L",
            socket,
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            str(width),
            "-y",
            str(height),
            command,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert created.returncode == 0, created.stderr


def screen(socket: str, target: str) -> str:
    """What pane `target` shows now (capture-pane)."""
    return tmux(socket, "capture-pane", "-p", "-t", target)


def pane_ids(socket: str) -> list[str]:
    """The ids (``%3``) of every pane on the private tmux server `socket`."""
    return tmux(socket, "list-panes", "-a", "-F", "#{pane_id}").split()


def panes(socket: str) -> list[str]:
    """The titles of every pane on the private tmux server `socket`."""
    return tmux(socket, "list-panes", "-a", "-F", "#{pane_title}").split()


class LeadSession:
    """`swarm lead` in a subprocess: type lines, read what it printed."""

    def __init__(self, api: Any, cwd: Any, *args: str, team: str = "t") -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        if api is not None:
            env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "swarm", "lead", "--team", team, "--create", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines = read_lines(self.proc)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, text: str, what: str | None = None, timeout: float = DEADLINE_S) -> None:
        """Wait for `text` in the output; a timeout shows what was printed, and the exit code
        when the process is gone."""
        try:
            wait_for(lambda: text in self.output, what or repr(text), timeout)
        except AssertionError as exc:
            code = self.proc.poll()
            ended = "still running" if code is None else f"exited with {code}"
            raise AssertionError(f"{exc}; swarm lead {ended}; it printed:\n{self.output}") from None

    def quit(self) -> int:
        self.type("/quit")
        return self.proc.wait(DEADLINE_S)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


# real git repositories


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def commit_all(cwd: Path, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)


def init_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    return path


def claude_env(api_url: str) -> dict[str, str]:
    """This process's environment for a Claude teammate talking to the test Messages API server
    at `api_url` (any ANTHROPIC_ variable of the machine left out)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return {**environ, "ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "test-key"}


def went_idle(paths: Any, name: str | None = None) -> bool:
    """Whether the lead's inbox holds an idle notification (from `name`, if given)."""
    from protocols.inbox.mailbox import Mailbox
    from protocols.messages.models import IdleNotification

    return any(
        isinstance(e.structured(), IdleNotification) and name in (None, e.from_)
        for e in Mailbox(paths).read_all("team-lead")
    )


def stop_teammate(paths: Any, name: str, proc: subprocess.Popen[str]) -> str:
    """Shut teammate `name` down with the protocol and wait for its process; its output."""
    from protocols.inbox.mailbox import Mailbox
    from protocols.messages.models import ShutdownRequest

    request = ShutdownRequest(
        requestId=f"shutdown-1@{name}", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(paths).send(name, request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output
    return output


def stop_alice(team: Any, proc: subprocess.Popen[str]) -> str:
    """`stop_teammate` for alice, the usual teammate of the process tests."""
    return stop_teammate(team.paths, "alice", proc)


def url_of(conninfo: str) -> str:
    """A test server's conninfo (``host=/tmp/... port=... user=... dbname=...``) as a store URL."""
    info = dict(part.split("=", 1) for part in conninfo.split())
    host = quote(info["host"], safe="")
    return f"postgresql://{info['user']}@/{info['dbname']}?host={host}&port={info['port']}"
