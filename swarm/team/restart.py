"""Restarting members: `restart_member` (stop it, start it again with the options its entry
records, with or without its conversation, keeping its tasks) and `start_team` (`swarm start`:
every member `swarm stop` stopped, started again together).

A member on a host (``swarmHost``: started there by `swarm host serve`) is restarted there: it is
stopped as any member is (its host stops the process), and its host is asked to start it again
(`swarm.team.host_requests.spawn_on_host`, with the lead-signed first message), where its
transcript, and so its conversation, lives.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from protocols.errors import Error
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.team.model import Member
from protocols.values import MemberState, ModelKind
from swarm.backends import SpawnBackend, Spawned
from swarm.errors import SwarmError
from swarm.team.lifecycle import keep_assignment, request_shutdown, spawn_member
from swarm.team.liveness import liveness
from swarm.team.members import clear_keeping_tasks, member_host, member_spec, reap_member
from swarm.team.resume import (
    RESTART_PROMPT,
    RESUME_PROMPT,
    conversation_length,
)
from teammate.options import MemberSpec


def restart_member(
    paths: TeamPaths,
    name: str,
    *,
    resume: bool = False,
    prompt: str | None = None,
    wait_s: float = 30.0,
    force: bool = False,
    backend: SpawnBackend | None = None,
) -> tuple[Member, Spawned]:
    """Stop `name` (the shutdown protocol; `force` stops it if it will not) and start it again
    with the options its entry records (`member_spec`), with its conversation if `resume`.
    Its first message: `prompt`, else the one it was spawned with (a note that it was
    restarted, when resuming). The tasks it was working on stay its own: the new instance
    carries on with them, no other idle teammate takes them meanwhile. A member on a host is
    restarted by that host (module doc); the `Spawned` returned then describes the process
    there."""
    member = open_store(paths).team_file().load().require(name)
    host = member_host(member)
    if host is not None:  # stopped here only if its host is there to start it again
        from swarm.team.host_requests import require_live, team_hosts

        require_live(team_hosts(paths, "a restart on a host"), host)
    spec = member_spec(member)
    if spec is None:
        raise SwarmError(
            f"{name!r} was not started by swarm spawn (its entry records no options); "
            "start it again with swarm spawn"
        )
    first = prompt or (RESUME_PROMPT if resume else member.prompt) or RESTART_PROMPT
    board = open_store(paths).task_board()
    held = [t.id for t in board.list() if t.owner == name and t.busy]  # not a failed one
    if not liveness(paths).state(member).gone:
        stopped = request_shutdown(paths, name, "restarting", wait_s, force)
        if not stopped.stopped:
            raise SwarmError(
                f"{name!r} did not stop ({stopped.outcome}: {stopped.reason}); "
                "add --force to stop it anyway"
            )
    elif host is None:
        clear_keeping_tasks(paths, member)
    elif not resume:  # with resume, its host clears the way (`swarm.hosts`)
        reap_member(paths, member)
    keep_assignment(paths, name, held)  # what it held stays its own, not the next idle's
    if host is not None:
        return _start_on_host(paths, host, name, first, dataclasses.replace(spec, resume=resume))
    return spawn_member(
        paths,
        name,
        first,
        dataclasses.replace(spec, resume=resume),
        backend=backend,
        color=member.color,  # the colour a person knows it by, kept
    )


def _start_on_host(
    paths: TeamPaths, host: str, name: str, prompt: str, spec: MemberSpec
) -> tuple[Member, Spawned]:
    """Have `host` start `name` as `spec` says; the member as the host recorded it, and where
    its process runs there."""
    from swarm.team.host_requests import spawn_on_host

    done = spawn_on_host(paths, host, name, prompt, spec).outcome or {}
    member = open_store(paths).team_file().load().require(name)
    spawned = Spawned(
        backend_type=str(done.get("backend") or ""),
        pane_id=str(done.get("pane") or ""),
        pid=int(done.get("pid") or 0),
        socket_name=done.get("socket") if isinstance(done.get("socket"), str) else None,
    )
    return member, spawned


@dataclass(frozen=True)
class Started:
    """One stopped member `start_team` started again (or could not: `error`)."""

    name: str
    pid: int | None
    resumed: bool  # with its conversation
    tasks: list[str]  # the tasks it carries on with
    error: str = ""

    def line(self) -> str:
        if self.error:
            return f"{self.name}: not started: {self.error}"
        how = "with its conversation" if self.resumed else "fresh"
        held = ", ".join("#" + t for t in self.tasks) or "none"
        return f"started {self.name} ({how}), pid {self.pid}; its tasks: {held}"


def start_team(paths: TeamPaths) -> list[Started]:
    """`swarm start`: every member `swarm stop` stopped, started again together (each in a
    thread: a spawn waits for its teammate to join), with its options, its conversation if it
    has one, and its tasks."""
    team = open_store(paths).team_file().load()
    judge = liveness(paths)
    stopped = [m for m in team.members if judge.state(m) == MemberState.STOPPED]

    def start(member: Member) -> Started:
        spec = member_spec(member)
        resume = (
            spec is not None
            and spec.kind != ModelKind.SHELL
            and spec.teammate_command is None
            and conversation_length(paths, member.name) > 0
        )
        try:
            _, spawned = restart_member(paths, member.name, resume=resume)
        except Error as exc:
            return Started(member.name, None, False, [], str(exc))
        board = open_store(paths).task_board()
        tasks = [t.id for t in board.list() if t.owner == member.name and t.unfinished]
        return Started(member.name, spawned.pid, resume, tasks)

    if not stopped:
        return []
    with ThreadPoolExecutor(max_workers=len(stopped)) as pool:
        return list(pool.map(start, stopped))
