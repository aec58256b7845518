"""What the leader knows about members' processes: alive, idle, working or dead; and reaping.

A member's process is known from its member entry by identity, never by pid alone: ``pid`` and
``pidStart`` (its start time) written when it was spawned and again by the teammate when it
joins, and ``processToken``, which everything it starts carries (`protocols.pids`). A pid that
now belongs to a process that started later is a stranger: the member is dead, and the stranger
is never signalled. A member that has no process yet is ``starting`` while the ``swarm spawn``
that added it (``spawnedBy``) is alive, and dead once that is gone without having started it.
Everything here reads files and asks the kernel; it never asks a teammate. Telling alive from
dead is `swarm.team.liveness` (light enough for `swarm send`), whose names are also here.

A member that joined over MCP (``backendType: "mcp"``, `swarm.mcp_server`) records the process of
the ``swarm mcp`` server serving its session, and has no process of its own: it is idle while its
session is open and dead once the session ended (the server then cleared the process) or the
server died. Such a process may serve other sessions too, so it is never signalled from here.

On PostgreSQL, members are judged by their leases (`swarm.team.liveness.Liveness`), and `reap`
first sweeps the expired ones (`protocols.pg.leases.Leases.sweep`: tasks back to pending, the
lead told), then removes the dead from the roster. A member started by a host agent
(``swarmHost``) runs on that host: nothing here signals its pid; stopping it is a request to its
host (`swarm.team.host_requests`), and a host stops by itself a teammate declared dead.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.messages.models import TeammateTerminated
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity, stop_processes
from protocols.store.selection import open_store
from protocols.team.model import Member
from protocols.values import MemberState
from swarm.backends import Spawned, choose_backend
from swarm.team.approvals import close_requests
from swarm.team.isolation import release
from swarm.team.liveness import (
    MCP_BACKEND,
    Liveness,
    is_mcp,
    liveness,
    member_host,
    member_identity,
    member_pid,
    member_state,
    spawner_of,
)
from swarm.team.signatures import lead_mailbox
from teammate.options import MemberSpec

__all__ = [  # the liveness names, from here as before
    "MCP_BACKEND",
    "clear_keeping_tasks",
    "is_mcp",
    "liveness",
    "member_host",
    "member_identity",
    "member_pid",
    "member_spec",
    "member_state",
    "reap",
    "reap_member",
    "spawner_of",
    "stop_leftovers",
    "stop_member",
]


def member_spec(member: Member) -> MemberSpec | None:
    """How the member was started, as `spawn_member` recorded it (None: not started by swarm,
    or by a swarm that did not record it); enough to start it again with the same options."""
    return MemberSpec.from_value((member.model_extra or {}).get("swarmSpec"))


@dataclass(frozen=True)
class Reaped:
    name: str
    pid: int | None
    released: list[str]


def reap(paths: TeamPaths) -> list[Reaped]:
    """Remove members whose process is gone; their unfinished tasks go back to ``pending``.

    What a dead member left running (its process group, whatever carries its token) is stopped
    first, so a task it held never runs twice at once. The lead is told with a
    ``teammate_terminated`` message in its inbox. On PostgreSQL, by lease (module doc).
    """
    store = open_store(paths)
    swept = {e.name: e.released for e in store.sweep()}  # files: nothing to sweep
    judge = liveness(paths)
    return [
        reap_member(paths, member, judge, swept.get(member.name, []))
        for member in store.team_file().load().members
        if judge.state(member) == MemberState.DEAD
    ]


def reap_member(
    paths: TeamPaths, member: Member, judge: Liveness | None = None, swept: list[str] | None = None
) -> Reaped:
    """`reap` for one member known to be dead. A member whose lease was declared dead (`swept`
    now, or by another member's sweep before) was told to the lead then; it is not told again."""
    lease = None if judge is None or judge.leases is None else judge.leases.get(member.name)
    buried = lease is not None and not lease.alive
    if member_host(member) is None:  # on a host, its host stops what is left
        stop_leftovers(member)
    released = (swept or []) + [
        t.id for t in open_store(paths).task_board().release_all(member.name)
    ]
    close_requests(paths, member.name, "its process is gone")
    open_store(paths).team_file().remove_member(member.name)
    release(paths, member)  # its worktree: removed if unchanged, else reported
    pid = member_pid(member)
    if buried:
        return Reaped(member.name, pid, released)
    gone = f"pid {pid} is gone" if pid else "it never started"
    if is_mcp(member):
        gone = "its MCP session ended" if pid is None else f"its MCP server (pid {pid}) is gone"
    if member_host(member) is not None:
        gone = f"its host {member_host(member)} is gone and it never started"
    note = TeammateTerminated(
        message=f"{member.name} has stopped ({gone}); "
        f"tasks returned to pending: {', '.join('#' + i for i in released) or 'none'}"
    )
    lead_mailbox(paths).send(LEAD_NAME, note, sender=LEAD_NAME)
    return Reaped(member.name, pid, released)


def clear_keeping_tasks(paths: TeamPaths, member: Member) -> None:
    """Make room for a new instance of a member whose process is gone (dead, or stopped by
    `swarm stop`): stop what the old one left running, close its requests, remove its entry;
    its tasks keep their owner, and its worktree stays for the new instance (unlike
    `reap_member`)."""
    if member_host(member) is None:  # on a host, its host stops what is left
        stop_leftovers(member)
    close_requests(paths, member.name, "its process is gone")
    open_store(paths).team_file().remove_member(member.name)


def stop_leftovers(member: Member, timeout: float = 5.0) -> list[int]:
    """Stop what a member started and left running (its process is dead or a stranger now).
    An MCP member started nothing: nothing is stopped."""
    if is_mcp(member):
        return []
    identity = member_identity(member)
    token = (member.model_extra or {}).get("processToken")
    if identity is None and isinstance(token, str) and token:
        identity = ProcessIdentity(0, None, token)  # never started: only its token to go by
    return stop_processes(identity, timeout) if identity is not None else []


def spawned_of(member: Member) -> Spawned | None:
    """How the member was started, from its entry (None for a member swarm did not start)."""
    identity = member_identity(member)
    pane = member.tmuxPaneId if member.tmuxPaneId not in ("", "in-process") else ""
    pid, start, token = (
        (identity.pid, identity.start, identity.token) if identity else (0, None, None)
    )
    if member.backendType == "tmux" and pane:
        socket = (member.model_extra or {}).get("tmuxSocket")
        return Spawned("tmux", pane, pid, socket if isinstance(socket, str) else None, start, token)
    if identity is not None:
        return Spawned("subprocess", "", pid, None, start, token)
    return None


def stop_member(paths: TeamPaths, member: Member, timeout: float = 5.0, here: bool = False) -> None:
    """Stop a member's process and everything it started (SIGTERM, then SIGKILL after
    `timeout`) and close its pane; strangers that took a recorded pid are left alone. An MCP
    member's recorded process is the server of its session (perhaps of others too): it is left
    alone, and the member is gone from the team once removed. A member on a host is stopped by
    its host (a request), unless `here` (the host agent itself)."""
    if is_mcp(member):
        return
    if member_host(member) is not None and not here:  # it runs on that host: ask it
        from swarm.team.host_requests import stop_on_host

        stop_on_host(paths, member, timeout)
        return
    spawned = spawned_of(member)
    if spawned is None:
        stop_leftovers(member, timeout)
        return
    socket = spawned.socket_name
    backend = choose_backend(spawned.backend_type, socket_name=socket)
    backend.stop(spawned, timeout)
