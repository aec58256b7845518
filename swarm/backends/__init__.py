"""Spawn backends: how a teammate process is started, watched and stopped.

`choose_backend` picks one: ``tmux`` (a pane per member, `swarm.backends.tmux`) or
``subprocess`` (a plain child process logging to a file, `swarm.backends.subprocess_backend`).
Both implement `SpawnBackend`; the shared types, the environment a teammate gets
(`passthrough_env`) and the process helpers are in `swarm.backends.base`.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from swarm.backends.base import (
    BACKEND_KINDS,
    SpawnBackend,
    Spawned,
    SpawnError,
    SpawnRequest,
    UnknownBackend,
    passthrough_env,
)
from swarm.backends.stub import StubBackend
from swarm.backends.subprocess_backend import SubprocessBackend

if TYPE_CHECKING:
    from swarm.backends.tmux import TmuxBackend


def choose_backend(
    kind: str = "auto", env: Mapping[str, str] | None = None, socket_name: str | None = None
) -> SpawnBackend:
    """The backend for `kind`: ``auto`` (tmux when the tmux binary is on PATH, else
    subprocess), ``tmux`` or ``subprocess``.

    `env` is the environment the backend reads (``TMUX``, ``TMUX_PANE``, passed-through
    variables; default `os.environ`); `socket_name` forces a private tmux server on that socket.
    """
    if kind == "stub":  # a member a unit test's StubBackend "started": nothing to stop
        return StubBackend()
    if kind not in BACKEND_KINDS:
        raise UnknownBackend(f"unknown spawn backend {kind!r}; allowed: {', '.join(BACKEND_KINDS)}")
    if kind == "auto":
        kind = "tmux" if shutil.which("tmux") else "subprocess"
    if kind == "tmux":
        from swarm.backends.tmux import TmuxBackend

        return TmuxBackend(socket_name=socket_name, environ=env)
    return SubprocessBackend(environ=env)


def __getattr__(name: str) -> Any:
    """`TmuxBackend` is imported when first asked for: libtmux is loaded only by a command that
    talks to tmux, not by every one that looks at a member's process."""
    if name == "TmuxBackend":
        from swarm.backends.tmux import TmuxBackend

        return TmuxBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BACKEND_KINDS",
    "SpawnBackend",
    "SpawnError",
    "SpawnRequest",
    "Spawned",
    "StubBackend",
    "SubprocessBackend",
    "TmuxBackend",
    "UnknownBackend",
    "choose_backend",
    "passthrough_env",
]
