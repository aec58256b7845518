"""Whether a member's process is alive: its identity as its entry records it, and its state
(lead, working, idle, stopped, dead, starting), from files and the kernel only. A member whose
process is gone is stopped if `swarm stop` stopped it (``swarmStopped``: `swarm start` starts it
again), dead otherwise.

Kept apart from `swarm.team.members` (reaping and stopping, which need the spawn backends and so
libtmux) so that `swarm send` can warn about a dead recipient without loading them. A member's
process is known by identity, never by pid alone (`protocols.pids`); a member with no process
yet is starting while the ``swarm spawn`` that added it (``spawnedBy``) is alive. A member that
joined over MCP (``backendType: "mcp"``) records the ``swarm mcp`` server of its session.

On PostgreSQL a member may run on another machine, where its pid means nothing: `Liveness`
judges it by its lease instead (`protocols.pg.leases`: declared dead, or run out, on the
server's clock), and a member that holds no lease yet by the host that is starting it
(``swarmHost``, `swarm.hosts`). `liveness(paths)` reads the leases once for a whole view; on
files it judges by process exactly as `member_state` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity
from protocols.records.plain import Plain
from protocols.store.selection import open_store
from protocols.values import MemberState

if TYPE_CHECKING:
    from typing import TypeAlias

    from protocols.pg.leases import Lease
    from protocols.team.model import Member

    # a member: its model, read without it (`TeamFile.members`), or its raw entry
    AnyMember: TypeAlias = Member | Plain | Mapping[str, Any]

MCP_BACKEND = "mcp"  # the backendType of a member that is an MCP session (`swarm.mcp_server`)
HOST_KEY = "swarmHost"  # the `swarm host serve` that started the member (PostgreSQL teams)
STOPPED_KEY = "swarmStopped"  # when `swarm stop` stopped the member (ms): kept, to start again


def member_entry(member: AnyMember) -> Mapping[str, Any]:
    """The member's entry as config.json has it: a `Member`'s (or one read without the model),
    or the raw entry itself (`protocols.team.file.TeamFile.entries`, which `swarm send` reads
    without loading the models)."""
    if isinstance(member, Mapping):
        return member
    if isinstance(member, Plain):
        return member.raw  # the entry itself (its model's defaults are nothing liveness reads)
    return member.to_json_dict()


def member_identity(member: AnyMember) -> ProcessIdentity | None:
    """The member's process as its entry records it (None: no process recorded yet)."""
    return ProcessIdentity.from_value(dict(member_entry(member)))


def member_pid(member: AnyMember) -> int | None:
    identity = member_identity(member)
    return identity.pid if identity is not None else None


def spawner_of(member: AnyMember) -> ProcessIdentity | None:
    """The ``swarm spawn`` process that added the member (None: not added by swarm spawn)."""
    return ProcessIdentity.from_value(member_entry(member).get("spawnedBy"))


def is_mcp(member: AnyMember) -> bool:
    """Whether the member is an MCP session (its recorded process is a shared server's)."""
    return member_entry(member).get("backendType") == MCP_BACKEND


def member_state(member: AnyMember) -> MemberState:
    """LEAD, WORKING, IDLE, STOPPED, DEAD, or STARTING (no process recorded yet)."""
    entry = member_entry(member)
    if entry.get("name") == LEAD_NAME:
        return MemberState.LEAD
    if entry.get(STOPPED_KEY) is not None:
        identity = member_identity(entry)
        return MemberState.STOPPED if identity is None or not identity.alive() else _by(entry)
    identity = member_identity(entry)
    if identity is None and is_mcp(entry):
        return MemberState.DEAD  # its session ended: the server cleared the process
    if identity is None:
        spawner = spawner_of(entry)
        if spawner is not None and not spawner.alive():
            return MemberState.DEAD  # its spawn was killed before it started the teammate
        return MemberState.STARTING
    if not identity.alive():
        return MemberState.DEAD
    return _by(entry)


def _by(entry: Mapping[str, Any]) -> MemberState:
    """A live member's state: working, or idle between turns."""
    return MemberState.WORKING if entry.get("isActive") is True else MemberState.IDLE


def member_host(member: AnyMember) -> str | None:
    """The host whose agent started the member (None: started by a ``swarm spawn`` here)."""
    host = member_entry(member).get(HOST_KEY)
    return host if isinstance(host, str) and host else None


class Liveness(NamedTuple):
    """How one team's members are judged: by process (files: `leases` None), or by lease."""

    leases: Mapping[str, Lease] | None = None
    hosts: Mapping[str, bool] = MappingProxyType({})  # host name: alive (never changed)

    def state(self, member: AnyMember) -> MemberState:
        entry = member_entry(member)
        lease = None if self.leases is None else self.leases.get(entry.get("name", ""))
        if lease is None or entry.get("name") == LEAD_NAME or is_mcp(entry):
            return member_state(entry)  # files, or a member not (or no longer) in the store
        if not lease.alive:
            return MemberState.STOPPED if entry.get(STOPPED_KEY) is not None else MemberState.DEAD
        if lease.left_s is not None:  # it holds one: that decides, wherever it runs
            if lease.left_s <= 0:
                return MemberState.DEAD
            return MemberState.WORKING if entry.get("isActive") is True else MemberState.IDLE
        host = member_host(entry)
        if host is not None:  # starting on a host: while that host is alive
            return MemberState.STARTING if self.hosts.get(host) else MemberState.DEAD
        return member_state(entry)  # started here by `swarm spawn`: its spawner's process

    def lease_left_s(self, name: str) -> float | None:
        lease = None if self.leases is None else self.leases.get(name)
        return None if lease is None else lease.left_s


def liveness(paths: TeamPaths) -> Liveness:
    """The team's `Liveness` now: its members' leases and hosts on PostgreSQL."""
    store = open_store(paths)
    leases, hosts = store.leases(), store.hosts()
    if leases is None or hosts is None:  # files: a member is judged by its process
        return Liveness()
    return Liveness(leases, hosts.alive())
