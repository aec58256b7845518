"""Resuming and restarting a member: whether its last instance left a conversation to carry on
with, making room for the new instance, and `restart_member` (stop it, start it again with the
options its entry records, with or without its conversation).

A Claude teammate's transcript is also its conversation (`teammate.agent.transcript`), so an
instance started with ``--resume`` carries on where the last one stopped instead of starting
cold. `prepare_resume` checks that there is a conversation and clears the way: a dead entry for
the name is reaped first (its tasks go back to pending, the lead is told), a live one is
refused. `crashed` says whether the member's last instance stopped without shutting down in
order (killed, or its machine went down): the lead agent resumes such a member when it is asked
to spawn that name again.

A member on a host (``swarmHost``: started there by `swarm host serve`) is restarted there: it is
stopped as any member is (its host stops the process), and its host is asked to start it again
(`swarm.hosts.requests.spawn_on_host`, with the lead-signed first message), where its transcript,
and so its conversation, lives.
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
from swarm.team.liveness import liveness
from swarm.team.members import (
    clear_keeping_tasks,
    member_host,
    member_pid,
    member_spec,
    reap_member,
)
from teammate.agent.transcript import conversation_of, ended_in_order, read_transcript
from teammate.options import MemberSpec

RESTART_PROMPT = "You were restarted. Check the task list for what you hold, and carry on."
RESUME_PROMPT = (
    "You were restarted: your earlier process stopped, and your conversation so far is above. "
    "Carry on with your work; check the task list for what you hold."
)


def conversation_length(paths: TeamPaths, name: str) -> int:
    """How many messages the member's last instance's conversation has (0: none)."""
    return len(conversation_of(read_transcript(paths.transcript(name))))


def crashed(paths: TeamPaths, name: str) -> bool:
    """The member's last instance had a conversation and did not stop in order."""
    events = read_transcript(paths.transcript(name))
    return bool(conversation_of(events)) and not ended_in_order(events)


def prepare_resume(paths: TeamPaths, name: str, spec: MemberSpec, on_host: bool = False) -> int:
    """Check that `name` can be resumed as `spec` says, and reap a dead entry of that name;
    the number of messages it resumes with. `SwarmError` says why not (for a member that ran
    on a host, resumed elsewhere than by a host agent: where to resume it)."""
    if spec.kind == ModelKind.SHELL:
        raise SwarmError("--resume is for Claude teammates: a shell worker has no conversation")
    if spec.teammate_command is not None:
        raise SwarmError(
            "--resume restarts swarm's own teammate; another program keeps its own sessions"
        )
    count = conversation_length(paths, name)
    entry = open_store(paths).team_file().load().member(name)
    host = member_host(entry) if entry is not None else None
    if count == 0 and host is not None and not on_host:
        raise SwarmError(
            f"nothing to resume for {name!r} here: it ran on host {host!r}, where its "
            f"conversation is; resume it there: swarm spawn {name} --resume --host {host}"
        )
    if count == 0:
        raise SwarmError(
            f"nothing to resume for {name!r}: {paths.transcript(name)} holds no conversation "
            f"(no Claude teammate of that name has worked in team {paths.team!r}); spawn it "
            "without --resume"
        )
    clear_dead(paths, name)
    return count


def clear_dead(paths: TeamPaths, name: str) -> None:
    """Reap the entry for `name` if it is dead (`swarm.team.liveness`); refuse if it still
    runs."""
    member = open_store(paths).team_file().load().member(name)
    if member is None:
        return
    judge = liveness(paths)  # on PostgreSQL by its lease: it may run on another machine
    if not judge.state(member).gone:
        pid = member_pid(member)
        host = member_host(member)
        where = f" on host {host}" if host else ""
        raise SwarmError(
            f"{name!r} is still running{where}{f' (pid {pid})' if pid else ''}; shut it down "
            f"first (swarm shutdown), restart it (swarm restart {name} --resume), or spawn "
            "under another name"
        )
    reap_member(paths, member, judge)


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
    from swarm.team.lifecycle import (  # lifecycle imports us
        keep_assignment,
        request_shutdown,
        spawn_member,
    )

    member = open_store(paths).team_file().load().require(name)
    host = member_host(member)
    if host is not None:  # stopped here only if its host is there to start it again
        from swarm.hosts.requests import require_live, team_hosts

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
    from swarm.hosts.requests import spawn_on_host

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
