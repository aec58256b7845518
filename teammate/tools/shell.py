"""Claude Code's `Bash` and `Monitor` tools for a Claude agent.

A command runs through the agent's `teammate.tools.shells.Shells`: ``bash -c COMMAND`` in the
working directory, in a session of its own, stdin closed, its output written to files (never
held in memory). `Bash` waits for it in the foreground, through the agent's team link
(`TeamLink.wait_command`), which meanwhile answers protocol messages (a shutdown at once). It
moves to the background, not interrupted, when:

- the call asks for it (``run_in_background``: its ``timeout`` is then how long it may run,
  `BACKGROUND_LIMIT_MS` by default, at most `MOST_BACKGROUND_MS`);
- its foreground ``timeout`` passes (`DEFAULT_TIMEOUT_MS`, at most `MAX_TIMEOUT_MS`);
- a message arrives for the agent while it runs (the message is taken up at once).

The model is told its id and output files; its end comes as a ``<task-notification>``;
`TaskStop` (or its old names KillShell, KillBash) stops it.

What the model reads of a finished command: stdout, then stderr, whole if they fit the limit
(``BASH_MAX_OUTPUT_LENGTH``, 30,000 characters by default, at most 150,000); else a
``<persisted-output>`` block with the files' paths and sizes and their head and tail, and one
marker saying how much is not shown and how to read it (Read with offset and limit, Grep).
Invalid UTF-8 and control characters are escaped (`printable_output`).

`Monitor` starts a command whose every stdout line is an event delivered to the agent as it
comes, until it ends or its deadline.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.shells import (
    BACKGROUND_LIMIT_MS,
    MONITOR_LIMIT_MS,
    MOST_BACKGROUND_MS,
    MOST_MONITOR_MS,
    Shell,
    Shells,
    printable_output,
    tail_text,
)

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
OUTPUT_LIMIT = 30_000
MOST_OUTPUT_LIMIT = 150_000
MOVED = (
    "It was moved to the background so that a message that arrived while it was running can "
    "reach you; it was not interrupted."
)


def output_limit() -> int:
    """``BASH_MAX_OUTPUT_LENGTH`` (at most `MOST_OUTPUT_LIMIT`), else `OUTPUT_LIMIT`."""
    value = os.environ.get("BASH_MAX_OUTPUT_LENGTH", "")
    if value.strip().isdigit() and int(value) > 0:
        return min(int(value), MOST_OUTPUT_LIMIT)
    return OUTPUT_LIMIT


def shells_of(ctx: ToolContext) -> Shells:
    """The agent's shells (made for a context that has none: a test's, an MCP member's)."""
    if ctx.shells is None:
        ctx.shells = Shells(lambda: ctx.files("shells"))
    return ctx.shells


@tool(
    "Bash",
    "Executes a bash command in the working directory and returns its output (stdout, then "
    "stderr). The command runs non-interactively with no input; quote paths that contain "
    f"spaces. The foreground timeout is in milliseconds (default {DEFAULT_TIMEOUT_MS}, at most "
    f"{MAX_TIMEOUT_MS}); a command still running then is not killed: it goes on in the "
    "background and you are told when it ends. Set run_in_background for a dev server, a "
    "watcher or a long test run: you get its ID and output file at once, a <task-notification> "
    f"when it ends (its timeout is then how long it may run: default {BACKGROUND_LIMIT_MS}, at "
    f"most {MOST_BACKGROUND_MS}), and TaskStop stops it. Output too long to show is saved to a "
    "file you can Read or Grep. A non-zero exit status is reported as an error with the "
    "output. Prefer Read, Edit, Write, Glob and Grep to cat, sed, echo, find and grep.",
    kind="execute",
)
def bash(
    ctx: ToolContext,
    command: Annotated[str, Field(description="The command to execute")],
    timeout: Annotated[
        int | None,
        Field(
            gt=0,
            le=MOST_BACKGROUND_MS,
            description="Optional timeout in milliseconds (max 600000 for a foreground command; "
            "with run_in_background, how long it may run: default 1800000, max 7200000)",
        ),
    ] = None,
    description: Annotated[
        str | None,
        Field(description="Clear, concise description of what this command does in 5-10 words"),
    ] = None,
    run_in_background: Annotated[
        bool | None,
        Field(description="Run the command in the background; you are told when it ends"),
    ] = None,
    dangerouslyDisableSandbox: Annotated[
        bool | None,
        Field(
            description="Run this command outside the sandbox (asks for permission first); "
            "only when the sandbox stopped it and it must write or connect elsewhere"
        ),
    ] = None,
) -> str:
    if not ctx.cwd.is_dir():
        raise ToolError(f"The working directory does not exist: {ctx.cwd}")
    if not run_in_background and timeout is not None and timeout > MAX_TIMEOUT_MS:
        raise ToolError(
            f"A foreground command's timeout is at most {MAX_TIMEOUT_MS} ms; use "
            "run_in_background for a longer one"
        )
    shells = shells_of(ctx)
    outside = bool(dangerouslyDisableSandbox) and shells.sandbox is not None
    if outside and shells.sandbox is not None and not shells.sandbox.config.allow_unsandboxed:
        raise ToolError(
            "Commands may not run outside the sandbox here (sandbox.allowUnsandboxedCommands "
            "is false)"
        )
    shell = _start(shells, ctx, command, description or "", outside)
    if run_in_background:
        shells.move_to_background(shell, timeout or BACKGROUND_LIMIT_MS)
        return started_text(shell)
    return _foreground(ctx, shells, shell, (timeout or DEFAULT_TIMEOUT_MS) / 1000)


def _start(
    shells: Shells, ctx: ToolContext, command: str, description: str, outside: bool = False
) -> Shell:
    try:
        return shells.start(command, ctx.cwd, ctx.agent_name, description, unsandboxed=outside)
    except OSError as exc:
        raise ToolError(f"Cannot run the command: {exc.strerror or exc}") from None


def _foreground(ctx: ToolContext, shells: Shells, shell: Shell, seconds: float) -> str:
    """Wait for `shell` in the foreground (see the module docstring)."""
    try:
        if ctx.team is not None:
            end = ctx.team.wait_command(shell, seconds, "running a command")
        else:
            end = "done" if shell.wait(seconds) else "timeout"
    except BaseException:  # a shutdown, a stop, an interrupt: the command goes with the call
        shells.stop(shell.id)
        shells.forget(shell)
        raise
    if end == "stop":
        shells.stop(shell.id)
        shells.forget(shell)
        raise ToolError("The command was stopped: this agent is stopping.")
    if end != "done":
        shells.move_to_background(shell)
        why = MOVED if end == "message" else (
            f"It had not finished after {seconds * 1000:.0f} ms, so it goes on in the "
            "background; it was not stopped."
        )  # fmt: skip
        so_far = tail_text(shell.stdout, lines=10)
        return f"{why}\n{started_text(shell)}" + (f"\nOutput so far:\n{so_far}" if so_far else "")
    shells.forget(shell)
    text = result_text(shell, output_limit())
    code = shell.exit_code
    if code is not None and code != 0:
        code = 128 - code if code < 0 else code  # killed by a signal, as a shell says it
        stopped = shell.sandbox.why(text) if shell.sandbox is not None else None
        raise ToolError(f"Exit code {code}\n{text}" + (f"\n{stopped}" if stopped else ""))
    return text or "(no output)"


def started_text(shell: Shell) -> str:
    return (
        f"Command running in background with ID: {shell.id}. Output is being written to: "
        f"{shell.stdout} (stderr: {shell.stderr}). You will be told when it ends (a "
        "<task-notification>); TaskStop with this ID stops it."
    )


def result_text(shell: Shell, limit: int) -> str:
    """A finished command's stdout then stderr: whole within `limit` (its files removed), else
    a ``<persisted-output>`` block (module doc)."""
    sizes = {p: _size(p) for p in (shell.stdout, shell.stderr)}
    if sum(sizes.values()) <= limit:
        parts = [printable_output(_read(p)).rstrip("\n") for p in sizes]
        for path in sizes:
            with contextlib.suppress(OSError):
                path.unlink()
        return "\n".join(part for part in parts if part)
    return persisted(shell.stdout, sizes[shell.stdout], shell.stderr, sizes[shell.stderr], limit)


def persisted(stdout: Path, out_size: int, stderr: Path, err_size: int, limit: int) -> str:
    """Output too large to show: where it is, how big, its head and tail."""
    err_room = min(err_size, limit // 5)
    out_room = max(0, limit - err_room - 600)
    head, tail, hidden = _ends(stdout, out_size, out_room)
    lines = [
        "<persisted-output>",
        f"The output is too large to show whole: stdout {out_size:,} bytes ({stdout}), stderr "
        f"{err_size:,} bytes ({stderr}). Read them with Read (offset and limit) or Grep.",
    ]
    if head:
        lines += ["stdout, first part:", head]
    if hidden:
        lines.append(f"[... {hidden:,} bytes of stdout not shown ...]")
    if tail:
        lines += ["stdout, last part:", tail]
    if err_size:
        errors, _, err_hidden = _ends(stderr, err_size, err_room)
        lines += ["stderr:", errors]
        if err_hidden:
            lines.append(f"[... {err_hidden:,} more bytes of stderr not shown ...]")
    lines.append("</persisted-output>")
    return "\n".join(lines)


def _ends(path: Path, size: int, room: int) -> tuple[str, str, int]:
    """The head and tail of `path` within `room` bytes in all, and how many bytes are between."""
    if size <= room:
        return printable_output(_read(path)), "", 0
    half = room // 2
    with open(path, "rb") as handle:
        head = handle.read(half)
        handle.seek(max(half, size - half))
        tail = handle.read(half)
    return printable_output(head), printable_output(tail), size - len(head) - len(tail)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


@tool(
    "Monitor",
    "Runs a command in the background and tells you each line it prints to stdout, as it "
    "comes (a few lines at a time between your turns), until it exits or its deadline: watch "
    f"a log, a build, a dev server. timeout_ms defaults to {MONITOR_LIMIT_MS} (at most "
    f"{MOST_MONITOR_MS}); you are told when it ends and can start it again. TaskStop stops it.",
    kind="execute",
)
def monitor(
    ctx: ToolContext,
    description: Annotated[str, Field(description="Short description of what you are monitoring")],
    timeout_ms: Annotated[
        int, Field(gt=0, description="Stop the monitor after this many milliseconds")
    ] = MONITOR_LIMIT_MS,
    command: Annotated[
        str | None, Field(description="Shell command; each stdout line is an event")
    ] = None,
    ws: Annotated[
        dict[str, object] | None, Field(description="A WebSocket to watch (not supported here)")
    ] = None,
) -> str:
    if ws is not None or not command:
        raise ToolError("swarm's Monitor watches a command: give `command` (not `ws`)")
    if not ctx.cwd.is_dir():
        raise ToolError(f"The working directory does not exist: {ctx.cwd}")
    shells = shells_of(ctx)
    try:
        shell = shells.start(command, ctx.cwd, ctx.agent_name, description, monitor=True)
    except OSError as exc:
        raise ToolError(f"Cannot run the command: {exc.strerror or exc}") from None
    shells.set_deadline(shell, min(timeout_ms, MOST_MONITOR_MS))
    return (
        f"Monitor started with ID: {shell.id} ({description}); its output lines come to you as "
        f"they are printed, for at most {min(timeout_ms, MOST_MONITOR_MS)} ms. Its output: "
        f"{shell.stdout}. TaskStop with this ID stops it."
    )
