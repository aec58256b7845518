"""What the leader knows about members' processes: alive, idle, working or dead; and reaping.

A member's process is found from its member entry: the ``pid`` key a swarm teammate writes when
it starts. Everything here reads files and asks the kernel; it never asks a teammate.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocols.mailbox import Mailbox
from protocols.messages import TeammateTerminated
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks import TaskBoard
from protocols.team import Member, TeamFile
from swarm.backends import Spawned, choose_backend
from swarm.isolation import release


def member_pid(member: Member) -> int | None:
    pid = (member.model_extra or {}).get("pid")
    return pid if isinstance(pid, int) else None


def member_state(member: Member) -> str:
    """``lead``, ``working``, ``idle``, ``dead``, or ``starting`` (no process recorded yet)."""
    if member.name == LEAD_NAME:
        return "lead"
    pid = member_pid(member)
    if pid is None:
        return "starting"
    if not pid_alive(pid):
        return "dead"
    return "working" if member.isActive else "idle"


@dataclass(frozen=True)
class Reaped:
    name: str
    pid: int | None
    released: list[str]


def reap(paths: TeamPaths) -> list[Reaped]:
    """Remove members whose process is gone; their unfinished tasks go back to ``pending``.

    The lead is told with a ``teammate_terminated`` message in its inbox.
    """
    team = TeamFile(paths)
    board = TaskBoard(paths)
    mailbox = Mailbox(paths)
    reaped = []
    for member in team.load().members:
        if member_state(member) != "dead":
            continue
        released = [t.id for t in board.release_all(member.name)]
        team.remove_member(member.name)
        release(paths, member)  # its worktree: removed if unchanged, else reported
        note = TeammateTerminated(
            message=f"{member.name} has stopped (pid {member_pid(member)} is gone); "
            f"tasks returned to pending: {', '.join('#' + i for i in released) or 'none'}"
        )
        mailbox.send(LEAD_NAME, note, sender=LEAD_NAME)
        reaped.append(Reaped(member.name, member_pid(member), released))
    return reaped


def spawned_of(member: Member) -> Spawned | None:
    """How the member was started, from its entry (None for a member swarm did not start)."""
    pid = member_pid(member)
    pane = member.tmuxPaneId if member.tmuxPaneId not in ("", "in-process") else ""
    if member.backendType == "tmux" and pane:
        socket = (member.model_extra or {}).get("tmuxSocket")
        return Spawned("tmux", pane, pid or 0, socket if isinstance(socket, str) else None)
    if pid is not None:
        return Spawned("subprocess", "", pid, None)
    return None


def stop_member(paths: TeamPaths, member: Member, timeout: float = 5.0) -> None:
    """Stop a member's process (SIGTERM, then SIGKILL after `timeout`) and close its pane."""
    spawned = spawned_of(member)
    if spawned is None:
        return
    socket = spawned.socket_name
    backend = choose_backend(spawned.backend_type, socket_name=socket)
    backend.stop(spawned, timeout)
