"""A teammate's member entry: waiting for it at start, and joining the team through it.

A team file that cannot be read right now (broken, or being rewritten) is waited out with
back-off and reported once; not being a member, or no team, is final (`NotAMember`,
`TeamNotFound`). Joining records who this process is in its entry (pid, start time and the
token every process it starts carries, so they can be stopped with it) and marks it active.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocols.errors import Error, ProtocolsError, TeamNotFound
from protocols.pids import TOKEN_VARIABLE, ProcessIdentity, new_token
from protocols.team.model import Member
from protocols.values import MemberState
from teammate.outbox import ENVIRONMENT_ERRORS
from teammate.reporter import StatusReporter
from teammate.trouble import Trouble, describe

if TYPE_CHECKING:
    from protocols.store.contract import TeamFileContract


class NotAMember(Error):
    """The teammate cannot run: it is not a member of its team (the message says how to fix it)."""


def await_membership(
    team: TeamFileContract,
    name: str,
    trouble: Trouble,
    say: Callable[[str], None],
    reporter: StatusReporter,
) -> Member:
    """`name`'s member entry, once the team file can be read (module doc)."""
    while True:
        try:
            return require_member(team, name)
        except (NotAMember, TeamNotFound):
            raise
        except (ProtocolsError, OSError) as exc:
            delay, new = trouble.failed(exc)
            say(f"cannot read the team file yet: {describe(exc)}; again in {delay:g} s")
            if new:
                with contextlib.suppress(Exception):
                    reporter.set(MemberState.STARTING, f"waiting for a readable team file: {exc}")
            time.sleep(delay)


def require_member(team: TeamFileContract, name: str) -> Member:
    member = team.load().member(name)
    if member is None:
        raise NotAMember(
            f"{name!r} is not a member of team {team.name!r}; "
            "add it to the team (swarm spawn does) before starting the process"
        )
    return member


def join(
    team: TeamFileContract, member: Member, trouble: Trouble, say: Callable[[str], None]
) -> str:
    """Record this process in `member`'s entry and mark it active; returns the process token
    (also set in this process's environment, so the commands it starts carry it)."""
    recorded = (member.model_extra or {}).get("processToken")
    given = os.environ.get(TOKEN_VARIABLE, "")
    # the spawner's token is ours; one inherited from some other process is not
    token = given if given and given == recorded else new_token()
    os.environ[TOKEN_VARIABLE] = token
    me = ProcessIdentity.mine(token)
    while True:  # a busy or half-written team file is waited out, not died of
        try:
            team.update_member(member.name, **me.to_value(), isActive=True)
            break
        except ENVIRONMENT_ERRORS as exc:
            delay, _ = trouble.failed(exc)
            say(f"cannot join yet: {describe(exc)}; again in {delay:g} s")
            time.sleep(delay)
    trouble.cleared()
    return token
