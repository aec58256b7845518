"""Resuming a member: whether its last instance left a conversation to carry on with, and making
room for the new instance (restarting one is `swarm.team.restart`).

A Claude teammate's transcript is also its conversation (`teammate.agent.transcript`), so an
instance started with ``--resume`` carries on where the last one stopped instead of starting
cold. `prepare_resume` checks that there is a conversation and clears the way: a dead entry for
the name is reaped first (its tasks go back to pending, the lead is told), a live one is
refused. `crashed` says whether the member's last instance stopped without shutting down in
order (killed, or its machine went down): the lead agent resumes such a member when it is asked
to spawn that name again.
"""

from __future__ import annotations

from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import ModelKind
from swarm.errors import SwarmError
from swarm.team.liveness import liveness
from swarm.team.members import (
    member_host,
    member_pid,
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
