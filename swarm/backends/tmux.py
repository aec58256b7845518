"""The tmux backend (through libtmux): a teammate in its own tmux pane.

Outside tmux, each team gets a private server (``tmux -L swarm-<team>``) with one session named
after the team and one window; the first member's command creates the session, later members
split the first (main) pane, and the window keeps the ``main-vertical`` layout. Inside tmux
(``$TMUX`` set), members split the user's current window (``$TMUX_PANE``, the lead's pane).
Each pane is titled with the member's name and has ``remain-on-exit off``. A split that leaves
the new pane smaller than `MIN_PANE_SIZE` (40x8: from an 80-column pane, ``main-vertical``
would give it one column), or that tmux refuses for want of room, puts the member in a new
window of the same session instead, named after it (`Spawned.own_window`).

The command is given to tmux when the pane is created, never typed with send-keys, and tmux runs
it directly (``split-window ... -- argv...`` with two or more words is an ``execvp``, no shell):
the pane's pid is the teammate's. Nothing the caller passes is interpreted: tmux would otherwise
split its own command line at any argument ending in ``;`` (so such an argument could run tmux
commands such as ``run-shell``) and expand ``#(...)``/``#{...}`` formats in ``-c`` and in
names; `_arg` and `_format_literal` escape both. The environment goes in with ``-e``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import libtmux
from libtmux import common as tmux_common
from libtmux import exc as tmux_exc

from protocols.pids import start_time
from swarm.backends.base import (
    MIN_PANE_SIZE,
    Spawned,
    SpawnError,
    SpawnRequest,
    check_request,
    parent_pid,
    pid_exists,
    terminate,
    wait_until,
)

PANE_FORMAT = "#{pane_id}\t#{pane_pid}"
SESSION_SIZE = ("-x", "200", "-y", "50")  # a detached session's size until a client attaches


def private_socket_name(team: str) -> str:
    return f"swarm-{team}"


def session_name(team: str) -> str:
    """The private server's session for `team` (tmux turns ``.`` and ``:`` into ``_``)."""
    return team.replace(".", "_").replace(":", "_")


def _arg(value: str) -> str:
    """`value` as one tmux argument: tmux treats a final ``;`` as a command separator."""
    return value[:-1] + "\\;" if value.endswith(";") else value


def _format_literal(value: str) -> str:
    """`value` for an option tmux expands as a format (``-c``, ``-s``, ``-n``, ``-T``)."""
    return value.replace("#", "##")


class TmuxBackend:
    backend_type = "tmux"

    def __init__(
        self, socket_name: str | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        """`socket_name` forces a private server on that socket (tests use their own);
        `environ` is where ``TMUX``/``TMUX_PANE`` and passed-through variables come from."""
        self._socket_name = socket_name
        self._environ = environ

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    # -- spawning -------------------------------------------------------------------------

    def spawn(self, request: SpawnRequest) -> Spawned:
        check_request(request)
        _check_tmux_version()
        create = [
            "-d",
            "-P",
            "-F",
            PANE_FORMAT,
            "-c",
            _format_literal(os.path.abspath(request.cwd)),
        ]
        for key, value in request.child_env(self.environ).items():
            create += ["-e", f"{key}={value}"]
        command = ["--", *request.argv]
        if len(request.argv) == 1:  # one word would go to `default-shell -c`: exec it directly
            command = ["--", "/bin/sh", "-c", 'exec "$0"', request.argv[0]]

        inside = self._socket_name is None and bool(self.environ.get("TMUX"))
        if inside:
            server, socket = self._user_server(), None
            created = self._split(server, self._lead_pane(), create, command, request)
        else:
            socket = self._socket_name or private_socket_name(request.team)
            server = libtmux.Server(socket_name=socket)
            created = self._new_session_or_split(server, create, command, request)
        pane_id, _, pid_text = created.text.partition("\t")
        if not pane_id.startswith("%") or not pid_text.isdigit():
            raise SpawnError(f"cannot start {request.name!r}: tmux answered {created.text!r}")
        pid = int(pid_text)
        spawned = Spawned(self.backend_type, pane_id, pid, socket, start_time(pid), request.token)
        moved = self._dress(server, spawned, request.name)
        if created.own_window or moved:
            return dataclasses.replace(spawned, own_window=True)
        return spawned

    def _new_session_or_split(
        self, server: libtmux.Server, create: list[str], command: list[str], request: SpawnRequest
    ) -> _Created:
        name = session_name(request.team)
        session = f"={name}"
        if _run(server, "has-session", "-t", session).ok:
            return self._split(server, self._main_pane(server, session), create, command, request)
        literal = _format_literal(name)
        new = ["new-session", "-s", literal, "-n", literal, *SESSION_SIZE]
        result = _run(server, *new, *create, *command)
        if result.ok:
            return _Created(result.first, False)
        if "duplicate session" in result.error:  # another spawn created it first
            return self._split(server, self._main_pane(server, session), create, command, request)
        raise SpawnError(f"cannot start {request.name!r}: tmux new-session failed: {result.error}")

    def _split(
        self,
        server: libtmux.Server,
        target: str,
        create: list[str],
        command: list[str],
        request: SpawnRequest,
    ) -> _Created:
        """Split `target`'s window for the new pane; a new window of its session when tmux
        finds no room for a split."""
        result = _run(server, "split-window", "-h", "-t", target, *create, *command)
        if result.ok:
            return _Created(result.first, False)
        if "no space" not in result.error and "too small" not in result.error:
            raise SpawnError(
                f"cannot start {request.name!r}: tmux split-window of {target} failed: "
                f"{result.error}"
            )
        session = _run(server, "display-message", "-p", "-t", target, "#{session_id}").first
        where = ["-t", f"{session}:"] if session.startswith("$") else []
        name = _format_literal(request.name)
        result = _run(server, "new-window", *where, "-n", name, *create, *command)
        if not result.ok:
            raise SpawnError(
                f"cannot start {request.name!r}: tmux has no room to split {target}, and "
                f"new-window failed: {result.error}"
            )
        return _Created(result.first, True)

    def _main_pane(self, server: libtmux.Server, session: str) -> str:
        """The first pane of the session's first window: the one every new member splits."""
        rows = _run(
            server,
            "list-panes",
            "-s",
            "-t",
            session,
            "-F",
            "#{window_index} #{pane_index} #{pane_id}",
        ).checked()
        panes = sorted((int(w), int(p), pane) for w, p, pane in (row.split() for row in rows))
        if not panes:
            raise SpawnError(f"tmux session {session[1:]!r} has no pane to split")
        return panes[0][2]

    def _lead_pane(self) -> str:
        pane = self.environ.get("TMUX_PANE", "")
        if not pane.startswith("%"):
            raise SpawnError(
                "TMUX is set but TMUX_PANE is not, so the window to split is unknown; "
                "run swarm from a tmux pane, or unset TMUX to use a private tmux server"
            )
        return pane

    def _dress(self, server: libtmux.Server, spawned: Spawned, name: str) -> bool:
        """Title the pane, keep it from lingering after its process exits, lay out the window;
        a pane the layout leaves under `MIN_PANE_SIZE` goes to a window of its own (True)."""
        pane = spawned.pane_id
        result = _run_many(
            server,
            [
                ("set-option", "-p", "-t", pane, "remain-on-exit", "off"),
                ("select-pane", "-t", pane, "-T", _format_literal(name)),
                ("select-layout", "-t", pane, "main-vertical"),
            ],
        )
        if not result.ok and self._pane_state(spawned) is not None:
            self.stop(spawned, timeout=1.0)
            raise SpawnError(f"cannot set up the tmux pane of {name!r}: {result.error}")
        # else the pane is already gone: the teammate exited at once; is_alive will say so
        return result.ok and _own_window_if_small(server, pane, name)

    # -- watching and stopping --------------------------------------------------------------

    def is_alive(self, spawned: Spawned) -> bool:
        state = self._pane_state(spawned)
        if state is None:
            return False
        return not state.dead and state.pid == spawned.pid and spawned.identity.alive()

    def stop(self, spawned: Spawned, timeout: float = 5.0) -> None:
        """SIGTERM the pane's process and everything it started, wait up to `timeout` s,
        SIGKILL; then kill the pane, and the private server if that was its last pane.

        The process is known by its identity (pid and start time), so a pid that now belongs
        to another process is never signalled, and what the teammate left running is stopped
        even when its pane is already gone."""
        server = self._server_of(spawned)
        state = self._pane_state(spawned)
        if state is None or state.pid != spawned.pid:
            terminate(spawned.identity, timeout)  # leftovers only: identity-checked
            return
        private = spawned.socket_name is not None
        if private:
            # A server whose last pane closes may exit before reaping that pane's process,
            # leaving a zombie for init; keep it up until the process is reaped.
            _run(server, "set-option", "-s", "exit-empty", "off")
        terminate(spawned.identity, timeout)
        _run(server, "kill-pane", "-t", spawned.pane_id)
        _await_reaped(spawned.pid, state.server_pid)
        if private:
            sessions = _run(server, "list-sessions", "-F", "#{session_id}")
            if sessions.ok and not sessions.lines:
                _run(server, "kill-server")
            else:
                _run(server, "set-option", "-s", "-u", "exit-empty")

    def _pane_state(self, spawned: Spawned) -> _PaneState | None:
        """The pane's state, or None if the pane or its server is gone."""
        result = _run(
            self._server_of(spawned),
            *("display-message", "-p", "-t", spawned.pane_id, "#{pane_dead} #{pane_pid} #{pid}"),
        )
        fields = result.first.split()
        if not result.ok or len(fields) != 3 or not all(f.isdigit() for f in fields[1:]):
            return None
        return _PaneState(fields[0] == "1", int(fields[1]), int(fields[2]))

    def _server_of(self, spawned: Spawned) -> libtmux.Server:
        if spawned.socket_name is not None:
            return libtmux.Server(socket_name=spawned.socket_name)
        return self._user_server()

    def _user_server(self) -> libtmux.Server:
        """The server the user is in (``$TMUX`` names its socket), else tmux's default one."""
        socket_path = self.environ.get("TMUX", "").split(",", 1)[0]
        return libtmux.Server(socket_path=socket_path) if socket_path else libtmux.Server()


@functools.cache
def _check_tmux_version() -> None:
    """tmux 3.2a or newer (``new-session -e``, pane options), as libtmux itself needs."""
    try:
        ok = tmux_common.has_minimum_version(raises=False)
        version = str(tmux_common.get_version())
    except tmux_exc.TmuxCommandNotFound as error:
        raise SpawnError("the tmux command is not installed (or not on PATH)") from error
    if not ok:
        raise SpawnError(
            f"tmux {version} is too old; the tmux backend needs tmux "
            f"{tmux_common.TMUX_MIN_VERSION} or newer (or use the subprocess backend)"
        )


def _own_window_if_small(server: libtmux.Server, pane: str, name: str) -> bool:
    """Move `pane` to a new window of its session (named `name`, a member name: nothing tmux
    expands) when it shares its window and is smaller than `MIN_PANE_SIZE`, and lay out the
    window it left; whether it moved."""
    shown = _run(
        server,
        *("display-message", "-p", "-t", pane),
        "#{pane_width} #{pane_height} #{window_panes} #{session_id} #{window_id}",
    )
    fields = shown.first.split()
    if not shown.ok or len(fields) != 5 or not all(f.isdigit() for f in fields[:3]):
        return False  # gone already: the teammate exited at once
    width, height, panes = (int(f) for f in fields[:3])
    session, window = fields[3:]
    min_width, min_height = MIN_PANE_SIZE
    if panes == 1 or (width >= min_width and height >= min_height):
        return False
    moved = _run_many(
        server,
        [
            ("break-pane", "-d", "-s", pane, "-t", f"{session}:", "-n", name),
            ("select-layout", "-t", window, "main-vertical"),
        ],
    )
    return moved.ok


class _Created(NamedTuple):
    text: str  # tmux's answer: PANE_FORMAT of the new pane
    own_window: bool  # it was made in a window of its own (no room to split)


class _PaneState(NamedTuple):
    dead: bool  # the pane's process has exited (a pane kept by remain-on-exit)
    pid: int  # the pane's process
    server_pid: int  # the tmux server, its parent


def _await_reaped(pid: int, server_pid: int) -> None:
    """Wait until tmux has reaped `pid`, so the pid is really gone when `stop` returns.

    tmux 3.3a was seen here leaving about one stopped pane process in four as a zombie until
    its next SIGCHLD; a SIGCHLD of our own makes it collect its exited children at once.
    """
    if wait_until(lambda: not pid_exists(pid), 0.02):
        return
    if parent_pid(pid) == server_pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGCHLD)
    wait_until(lambda: not pid_exists(pid), 1.0)


class _Result(NamedTuple):
    command: str
    ok: bool
    lines: list[str]
    error: str

    @property
    def first(self) -> str:
        return self.lines[0] if self.lines else ""

    def checked(self) -> list[str]:
        if not self.ok:
            raise SpawnError(f"tmux {self.command} failed: {self.error}")
        return self.lines


def _run(server: libtmux.Server, *args: str) -> _Result:
    """Run one tmux command on `server`; every argument is escaped with `_arg`."""
    return _run_many(server, [args])


def _run_many(server: libtmux.Server, commands: Sequence[Sequence[str]]) -> _Result:
    """Run tmux commands in one tmux invocation (a bare ``;`` argument separates them)."""
    words: list[str] = []
    for command in commands:
        words += [";"] if words else []
        words += [_arg(word) for word in command]
    try:
        result = server.cmd(*words)
    except tmux_exc.TmuxCommandNotFound as missing:
        raise SpawnError("the tmux command is not installed (or not on PATH)") from missing
    error = " ".join(result.stderr) or f"exit status {result.returncode}"
    return _Result(commands[0][0], result.returncode == 0, list(result.stdout), error)
