"""An agent's shell commands as processes it keeps track of: foreground, background, monitors.

`Shells` (one for a teammate, shared with its sub-agents) starts every `Bash` command: ``bash -c
COMMAND`` in a session of its own (its whole process group is what is stopped), stdin closed,
stdout and stderr written straight to files under the agent's files (``shells/<id>.stdout``,
``.stderr``: nothing is kept in memory, however much it writes). A thread waits for each, and
ends it (its group: SIGTERM, then SIGKILL) at its time limit.

A command is in the foreground while the `Bash` call waits for it. It goes to the background
when asked (``run_in_background``), when its foreground timeout passes, or when a message
arrives for the agent while it runs (`move_to_background`): it is not interrupted, and when it
ends the agent is told (`take_notices`: a ``<task-notification>`` with its id, status, exit
code, last lines and output files, delivered before its next model turn; an idle agent is woken
for it, `wake`). A background command runs at most `BACKGROUND_LIMIT_MS` unless its call says
otherwise (up to `MOST_BACKGROUND_MS`).

A monitor (`Monitor`) is a background command whose every stdout line is an event: new lines are
delivered as notifications as they come (a few at a time, the rest counted), and its end too.

`stop` ends one by id (TaskStop, KillShell); `stop_all` ends them all when the agent stops; what
escapes its group carries the teammate's process token, and swarm stops it when it reaps the
teammate. `views` is what the status file shows of them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from protocols.clock import now_iso

if TYPE_CHECKING:
    from teammate.sandbox.bwrap import Sandbox

BACKGROUND_LIMIT_MS = 1_800_000
MOST_BACKGROUND_MS = 7_200_000
MONITOR_LIMIT_MS = 300_000
MOST_MONITOR_MS = 1_800_000
STOP_GRACE_S = 2.0
TAIL_LINES = 20  # of a finished background command, in its notification
EVENTS_PER_NOTICE = 50  # a monitor's lines in one notification (the rest are counted)
KEPT_ENDED = 10  # ended background commands shown in the status file
State = Literal["running", "completed", "failed", "killed"]


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


@dataclass
class Shell:
    """One command and what became of it."""

    id: str
    command: str
    description: str
    owner: str  # the agent that started it (a sub-agent's label)
    stdout: Path
    stderr: Path
    process: subprocess.Popen[bytes]
    deadline: float | None  # monotonic; None: none while in the foreground
    kind: Literal["bash", "monitor"] = "bash"
    background: bool = False
    state: State = "running"
    exit_code: int | None = None
    started_at: str = field(default_factory=now_iso)
    ended_at: str | None = None
    timed_out: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    wakers: list[Callable[[], None]] = field(default_factory=list)
    events_read: int = 0  # a monitor's stdout bytes already delivered
    sandbox: Sandbox | None = None  # the sandbox it runs in (None: none)

    # what `TeamLink.watch`-style waits use (`teammate.link.Watched`)

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def on_change(self, waker: Callable[[], None]) -> None:
        self.wakers.append(waker)
        if self.finished.is_set():
            waker()

    def poll(self) -> None:
        """Nothing to do on the waiting thread."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    @property
    def running(self) -> bool:
        return self.state == "running"


class Shells:
    """The commands of one agent (module doc)."""

    def __init__(self, directory: Callable[[], Path], sandbox: Sandbox | None = None) -> None:
        self._directory = directory  # where output files go (made when first used)
        self.sandbox = sandbox  # commands run in it (`teammate.sandbox`), but excluded ones
        self._lock = threading.Lock()
        self._shells: dict[str, Shell] = {}
        self._notices: list[str] = []
        self.wake: Callable[[], None] = lambda: None  # an idle agent takes the notices
        self.changed: Callable[[], None] = lambda: None  # one started, went back or ended
        self.record: Callable[[Shell], None] = lambda shell: None  # its end, for the log

    # starting and ending

    def start(
        self,
        command: str,
        cwd: Path,
        owner: str,
        description: str = "",
        monitor: bool = False,
        unsandboxed: bool = False,
    ) -> Shell:
        """Start `command` in the foreground (or as a monitor, in the background), in the
        sandbox unless `unsandboxed` (approved), or the command is one it excludes."""
        shell_id = ("m" if monitor else "b") + secrets.token_hex(4)
        directory = self._directory()
        out, err = directory / f"{shell_id}.stdout", directory / f"{shell_id}.stderr"
        argv = [_shell(), "-c", command]
        sandbox = self.sandbox if not unsandboxed else None
        if sandbox is not None and sandbox.excluded(command):
            sandbox = None
        if sandbox is not None:
            argv = sandbox.wrap(argv, cwd)
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        shell = Shell(shell_id, command, description, owner, out, err, process, None)
        shell.sandbox = sandbox
        if monitor:
            shell.kind, shell.background = "monitor", True
        with self._lock:
            self._shells[shell_id] = shell
        threading.Thread(
            target=self._wait, args=(shell,), name=f"shell-{shell_id}", daemon=True
        ).start()
        with self._lock:
            running = {s.id for s in self._shells.values() if s.running}
        prune(directory, running)
        if monitor:
            self.changed()
        return shell

    def set_deadline(self, shell: Shell, limit_ms: int | None) -> None:
        """End it `limit_ms` from now (None: no limit; its waiting thread looks every second)."""
        shell.deadline = None if limit_ms is None else time.monotonic() + limit_ms / 1000

    def move_to_background(self, shell: Shell, limit_ms: int = BACKGROUND_LIMIT_MS) -> None:
        """The command goes on in the background, its end notified; at most `limit_ms` more."""
        with self._lock:
            shell.background = True
            ended = not shell.running
        if ended:  # it ended as it was moved: told now, as a background command's end is
            self._notify(shell)
            return
        self.set_deadline(shell, limit_ms)
        self.changed()

    def forget(self, shell: Shell) -> None:
        """A foreground command whose result was given: nothing more to say of it."""
        with self._lock:
            self._shells.pop(shell.id, None)

    def stop(self, shell_id: str) -> Shell:
        """End command `shell_id` (its whole group); KeyError if there is no such one."""
        with self._lock:
            shell = self._shells[shell_id]
        if shell.running:
            shell.state = "killed"
            _end_group(shell.process)
        shell.finished.wait(STOP_GRACE_S + 1)
        return shell

    def stop_all(self) -> None:
        """End every command still running (the agent is stopping)."""
        with self._lock:
            running = [s for s in self._shells.values() if s.running]
        for shell in running:
            shell.state = "killed"
            _end_group(shell.process)
        for shell in running:
            shell.finished.wait(STOP_GRACE_S + 1)

    def find(self, shell_id: str) -> Shell | None:
        with self._lock:
            return self._shells.get(shell_id)

    # what the agent is told

    def take_notices(self) -> list[str]:
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    def notices_waiting(self) -> bool:
        with self._lock:
            return bool(self._notices)

    def views(self) -> list[dict[str, object]]:
        """The background commands running, then the last that ended: the status file's (a
        foreground command shows as the agent's activity)."""
        with self._lock:
            shells = [s for s in self._shells.values() if s.background]
        running = [s for s in shells if s.running]
        ended = [s for s in shells if not s.running][-KEPT_ENDED:]
        return [_view(s) for s in [*running, *ended]]

    # the waiting thread of each command

    def _wait(self, shell: Shell) -> None:
        process = shell.process
        while True:
            left = 1.0 if shell.deadline is None else shell.deadline - time.monotonic()
            try:
                process.wait(timeout=max(0.0, min(left, 1.0)))
                break
            except subprocess.TimeoutExpired:
                if shell.kind == "monitor":
                    self._monitor_events(shell)
                if shell.deadline is not None and time.monotonic() >= shell.deadline:
                    shell.timed_out = True
                    _end_group(process)
        # what the shell started with & and left running goes on (a server it started): it
        # carries the teammate's process token, and is stopped with the teammate
        self._ended(shell)

    def _ended(self, shell: Shell) -> None:
        code = shell.process.returncode
        with self._lock:
            shell.exit_code = code
            shell.ended_at = now_iso()
            if shell.state == "running":
                shell.state = (
                    "killed" if shell.timed_out else "completed" if code == 0 else "failed"
                )
            background = shell.background
        if shell.kind == "monitor":
            self._monitor_events(shell)
        shell.finished.set()
        for waker in list(shell.wakers):
            waker()
        if background:
            self.record(shell)
            self._notify(shell)
            self.changed()

    def _notify(self, shell: Shell) -> None:
        with self._lock:
            self._notices.append(notification(shell))
        self.wake()

    def _monitor_events(self, shell: Shell) -> None:
        """A monitor's new complete stdout lines, as one notification."""
        lines, shell.events_read = new_lines(shell.stdout, shell.events_read)
        if not lines:
            return
        shown, more = lines[:EVENTS_PER_NOTICE], len(lines) - EVENTS_PER_NOTICE
        body = "\n".join(shown) + (f"\n[{more} more lines: {shell.stdout}]" if more > 0 else "")
        with self._lock:
            self._notices.append(
                f'<monitor-event task-id="{shell.id}" description="{_attr(shell.description)}">\n'
                f"{body}\n</monitor-event>"
            )
        self.wake()


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the command's whole group, SIGKILL after `STOP_GRACE_S` (another thread's
    wait sees it end)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGTERM)

    def kill_later() -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_GRACE_S)
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)

    threading.Thread(target=kill_later, daemon=True).start()


KEPT_FILES = 200  # output files kept in a shells directory (the oldest go first)


def prune(directory: Path, running: set[str]) -> None:
    """Keep the newest `KEPT_FILES` output files of `directory` (never a running command's):
    a long job's commands do not fill the disk with old output."""
    try:
        found = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for path in found[: max(0, len(found) - KEPT_FILES)]:
        if path.name.split(".")[0] not in running:
            with contextlib.suppress(OSError):
                path.unlink()


def new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """The complete lines of `path` after byte `offset`, and the offset after them."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read(1 << 20)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    text = printable_output(data[:end])
    return text.split("\n"), offset + end + 1


def tail_text(path: Path, lines: int = TAIL_LINES, most: int = 4000) -> str:
    """The last `lines` lines of `path` (at most `most` bytes of it), readable."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            handle.seek(max(0, size - most))
            data = handle.read(most)
    except OSError:
        return ""
    return "\n".join(printable_output(data).rstrip("\n").split("\n")[-lines:])


def printable_output(data: bytes) -> str:
    """Command output as text the model can read: invalid UTF-8 as ``\\xNN``, NUL and other
    control characters (but tab, newline and carriage return) escaped."""
    text = data.decode("utf-8", errors="backslashreplace")
    if not any((ord(c) < 32 and c not in "\t\n\r") or c == "\x7f" for c in text):
        return text
    return "".join(
        f"\\x{ord(c):02x}" if (ord(c) < 32 and c not in "\t\n\r") or c == "\x7f" else c
        for c in text
    )


def notification(shell: Shell) -> str:
    """What the agent is told when a background command ends."""
    what = f"exit code {shell.exit_code}" if shell.exit_code is not None else "no exit code"
    if shell.state == "killed":
        why = "its time limit passed" if shell.timed_out else "it was stopped"
        what = f"stopped ({why})"
    tail = tail_text(shell.stdout)
    errors = tail_text(shell.stderr, lines=5)
    stopped = shell.sandbox.why(errors + tail) if shell.sandbox and shell.exit_code else None
    return "\n".join(
        [
            "<task-notification>",
            f"<task-id>{shell.id}</task-id>",
            f"<status>{shell.state}</status>",
            f"<summary>Background command {_attr(shell.description or shell.command[:80])!r} "
            f"{shell.state}: {what}</summary>",
            f"<output-file>{shell.stdout}</output-file>",
            f"<stderr-file>{shell.stderr}</stderr-file>",
            f"<result>{tail}</result>" if tail else "<result>(no output)</result>",
            *([f"<stderr>{errors}</stderr>"] if errors else []),
            *([stopped] if stopped else []),
            "</task-notification>",
        ]
    )


def _attr(text: str) -> str:
    return " ".join(text.split()).replace('"', "'")[:120]


def _view(shell: Shell) -> dict[str, object]:
    return {
        "id": shell.id,
        "kind": shell.kind,
        "command": shell.command[:200],
        "description": shell.description[:200],
        "owner": shell.owner,
        "state": shell.state,
        "exitCode": shell.exit_code,
        "startedAt": shell.started_at,
        "endedAt": shell.ended_at,
        "outputFile": str(shell.stdout),
    }
