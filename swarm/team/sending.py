"""Sending a message by hand: what ``swarm send`` and the ``/send`` line of `swarm lead`'s
console do, and which recipients are dead.

Kept apart from `swarm.team.actions` so that a send loads no pydantic model: the members are read
as raw entries (`protocols.team.file.TeamFile.entries`) and the message is written as it is on disk
(`protocols.inbox.mailbox.Mailbox.post`). Agents call ``swarm send`` hundreds of times.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocols.errors import UnknownMember
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.team.liveness import liveness
from swarm.team.signatures import lead_mailbox


def send_text(
    paths: TeamPaths,
    to: str,
    text: str,
    sender: str = LEAD_NAME,
    summary: str | None = None,
    message_id: str | None = None,
) -> tuple[list[str], list[str]]:
    """Send `text` to member `to` (``*``: every member but the sender), in the sender's colour;
    the names it went to, and those a broadcast skipped (a name that cannot be an inbox).
    Nobody to send to is an error. Sent again with the same `message_id`, it is stored once."""
    member = open_store(paths).team_file().entry(sender)
    color = member.get("color") if member else None
    mailbox = lead_mailbox(paths)
    try:
        written = mailbox.post(
            to, text, sender=sender, summary=summary, color=color, message_id=message_id
        )
    except UnknownMember:
        gone_member(paths, to)  # one that was shut down: says so, and when
        raise
    if not written:
        raise SwarmError(f"nobody to send to: {sender!r} is the only member of team {paths.team!r}")
    return mailbox.broadcast_recipients(sender) if to == "*" else ([to], [])


def gone_member(paths: TeamPaths, name: str) -> None:
    """`UnknownMember` saying how `name` left the team and when, if the team's history shows
    it was a member (`swarm.team.departures`); nothing else."""
    from swarm.team.departures import departure  # a failed send only: it parses the history

    team = open_store(paths).team_file()
    if name in team.member_names():
        return
    left = departure(paths, name)
    if left is not None:
        members = ", ".join(team.member_names())
        raise UnknownMember(
            f"{name!r} is no longer a member of team {paths.team!r}: {left}; `swarm spawn "
            f"{name}` starts it again; members are: {members}"
        ) from None


def dead_members(paths: TeamPaths, names: Sequence[str]) -> list[str]:
    """Those of `names` that are members whose process is gone (`swarm.team.liveness`): dead,
    or stopped by `swarm stop`."""
    team = open_store(paths).team_file()
    entries = [team.entry(name) for name in names]
    if all(e is None for e in entries):
        return []
    judge = liveness(paths)  # by lease on PostgreSQL
    return [e["name"] for e in entries if e is not None and judge.state(e).gone]
