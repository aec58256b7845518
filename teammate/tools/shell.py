"""Claude Code's `Bash` tool for the Claude teammate: one shell command, run to completion.

This module owns running the command (``bash -c COMMAND``, the command one argv element, in the
teammate's working directory, stdin closed), its time limit, and the cleanup: the command runs
in a session of its own, so on a timeout the whole process group is killed, and so is a
backgrounded child still holding the output pipes once the shell itself has exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Annotated

from pydantic import Field

from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.files import clip

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
# once the shell has exited, how long a leftover child may keep the output pipes open
EXITED_GRACE_S = 1.0
POLL_S = 0.1  # the first look at a running command; each next one waits twice as long ...
MAX_POLL_S = 1.0  # ... up to this: a command that runs for minutes costs ~1 wake-up a second
COLLECT_S = 5.0


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)


def _collect(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What the process wrote, once its group is dead (a process that left the group and
    still holds a pipe gets `COLLECT_S`, then the pipes are closed on it)."""
    try:
        return process.communicate(timeout=COLLECT_S)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        process.wait()
        return b"", b""


def run_command(command: str, cwd: str, timeout_s: float) -> tuple[int | None, bytes, bytes]:
    """Run `command` with the shell; (exit status or None on timeout, stdout, stderr)."""
    process = subprocess.Popen(
        [_shell(), "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    exited_at: float | None = None
    poll = POLL_S  # a command that ends returns at once; polling only notices the deadline
    try:  # and a shell gone while something it left behind holds the pipes
        while True:
            now = time.monotonic()
            try:
                stdout, stderr = process.communicate(timeout=max(min(poll, deadline - now), 0))
                return process.returncode, stdout, stderr
            except subprocess.TimeoutExpired:
                poll = min(poll * 2, MAX_POLL_S)
            now = time.monotonic()
            if now >= deadline:
                _kill_group(process)
                stdout, stderr = _collect(process)
                return None, stdout, stderr
            if process.poll() is not None:
                # the shell is done but something it started in the background holds the pipes
                exited_at = exited_at if exited_at is not None else now
                if now - exited_at >= EXITED_GRACE_S:
                    _kill_group(process)
                    stdout, stderr = _collect(process)
                    return process.returncode, stdout, stderr
    except BaseException:
        _kill_group(process)
        _collect(process)
        raise


def _output(stdout: bytes, stderr: bytes, limit: int) -> str:
    out = stdout.decode("utf-8", errors="replace").rstrip("\n")
    err = stderr.decode("utf-8", errors="replace").rstrip("\n")
    text = f"{out}\n{err}" if out and err else out or err
    return clip(text, limit)


@tool(
    "Bash",
    "Executes a bash command in the working directory and returns its output (stdout, then "
    "stderr). The command runs non-interactively with no input; quote paths that contain "
    f"spaces. The timeout is in milliseconds (default {DEFAULT_TIMEOUT_MS}, at most "
    f"{MAX_TIMEOUT_MS}); on a timeout the command and everything it started is killed. A "
    "non-zero exit status is reported as an error with the output. Prefer Read, Edit, Write, "
    "Glob and Grep to cat, sed, echo, find and grep.",
    kind="execute",
)
def bash(
    ctx: ToolContext,
    command: Annotated[str, Field(description="The command to execute")],
    timeout: Annotated[
        int | None,
        Field(gt=0, le=MAX_TIMEOUT_MS, description="Optional timeout in milliseconds (max 600000)"),
    ] = None,
    description: Annotated[
        str | None,
        Field(description="Clear, concise description of what this command does in 5-10 words"),
    ] = None,
    run_in_background: Annotated[
        bool | None,
        Field(description="Run the command in the background (not supported by swarm teammates)"),
    ] = None,
) -> str:
    if run_in_background:
        raise ToolError(
            "Background commands are not supported by swarm teammates yet: "
            "run the command in the foreground."
        )
    if not ctx.cwd.is_dir():
        raise ToolError(f"The working directory does not exist: {ctx.cwd}")
    timeout_s = (timeout or DEFAULT_TIMEOUT_MS) / 1000
    try:
        status, stdout, stderr = run_command(command, str(ctx.cwd), timeout_s)
    except OSError as exc:
        raise ToolError(f"Cannot run the command: {exc.strerror or exc}") from None
    output = _output(stdout, stderr, ctx.output_limit)
    if status is None:
        raise ToolError(f"Command timed out after {timeout_s:g} s\n{output}")
    if status != 0:
        code = 128 - status if status < 0 else status  # killed by a signal, as a shell says it
        raise ToolError(f"Exit code {code}\n{output}")
    return output or "(no output)"
