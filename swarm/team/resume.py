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

from protocols.paths import TeamPaths
from protocols.store import open_store
from protocols.team_config import Member
from protocols.values import MemberState, ModelKind
from swarm.backends import SpawnBackend, Spawned
from swarm.errors import SwarmError
from swarm.team.liveness import liveness
from swarm.team.members import member_host, member_pid, member_spec, reap_member
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
    if judge.state(member) != MemberState.DEAD:
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
    restarted, when resuming). A member on a host is restarted by that host (module doc); the
    `Spawned` returned then describes the process there."""
    from swarm.team.lifecycle import request_shutdown, spawn_member  # lifecycle imports us

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
    if liveness(paths).state(member) != MemberState.DEAD:
        stopped = request_shutdown(paths, name, "restarting", wait_s, force)
        if not stopped.stopped:
            raise SwarmError(
                f"{name!r} did not stop ({stopped.outcome}: {stopped.reason}); "
                "add --force to stop it anyway"
            )
    elif not resume:  # with resume, prepare_resume reaps it (on its host, for one there)
        reap_member(paths, member)
    if host is not None:
        return _start_on_host(paths, host, name, first, dataclasses.replace(spec, resume=resume))
    return spawn_member(
        paths, name, first, dataclasses.replace(spec, resume=resume), backend=backend
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
