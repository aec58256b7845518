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
from swarm.team.members import member_host, member_pid, member_spec, member_state, reap_member
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


def prepare_resume(paths: TeamPaths, name: str, spec: MemberSpec) -> int:
    """Check that `name` can be resumed as `spec` says, and reap a dead entry of that name;
    the number of messages it resumes with. `SwarmError` says why not."""
    if spec.kind == ModelKind.SHELL:
        raise SwarmError("--resume is for Claude teammates: a shell worker has no conversation")
    if spec.teammate_command is not None:
        raise SwarmError(
            "--resume restarts swarm's own teammate; another program keeps its own sessions"
        )
    count = conversation_length(paths, name)
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
            "first (swarm shutdown), or spawn under another name"
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
    restarted, when resuming)."""
    from swarm.team.lifecycle import request_shutdown, spawn_member  # lifecycle imports us

    member = open_store(paths).team_file().load().require(name)
    host = member_host(member)
    if host is not None:  # it would be stopped there and started here
        raise SwarmError(
            f"{name!r} runs on host {host!r}, and restart starts teammates here only: "
            f"swarm shutdown {name}, then swarm spawn {name} --host {host} with its options"
        )
    spec = member_spec(member)
    if spec is None:
        raise SwarmError(
            f"{name!r} was not started by swarm spawn (its entry records no options); "
            "start it again with swarm spawn"
        )
    first = prompt or (RESUME_PROMPT if resume else member.prompt) or RESTART_PROMPT
    if member_state(member) != MemberState.DEAD:
        stopped = request_shutdown(paths, name, "restarting", wait_s, force)
        if not stopped.stopped:
            raise SwarmError(
                f"{name!r} did not stop ({stopped.outcome}: {stopped.reason}); "
                "add --force to stop it anyway"
            )
    elif not resume:  # with resume, prepare_resume reaps it
        reap_member(paths, member)
    return spawn_member(
        paths, name, first, dataclasses.replace(spec, resume=resume), backend=backend
    )
