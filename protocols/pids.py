"""Processes, known by identity rather than by pid: the one answer every part of swarm uses to
tell whether a process is alive, and the one way to stop a teammate and everything it started.

A pid is reused once its process is gone, so a pid alone names "whatever runs under that number
now". `ProcessIdentity` adds the process's start time (clock ticks since boot, field 22 of
``/proc/<pid>/stat``): a pid whose start time differs is a stranger, and is never judged alive
on the dead process's behalf nor sent a signal. An identity may also carry a *token*: a value
of ``SWARM_PROCESS_TOKEN`` in the environment of everything the process started (its
commands, their children, daemons that left its process group), so they can be found and
stopped even after the process itself died (`stop_processes`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

TOKEN_VARIABLE = "SWARM_PROCESS_TOKEN"
_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat`` (after the command name), or None if unreadable."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), or None if there is no such process."""
    if pid <= 0:
        return None
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or not fields[19].isdigit():
        return None
    return int(fields[19])


def started_at_ms(pid: int) -> int | None:
    """When `pid` started, in milliseconds since the epoch (JavaScript's
    ``performance.timeOrigin`` for that process), or None if there is no such process."""
    ticks = start_time(pid)
    try:
        uptime_s = float((_PROC / "uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if ticks is None:
        return None
    booted_ms = time.time() * 1000 - uptime_s * 1000
    return round(booted_ms + ticks * 1000 / os.sysconf("SC_CLK_TCK"))


def pid_alive(pid: int) -> bool:
    """True if `pid` is a running process; a zombie (exited, not yet reaped) counts as dead.

    Says nothing about *which* process that is: use `ProcessIdentity.alive` for a process you
    recorded earlier.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    fields = _stat_fields(pid)
    if fields is None:
        return not _PROC.is_dir()  # gone between the two checks; no /proc: os.kill said so
    return not fields or fields[0] not in ("Z", "X")


def new_token() -> str:
    return os.urandom(8).hex()  # secrets.token_hex, without loading hmac and OpenSSL


class ProcessIdentity(NamedTuple):
    """One process: its pid, when it started, and the token its descendants carry."""

    pid: int
    start: int | None  # None: not known (recorded by an older swarm); the pid alone decides
    token: str | None = None

    @classmethod
    def of(cls, pid: int, token: str | None = None) -> ProcessIdentity | None:
        """The identity of the running process `pid`; None if it is not running."""
        start = start_time(pid)
        return None if start is None else cls(pid, start, token)

    @classmethod
    def mine(cls, token: str | None = None) -> ProcessIdentity:
        return cls(os.getpid(), start_time(os.getpid()), token)

    def alive(self) -> bool:
        """This very process is running (not a zombie, and not a stranger under its pid)."""
        if not pid_alive(self.pid):
            return False
        return self.start is None or start_time(self.pid) == self.start

    def to_value(self) -> dict[str, Any]:
        value: dict[str, Any] = {"pid": self.pid, "pidStart": self.start}
        if self.token:
            value["processToken"] = self.token
        return value

    @classmethod
    def from_value(cls, value: Any) -> ProcessIdentity | None:
        """From ``{"pid", "pidStart"?, "processToken"?}`` (a member entry holds these keys)."""
        if not isinstance(value, dict):
            return None
        pid, start, token = value.get("pid"), value.get("pidStart"), value.get("processToken")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return None
        return cls(
            pid,
            start if isinstance(start, int) and not isinstance(start, bool) else None,
            token if isinstance(token, str) and token else None,
        )


def carrying_token(token: str) -> list[int]:
    """Pids of the live processes whose environment holds ``SWARM_PROCESS_TOKEN=<token>``."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()

    def carries(pid: str) -> bool:
        try:
            return needle in (_PROC / pid / "environ").read_bytes().split(b"\0")
        except OSError:
            return False

    return _live(carries)


def group_members(pgid: int) -> list[int]:
    """Pids of the live processes in process group `pgid`."""

    def member(pid: str) -> bool:
        fields = _stat_fields(int(pid))
        return fields is not None and len(fields) > 2 and fields[2] == str(pgid)

    return _live(member)


def _live(match: Callable[[str], bool]) -> list[int]:
    """Live processes (not this one) whose pid, as a /proc entry, `match` accepts."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    found = [int(name) for name in names if name.isdigit() and match(name)]
    return [pid for pid in found if pid != os.getpid() and pid_alive(pid)]


def processes_of(identity: ProcessIdentity) -> list[int]:
    """Every live process that belongs to `identity`: the process itself (if it is still that
    process), the members of the group it leads, and whatever carries its token."""
    pids: set[int] = set()
    if identity.alive():
        pids.add(identity.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(identity.pid) == identity.pid:
                pids.update(group_members(identity.pid))
    elif identity.start is not None and start_time(identity.pid) is None:
        # the leader is gone: its group lives on in what it started (a pgid is never handed out
        # again while any process of that group is alive), unless the leader was a stranger
        pids.update(group_members(identity.pid))
    if identity.token:
        pids.update(carrying_token(identity.token))
    pids.discard(os.getpid())
    return sorted(pids)


def stop_processes(
    identity: ProcessIdentity,
    timeout: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """SIGTERM every process of `identity` (`processes_of`), wait up to `timeout` seconds, then
    SIGKILL what is left. Never signals a stranger that took a recorded pid. Returns the pids
    that were signalled."""
    targets = processes_of(identity)
    _signal_all(targets, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    delay = 0.002
    while time.monotonic() < deadline and (left := _still_ours(identity, targets)):
        sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
    left = _still_ours(identity, sorted(set(targets) | set(processes_of(identity))))
    _signal_all(left, signal.SIGKILL)
    return targets


def stop_carriers(token: str, timeout: float = 2.0) -> list[int]:
    """Stop the processes (other than this one) that carry `token`: what a process started and
    left running when it exits. SIGTERM, up to `timeout` seconds, then SIGKILL."""
    if not token:
        return []
    targets = carrying_token(token)
    _signal_all(targets, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    delay = 0.002
    while time.monotonic() < deadline and set(carrying_token(token)) & set(targets):
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
    _signal_all(carrying_token(token), signal.SIGKILL)
    return targets


def _still_ours(identity: ProcessIdentity, pids: list[int]) -> list[int]:
    ours = set(processes_of(identity))
    return [pid for pid in pids if pid in ours]


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
