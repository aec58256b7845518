"""`swarm logs` on a PostgreSQL team: the lines each member's process shipped to the store.

A member of a PostgreSQL team may run on another host, whose files (its transcript, its output
log) are not here. Its teammate process ships what `swarm logs` shows to the store
(`protocols.pg.member_log`: the records of its transcript that `ActivityLog` reads, the lines
it prints, its warnings; the newest 2,000 per member), so these sources read them from there,
the same on every host: `StoreActivityLog` (merged by time with its messages, from the store's
history), `StoreProcessLog` (``--process``: what the process printed) and `StoreRawLog`
(``--raw``: the shipped records as JSON lines). `follow_store` wakes on the team's channel.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from protocols.clock import ms_from_iso
from protocols.names import did_you_mean
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.views.log_lines import LogEvent
from swarm.views.logs import ActivityLog, show_on_wakes

PROCESS_KINDS = frozenset({"output", "log"})  # protocols.pg.member_log.PROCESS_KINDS
RESCAN_S = 5.0  # the safety net under the team's notifications


class StoreLines:
    """`name`'s shipped records not yet read (module doc)."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.store = open_store(paths)  # a team on PostgreSQL: the lines shipped there
        self.name = name
        self.after = 0
        self.first = self.new()
        config = self.store.team_file().load()
        if config.member(name) is None and not self.first:
            names = config.member_names()
            raise SwarmError(
                f"no member {name!r} and no log of one in team {paths.team!r}"
                f"{did_you_mean(name, names)}; members: {', '.join(names)}"
            )

    def new(self) -> list[dict[str, Any]]:
        rows = self.store.member_log(self.name, self.after)
        if rows:
            self.after = rows[-1][0]
        return [record for _, record in rows]

    def take(self) -> list[dict[str, Any]]:
        """The records read at the start (once), then those written since."""
        first, self.first = self.first, []
        return first + self.new()


class StoreActivityLog(ActivityLog):
    """`ActivityLog` of the shipped records and the store's messages."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.lines = StoreLines(paths, name)
        self.mailbox = self.lines.store.mailbox()
        self.tool_names: dict[str, str] = {}
        self.seen: set[str] = set()
        self.inbox_signature = None
        self.process = None
        self.note = None
        if not self.lines.first:
            self.note = f"{name} has shipped no log lines to the store yet: showing its messages"

    def _owners(self) -> set[str] | None:
        return set(self.lines.store.team_file().load().member_names())

    def poll(self) -> list[LogEvent]:
        events = []
        for record in self.lines.take():
            if record.get("kind") in PROCESS_KINDS:
                text = f"{'log':<8}  {record.get('text', '')}"
                events.append(LogEvent(str(record.get("ts", "")), "log", text))
            else:
                events += self._from_record(record)
        events += self._messages()
        events.sort(key=lambda e: ms_from_iso(e.ts) or math.inf)  # stable: ties keep order
        return events


class StoreProcessLog:
    """What the member's process printed (its output lines and warnings)."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.lines = StoreLines(paths, name)

    def poll(self) -> list[LogEvent]:
        return [
            LogEvent(str(r.get("ts", "")), "log", str(r.get("text", "")))
            for r in self.lines.take()
            if r.get("kind") in PROCESS_KINDS
        ]


class StoreRawLog:
    """The shipped transcript records as JSON lines."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.lines = StoreLines(paths, name)

    def poll(self) -> list[LogEvent]:
        return [
            LogEvent("", "raw", json.dumps(r, ensure_ascii=False))
            for r in self.lines.take()
            if r.get("kind") not in PROCESS_KINDS
        ]


def follow_store(
    paths: TeamPaths, poll: Callable[[], list[LogEvent]], show: Callable[[LogEvent], None]
) -> None:
    """Show what `poll` finds at each notification of the team (a log line shipped, a message)
    and every `RESCAN_S` seconds, until interrupted (Ctrl-C ends it quietly)."""
    show_on_wakes(open_store(paths).team_watcher(RESCAN_S), poll, show)
