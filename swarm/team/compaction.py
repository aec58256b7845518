"""Asking a teammate to compact its conversation: what ``swarm compact`` and the ``/compact``
line of `swarm lead`'s console (for a teammate) do.

The lead sends a ``compact_request`` (`protocols.messages.models.CompactRequest`, swarm's own;
signed when the lead signs) to the teammate's inbox. An idle teammate compacts at once, in a turn of
its own; a working one before its next model request. Its status file counts compactions and says
how full its conversation is, so `wait_compacted` waits (woken by inotify, or PostgreSQL's
notifications) until the count has grown, the member has died, or the time is up.
"""

from __future__ import annotations

from typing import NamedTuple

from protocols.clock import now_iso
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.values import ModelKind
from swarm.errors import SwarmError
from swarm.team.liveness import liveness
from swarm.team.signatures import lead_mailbox
from swarm.team.waiting import FAILED, MET, Outcome, Watched, wait_until


class Context(NamedTuple):
    """How full a member's conversation is (tokens of its window) and how often compacted."""

    tokens: int | None
    window: int | None
    compactions: int

    def text(self) -> str:
        if not self.window or self.tokens is None:
            return "no conversation yet"
        share = 100 * self.tokens / self.window
        return f"{self.tokens:,} of {self.window:,} tokens ({share:.0f}%)"


def context_of(paths: TeamPaths, name: str) -> Context:
    status = open_store(paths).read_status(name)
    if status is None:
        return Context(None, None, 0)
    return Context(status.contextTokens, status.contextWindow, status.compactions)


def ask_compaction(paths: TeamPaths, name: str, instructions: str = "") -> Context:
    """Send teammate `name` a compaction request; its context as it was before. Refuses the
    lead, an unknown name (with a likely one) and a shell worker (it keeps no conversation)."""
    if name == LEAD_NAME:
        raise SwarmError(
            f"{name!r} is the lead: compact the lead agent with /compact in `swarm lead`"
        )
    member = open_store(paths).team_file().load().require(name)
    status = open_store(paths).read_status(name)
    model = member.model or (status.model if status is not None else "")
    if ModelKind.of(model) == ModelKind.SHELL:
        raise SwarmError(f"{name} is a shell worker: it keeps no conversation to compact")
    from protocols.messages.models import CompactRequest

    before = context_of(paths, name)
    request = CompactRequest(
        from_=LEAD_NAME, timestamp=now_iso(), instructions=instructions.strip() or None
    )
    lead_mailbox(paths).send(name, request, sender=LEAD_NAME)
    return before


def wait_compacted(paths: TeamPaths, name: str, before: Context, timeout: float) -> Outcome:
    """Wait until `name` has compacted once more than `before` says (or has died)."""

    team = open_store(paths).team_file()

    def check() -> Outcome | None:
        now = context_of(paths, name)
        if now.compactions > before.compactions:
            return Outcome(MET, f"{name} compacted its conversation: now {now.text()}")
        member = team.load().member(name)
        if member is None or liveness(paths).state(member).gone:
            return Outcome(FAILED, f"{name} is not running: nothing was compacted")
        return None

    return wait_until(check, paths, Watched(members=True), timeout)
