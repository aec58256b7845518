"""The lead's side of hosts: spawning a teammate on another machine, and stopping one there.

A PostgreSQL team's hosts (`protocols.pg.hosts`) take requests through the store. `spawn_on_host`
files a spawn request for a live host, with everything the teammate needs from here: its
options (`MemberSpec`), its first message as an inbox entry signed with this lead's key, and
the lead's verify key, so the teammate on the host obeys this lead and no one else. Then it waits
(woken by the store's ``@hosts`` notification, looking again every second) for the host's answer:
the pid it started, or the error. With ``spec.resume`` the host carries on with the member's
conversation from its own transcript (`swarm.team.resume.prepare_resume` runs there), so a
resume must go to the host the member ran on. `stop_on_host` asks a member's host to stop it,
and waits for the answer a while; a host that is not alive is not asked (the member's lease
covers it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocols.inbox.mailbox import new_entry
from protocols.names import LEAD_NAME, validate_name
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.team.model import Member
from swarm.backends import SpawnError
from swarm.errors import SwarmError
from swarm.team.liveness import member_host
from swarm.team.signatures import lead_signer, verify_key
from teammate.options import MemberSpec

if TYPE_CHECKING:  # psycopg only for a PostgreSQL team
    from protocols.pg.hosts import Hosts, Request
    from protocols.pg.notify import Listener

SPAWN_WAIT_S = 60.0  # how long `swarm spawn --host` waits for the host's answer
PROGRESS_S = 5.0  # how often it says it is still waiting
LOOK_S = 1.0  # the longest wait between two looks at the request (the safety net)


def team_hosts(paths: TeamPaths, what: str = "--host") -> Hosts:
    """The team's hosts; `SwarmError` for a team in files, which has none."""
    hosts = open_store(paths).hosts()
    if hosts is None:
        raise SwarmError(
            f"{what} needs a team on PostgreSQL (swarm team create {paths.team} --store URL); "
            f"team {paths.team!r} is in files on this machine"
        )
    return hosts


def require_live(hosts: Hosts, host: str) -> None:
    """`SwarmError` naming the live hosts unless `host` is one."""
    alive = hosts.alive()
    if alive.get(host):
        return
    live = ", ".join(sorted(h for h, up in alive.items() if up)) or "none"
    state = (
        "is not alive (it stopped, or its lease ran out)"
        if host in alive
        else "has never served this team"
    )
    raise SwarmError(
        f"host {host!r} {state}; live hosts: {live} "
        f"(start one there: swarm host serve --team {hosts.team} --name {host})"
    )


def spawn_on_host(
    paths: TeamPaths,
    host: str,
    name: str,
    prompt: str,
    spec: MemberSpec,
    wait_s: float = SPAWN_WAIT_S,
    progress: Callable[[str], None] | None = None,
) -> Request:
    """Have `host` spawn teammate `name` (module doc); returns the answered request, whose
    ``outcome`` says where it runs. `SpawnError` with the host's error when it failed; at
    `wait_s` without an answer the request is withdrawn and `SwarmError` says so."""
    validate_name(name, "agent name")
    hosts = team_hosts(paths)
    require_live(hosts, host)
    existing = open_store(paths).team_file().load().member(name)
    if existing is not None and not spec.resume:
        raise SwarmError(f"team {paths.team!r} already has a member named {name!r}")
    if existing is not None:  # resuming: the host reaps a dead entry, refuses a live one
        ran_on = member_host(existing)
        if ran_on != host:
            where = f"host {ran_on!r}" if ran_on else "the machine that spawned it"
            raise SwarmError(
                f"{name!r} ran on {where}, not on host {host!r}: its conversation is there "
                f"(resume it there{f': --host {ran_on}' if ran_on else ''})"
            )
    key = verify_key(paths)  # None: signatures off here, so the teammate checks none
    signer = lead_signer(paths)
    entry = new_entry(prompt, LEAD_NAME).to_json_dict()
    body = {
        "spec": spec.to_value(),
        "prompt": signer.signed(entry) if signer is not None else entry,
        "leadVerifyKey": key,
    }
    from protocols.pg.hosts import ANSWERS
    from protocols.pg.notify import Listener

    with Listener(hosts.db, hosts.team) as listener:  # listening before the request is filed
        request_id = hosts.file(host, "spawn", name, body)
        found = _await_answer(hosts, request_id, host, listener, wait_s, progress, ANSWERS)
    if found is None:
        hosts.answer(request_id, False, {"error": f"withdrawn: no answer within {wait_s:g} s"})
        raise SwarmError(
            f"host {host!r} did not answer the spawn of {name!r} within {wait_s:g} s; the "
            "request was withdrawn (is its agent stuck? swarm host list shows its lease)"
        )
    if found.state == "failed":
        error = (found.outcome or {}).get("error", "no reason given")
        raise SpawnError(f"host {host!r} could not spawn {name!r}: {error}")
    return found


def _await_answer(
    hosts: Hosts,
    request_id: int,
    host: str,
    listener: Listener,
    wait_s: float,
    progress: Callable[[str], None] | None,
    answers: str,
) -> Request | None:
    """The request once answered; None at `wait_s`. `SwarmError` if the host died meanwhile."""
    start = time.monotonic()
    said = start
    while True:
        found = hosts.get(request_id)
        if found is not None and found.state != "pending":
            return found
        now = time.monotonic()
        if now - start >= wait_s:
            return None
        if not hosts.alive().get(host):
            hosts.answer(request_id, False, {"error": "withdrawn: the host died"})
            raise SwarmError(f"host {host!r} died before it answered request #{request_id}")
        if progress is not None and now - said >= PROGRESS_S:
            said = now
            progress(f"waiting for host {host} ({now - start:.0f} s of {wait_s:g} s)")
        listener.heard({answers}, min(LOOK_S, wait_s - (now - start)))


def stop_on_host(
    paths: TeamPaths, member: Member, timeout: float = 5.0, grace_s: float = 0.0
) -> Request | None:
    """Ask the host of `member` to stop it: after `grace_s` for it to exit by itself (it approved
    a shutdown), SIGTERM, then SIGKILL after `timeout`. Waits for the answer that long and a few
    seconds more; None if the host is not alive or did not answer in time (its lease covers a
    member left running by a dead host)."""
    host = member_host(member)
    if host is None:
        raise SwarmError(f"{member.name} was not started by a host")
    hosts = team_hosts(paths)
    if not hosts.alive().get(host):
        return None
    from protocols.pg.hosts import ANSWERS
    from protocols.pg.notify import Listener

    with Listener(hosts.db, hosts.team) as listener:
        body = {"timeout": timeout, "grace": grace_s}
        request_id = hosts.file(host, "stop", member.name, body)
        wait_s = grace_s + timeout + 5.0
        return _await_answer(hosts, request_id, host, listener, wait_s, None, ANSWERS)
