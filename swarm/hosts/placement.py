"""Where the lead's teammates go on a PostgreSQL team with hosts: the hosts given to `swarm lead
--host` (checked once when it starts), and which of them takes the next teammate.

The rule: of the given hosts that are alive now, the one running the fewest live members of
this team (a member counts for the host that started it, ``swarmHost``, until it is judged dead
by `swarm.team.liveness.Liveness`); a tie goes to the host given first. So teammates spread
over the hosts in turn, and a host that died (or was never started) is passed over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.team.host_requests import require_live, team_hosts
from swarm.team.liveness import liveness, member_host


def check_hosts(paths: TeamPaths, hosts: Sequence[str]) -> None:
    """`SwarmError` unless the team is on PostgreSQL and every one of `hosts` is alive (none
    given: nothing to check)."""
    if not hosts:
        return
    found = team_hosts(paths, "swarm lead --host")
    for host in hosts:
        require_live(found, host)


def choose_host(paths: TeamPaths, hosts: Sequence[str]) -> str:
    """The host of `hosts` that takes the next teammate (module doc); `SwarmError` naming them
    when none is alive."""
    alive = team_hosts(paths, "a teammate on a host").alive()
    live = [h for h in dict.fromkeys(hosts) if alive.get(h)]
    if not live:
        raise SwarmError(
            f"none of the lead's hosts is alive ({', '.join(hosts)}); start one there: swarm "
            f"host serve --team {paths.team} --name HOST (swarm host list shows them)"
        )
    judge = liveness(paths)
    load = Counter(
        member_host(member)
        for member in open_store(paths).team_file().load().members
        if member_host(member) is not None and not judge.state(member).gone
    )
    return min(live, key=lambda host: load[host])  # min keeps the first of equals
