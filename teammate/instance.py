"""One process per teammate name: a kernel lock held for the whole run.

The lock is a flock on ``teams/<team>/.swarm-locks/<name>.instance`` holding the owner's pid;
the kernel releases it when the process dies, so a crashed teammate never blocks its successor.
The file is opened without following links, and only written once the lock is held.
`instance_lock` is the lock alone, for a process that does something else when it is taken
(`swarm lead` with a lead already running: a read-only view).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from protocols.errors import Error
from protocols.fs import safefs
from protocols.fs.locks import FLOCK_DIR
from protocols.paths import TeamPaths


class AlreadyRunning(Error):
    """Another process runs a teammate of that name; the message gives its pid."""


@contextmanager
def single_instance(paths: TeamPaths, name: str) -> Iterator[None]:
    with instance_lock(paths, name) as other:
        if other is not None:
            raise AlreadyRunning(
                f"a teammate named {name!r} is already running in team {paths.team!r} "
                f"(pid {other}); stop it before starting another"
            )
        yield


@contextmanager
def instance_lock(paths: TeamPaths, name: str) -> Iterator[str | None]:
    """`name`'s instance lock, held inside when it yields None; when another process holds
    it, nothing is held and it yields that process's pid as the lock file says it ("unknown"
    when it says nothing yet). `swarm lead` holds the lead's (``team-lead``) this way."""
    path = paths.team_dir / FLOCK_DIR / f"{name}.instance"
    safefs.makedirs(path.parent)
    fd = safefs.open_path(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process holds it
            yield os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield None
    finally:
        os.close(fd)
