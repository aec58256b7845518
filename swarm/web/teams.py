"""Which teams one `swarm web` server shows, and the live feed of each.

A server started with ``--team T`` serves that team only (its files, or its PostgreSQL store);
one started without serves every team under the config root, listed for the page's team picker
(`swarm.views.teams.list_teams`, as ``swarm team list``). A route names its team as
``?team=NAME``; a name is checked with the rule swarm creates names by
(`protocols.names.validate_name`) before it touches the disk, then the team must exist (its
files here, or the store its pointer names: not ``$SWARM_STORE``, as the listing). Each
team's `swarm.web.feed.Feed` (one thread, one watcher) starts the first time a page asks for
that team and runs until the server stops.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from protocols.errors import Error, ProtocolsError, TeamNotFound
from protocols.names import validate_name
from protocols.paths import TeamPaths
from protocols.store.selection import locate, open_store
from swarm.views.teams import list_teams
from swarm.web.feed import Feed

ALL_TEAMS = "_teams"  # the token file's name of a server of every team (no team is called so)


class NoSuchTeam(Error, LookupError):
    """The team a route named is not one this server shows."""


class Teams:
    """The team of a ``--team`` server (`fixed`), or every team under `root`."""

    def __init__(self, root: Path, fixed: TeamPaths | None = None) -> None:
        self.root = root
        self.fixed = fixed
        self._feeds: dict[str, Feed] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        """The name the server's token file goes by: its team's, or `ALL_TEAMS`."""
        return self.fixed.team if self.fixed is not None else ALL_TEAMS

    def paths(self, given: str | None) -> TeamPaths:
        """The team a route named (`given`; None: the ``--team`` team). `ValueError` for a
        name swarm would not give a team, `NoSuchTeam` for one this server does not show."""
        if self.fixed is not None and given in (None, "", self.fixed.team):
            return self.fixed
        if not given:
            raise ValueError("give the team as ?team=NAME (GET /api/teams lists them)")
        validate_name(given, "team")  # InvalidName is a ValueError
        if self.fixed is not None:
            raise NoSuchTeam(f"this server shows team {self.fixed.team!r} only, not {given!r}")
        paths = locate(given, self.root, env={})  # files, or the store its pointer names
        if not open_store(paths).team_exists():
            raise NoSuchTeam(f"no team {given!r} under {self.root}")
        return paths

    def listing(self) -> list[dict[str, Any]]:
        """The teams this server shows, for the picker: name, description, members, kind."""
        if self.fixed is not None:
            return [{"name": self.fixed.team, "description": None, "members": None}]
        shown = []
        for row in list_teams(self.root, lambda _name, _why: None):
            try:
                validate_name(row.name, "team")
            except ProtocolsError:
                continue  # a name swarm never makes (Claude Code's own teams may): not served
            shown.append(
                {
                    "name": row.name,
                    "description": row.description,
                    "members": row.members,
                    "kind": row.kind,
                }
            )
        return shown

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """In the event loop, as the server starts: the ``--team`` team's feed starts now."""
        self._loop = loop
        if self.fixed is not None:
            self.feed(self.fixed)

    def feed(self, paths: TeamPaths) -> Feed:
        """Team `paths`'s feed, started the first time it is asked for."""
        with self._lock:
            feed = self._feeds.get(paths.team)
            if feed is None:
                if self._loop is None:
                    raise TeamNotFound("the server is not running yet")
                feed = Feed(paths)
                feed.start(self._loop)
                self._feeds[paths.team] = feed
            return feed

    def poke(self, paths: TeamPaths) -> None:
        """Have team `paths`'s feed look again now (a change was just written)."""
        feed = self._feeds.get(paths.team)
        if feed is not None:
            feed.poke()

    def stop(self) -> None:
        with self._lock:
            feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            feed.stop()
