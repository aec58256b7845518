"""A team member that is an MCP session: joining the team as one, and leaving it.

Joining adds the member (``backendType: "mcp"``) or takes over an MCP member of that name whose
session ended, and records the ``swarm mcp`` server's process in the entry (``pid``,
``pidStart``) with the session's id (``mcpSession``): `swarm.team.members.member_state` then sees
it idle while the server lives, like any teammate. A name held by a live member (a teammate, or
another open session) is refused, and so is a name that is not a member's name to create.

Leaving is what Claude Code does for a teammate that shut down, short of removing it: its
unfinished tasks go back to ``pending`` with no owner, ``isActive`` is cleared, and the process
is taken out of the entry, so the member is dead at once (``swarm status``); `swarm reap`, or a
running ``swarm lead``, removes it. A later session may join under the name again and find the
messages sent to it meanwhile.
"""

from __future__ import annotations

from pathlib import Path

from protocols.errors import MemberExists, ProtocolsError
from protocols.names import LEAD_NAME, validate_name
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity
from protocols.store.selection import open_store
from protocols.team.model import Member, TeamConfig
from swarm.errors import SwarmError
from swarm.team.members import MCP_BACKEND, is_mcp, member_pid, member_state

SESSION_KEY = "mcpSession"  # the member entry's key: the id of the session it is


class NameTaken(SwarmError):
    """The name belongs to a member that is alive, or to one that is not an MCP member."""


def join(paths: TeamPaths, name: str, session_id: str, cwd: Path) -> Member:
    """Make `name` a member of the team for the MCP session `session_id`, served by this
    process; its member entry. Raises `NameTaken`, `InvalidName` or `TeamNotFound`."""
    if name == LEAD_NAME:
        raise NameTaken(f"{LEAD_NAME!r} is the lead's name: join as the lead to act for it")
    validate_name(name, "member name")
    team = open_store(paths).team_file()
    here = {**ProcessIdentity.mine().to_value(), "isActive": False, SESSION_KEY: session_id}
    try:
        return team.add_member(name, agent_type=None, cwd=cwd, backend_type=MCP_BACKEND, **here)
    except MemberExists:
        pass
    taken: list[Member] = []

    def take_over(config: TeamConfig) -> TeamConfig:
        member = config.member(name)
        if member is None:  # removed meanwhile: add it in the same write
            raise NameTaken(f"{name!r} left the team while joining; join again")
        _check_free(paths, member)
        new = member.updated(**here)
        taken.append(new)
        return config.updated(members=[new if m.name == name else m for m in config.members])

    team.update(take_over)
    return taken[-1]


def _check_free(paths: TeamPaths, member: Member) -> None:
    """Refuse to take `member`'s name unless it is an MCP member whose session is over."""
    if not is_mcp(member):
        kind = f"a {member.backendType} teammate" if member.backendType else "a teammate"
        raise NameTaken(
            f"{member.name!r} is already {kind} in team {paths.team!r}; join under another name"
        )
    if not member_state(member).gone:
        raise NameTaken(
            f"{member.name!r} is already joined by another open MCP session (server pid "
            f"{member_pid(member)}); join under another name, or end that session first"
        )


def leave(paths: TeamPaths, name: str, session_id: str) -> list[str]:
    """The session `session_id` of member `name` ended: its unfinished tasks go back to
    pending, it is marked inactive with no process. Returns the ids of the released tasks.
    Safe to call twice, and when the member was removed meanwhile (then it changes nothing)."""
    team = open_store(paths).team_file()
    try:
        member = team.load().member(name)
    except ProtocolsError:
        return []
    if member is None or (member.model_extra or {}).get(SESSION_KEY) != session_id:
        return []  # removed, or another session holds the name now: not ours to change
    released = [t.id for t in open_store(paths).task_board().release_all(name)]

    def gone(config: TeamConfig) -> TeamConfig:
        current = config.member(name)
        if current is None or (current.model_extra or {}).get(SESSION_KEY) != session_id:
            return config
        new = current.updated(isActive=False, pid=None, pidStart=None, **{SESSION_KEY: None})
        return config.updated(members=[new if m.name == name else m for m in config.members])

    team.update(gone)
    return released


def still_member(paths: TeamPaths, name: str, session_id: str) -> bool:
    """Whether `name` is still the member this session joined as (not removed by the lead,
    `swarm reap` or `swarm shutdown --force`)."""
    member = open_store(paths).team_file().load().member(name)
    return member is not None and (member.model_extra or {}).get(SESSION_KEY) == session_id
