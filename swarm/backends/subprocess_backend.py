"""The subprocess backend: a teammate as a plain child process in its own session, with its
output appended to a log file.

The child gets no terminal and no stdin, and leads its own process group, so `stop` reaches
everything it started. The backend keeps the `Popen` of each child it started, to reap it; a
backend in another process (a later ``swarm`` command) can still check and stop the pid.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from protocols.fs import safefs
from protocols.pids import start_time
from swarm.backends.base import (
    Spawned,
    SpawnError,
    SpawnRequest,
    check_request,
    reap_child,
    terminate,
)


class SubprocessBackend:
    backend_type = "subprocess"

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """`environ` is where passed-through variables come from (default: `os.environ`)."""
        self._environ = environ
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._codes: dict[int, int] = {}  # exit statuses of the children `stop` reaped

    def spawn(self, request: SpawnRequest) -> Spawned:
        check_request(request)
        environ = os.environ if self._environ is None else self._environ
        try:
            safefs.makedirs(request.log_path.parent)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            log = os.fdopen(safefs.open_path(request.log_path, flags, 0o644), "ab")
        except OSError as error:  # a link planted at the log (LinkRefused) too
            raise SpawnError(
                f"cannot start {request.name!r}: cannot open log file {request.log_path}: {error}"
            ) from error
        with log:
            try:
                child = subprocess.Popen(
                    request.argv,
                    cwd=request.cwd,
                    env=request.child_env(environ),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as error:
                raise SpawnError(
                    f"cannot start {request.name!r}: {request.argv[0]!r}: {error}"
                ) from error
        self._children[child.pid] = child
        start = start_time(child.pid)
        return Spawned(self.backend_type, "", child.pid, None, start, request.token)

    def is_alive(self, spawned: Spawned) -> bool:
        child = self._children.get(spawned.pid)
        if child is not None:
            return child.poll() is None
        reap_child(spawned.pid)
        return spawned.identity.alive()

    def exit_code(self, spawned: Spawned) -> int | None:
        """The exit status of a child this backend started and that has exited (a signal:
        minus its number); None while it runs, or for a process it did not start."""
        child = self._children.get(spawned.pid)
        return child.poll() if child is not None else self._codes.get(spawned.pid)

    def stop(self, spawned: Spawned, timeout: float = 5.0) -> None:
        """SIGTERM the child and everything it started, wait up to `timeout` s, then SIGKILL;
        reap it. A pid that now belongs to another process is never signalled."""
        terminate(spawned.identity, timeout, alive=lambda: self.is_alive(spawned))
        child = self._children.pop(spawned.pid, None)
        if child is not None:
            self._codes[spawned.pid] = child.wait()
