"""What every spawn backend shares: the request and result types, the backend protocol, the
error class, the environment a teammate gets, and the process helpers (alive, signal, wait).

A teammate's environment is built the same way by every backend: a minimal base (``PATH``,
``HOME``), then the variables Claude Code passes to its teammates (`passthrough_env`), then the
request's own ``env`` and its ``SWARM_PROCESS_TOKEN``, which everything the teammate starts
inherits. Nothing here starts a process.

Processes are known by identity (`protocols.pids.ProcessIdentity`: pid, start time, token), so
stopping a teammate never signals a stranger that was given its pid, and reaches the commands it
left running even when the teammate itself is already dead.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from protocols.pids import TOKEN_VARIABLE, ProcessIdentity, stop_processes
from swarm.errors import SwarmError

BACKEND_KINDS = ("auto", "tmux", "subprocess")
# the smallest tmux pane a teammate is given (columns, lines): a split that would leave its pane
# smaller (an 80-column lead pane, a crowded window) puts it in a window of its own instead
MIN_PANE_SIZE = (40, 8)

PASSTHROUGH_NAMES = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CONFIG_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "PYTHONPATH",
    "VIRTUAL_ENV",
)
PASSTHROUGH_PREFIXES = ("SWARM_",)


class SpawnError(SwarmError):
    """A teammate process could not be started, found or stopped; the message says which and why."""


class UnknownBackend(SpawnError, ValueError):
    """`choose_backend` was asked for a kind of backend that does not exist."""


@dataclass(frozen=True)
class SpawnRequest:
    name: str  # member name (already validated: ^[a-z0-9][a-z0-9-]{0,63}$)
    team: str
    argv: list[str]  # the full command line of the teammate
    cwd: Path
    env: dict[str, str]  # extra environment for the child, on top of `passthrough_env`
    log_path: Path  # where a subprocess member's stdout/stderr go (created with parents)
    token: str | None = None  # SWARM_PROCESS_TOKEN: carried by everything the teammate starts

    def child_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        token = {TOKEN_VARIABLE: self.token} if self.token else {}
        return child_env(environ, {**self.env, **token})


@dataclass(frozen=True)
class Spawned:
    backend_type: str  # "tmux" or "subprocess"
    pane_id: str  # tmux "%12"; "" for subprocess
    pid: int  # the teammate process's pid (for tmux: the pane's process, which is the teammate)
    socket_name: str | None  # tmux -L socket name when a private server is used, else None
    start: int | None = None  # the process's start time (clock ticks since boot)
    token: str | None = None  # SWARM_PROCESS_TOKEN of the teammate and what it starts
    # tmux: the pane is alone in a window of its own, as a split would have been under
    # `MIN_PANE_SIZE` (`swarm spawn` says so)
    own_window: bool = False

    @property
    def identity(self) -> ProcessIdentity:
        return ProcessIdentity(self.pid, self.start, self.token)


class SpawnBackend(Protocol):
    backend_type: str

    def spawn(self, request: SpawnRequest) -> Spawned: ...

    def is_alive(self, spawned: Spawned) -> bool: ...

    def stop(self, spawned: Spawned, timeout: float = 5.0) -> None: ...


def passthrough_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` a teammate needs, as Claude Code passes them (only those set)."""
    passed = {name: environ[name] for name in PASSTHROUGH_NAMES if name in environ}
    passed.update(
        (name, value)
        for name, value in environ.items()
        if name.startswith(PASSTHROUGH_PREFIXES) and name != TOKEN_VARIABLE  # each has its own
    )
    return passed


def child_env(environ: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a teammate: base, then `passthrough_env(environ)`, then `extra`."""
    base = {"PATH": os.defpath, "HOME": home_directory(environ)}
    return {**base, **passthrough_env(environ), **extra}


def home_directory(environ: Mapping[str, str]) -> str:
    """``$HOME``, else the user's home from the password database, else ``/`` (a uid with no
    passwd entry, as in many containers, has none)."""
    if environ.get("HOME"):
        return environ["HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return "/"


def check_request(request: SpawnRequest) -> None:
    """Refuse a request that cannot start, before anything is created."""
    if not request.argv:
        raise SpawnError(f"cannot start {request.name!r}: the command line is empty")
    if not request.cwd.is_dir():
        raise SpawnError(f"cannot start {request.name!r}: cwd {request.cwd} is not a directory")
    bad = [key for key in request.env if not key or "=" in key or "\x00" in key]
    bad += [key for key, value in request.env.items() if "\x00" in value]
    if bad:
        raise SpawnError(
            f"cannot start {request.name!r}: invalid environment variable(s) {bad!r} "
            "(names must be non-empty without '=', names and values without NUL)"
        )


def pid_exists(pid: int) -> bool:
    """True while `pid` is in the process table at all, zombies included."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def parent_pid(pid: int) -> int | None:
    """`pid`'s parent from /proc, or None if it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def reap_child(pid: int) -> None:
    """Collect `pid`'s exit status if it is our exited child, so it does not stay a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.001) -> bool:
    """Poll `condition` until it is true or `timeout` seconds pass; return its last value.

    The interval starts at `interval` and doubles up to 50 ms, so a fast condition costs
    milliseconds and a slow one does not spin.
    """
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(interval, remaining))
        interval = min(interval * 2, 0.05)


def terminate(
    identity: ProcessIdentity, timeout: float, alive: Callable[[], bool] | None = None
) -> None:
    """Stop the process `identity` and everything it started (its process group, whatever
    carries its token), even if it is already dead: SIGTERM, up to `timeout` seconds, SIGKILL.
    A pid that now belongs to another process is never signalled.

    `alive` is how to tell the process itself is still there (default: the identity check); a
    backend that can reap passes one that does.
    """
    is_alive = alive or identity.alive
    stop_processes(identity, timeout)
    if is_alive() and not wait_until(lambda: not is_alive(), 5.0):
        raise SpawnError(f"process {identity.pid} is still running 5 s after SIGKILL")
