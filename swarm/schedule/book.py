"""The schedule files: one JSON file per schedule in ``<config root>/swarm/schedules/``, named by
its id (``s`` and eight hex digits), written atomically, changed only under its lock
(`protocols.fs.locks.FileGuard`, the one every team file uses), so schedulers that share the
config root fire each of its firings once (`swarm.schedule.scheduler`).

A schedule says when (``cron`` in ``zone``), for which team, what to do (``action``: ``task``,
``send`` or ``up``, with that action's fields), what to do about firings missed while no
scheduler ran (``missed``: ``skip`` or ``once``), and what happened: ``settled`` (the last
instant whose firings are done with, fired or skipped) and its last firings (``history``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from protocols.clock import now_iso
from protocols.errors import Error
from protocols.fs import safefs
from protocols.fs.jsonio import write_json
from protocols.fs.locks import FileGuard, redo_if_lock_lost
from protocols.names import validate_name
from protocols.paths import TeamPaths
from protocols.store.selection import read_pointer
from swarm.errors import SwarmError
from swarm.schedule.model import (
    HISTORY,
    Book,
    Schedule,
    find_in,
    new_id,
)


class ScheduleBook:
    """The schedules under one config root (of its teams in files, and of teams on
    PostgreSQL added where no scheduler shares the store: `swarm.schedule.pg_book`)."""

    where = "files"
    store: str | None = None  # its teams' store: none, they are found under the root

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / "swarm" / "schedules"

    def path(self, schedule_id: str) -> Path:
        validate_name(schedule_id, "schedule id")  # never a path of its own
        return self.directory / f"{schedule_id}.json"

    def add(self, schedule: Schedule) -> Schedule:
        """Write `schedule` (checked) under a new id, created now unless it says when; returns
        it as written."""
        schedule.cron_of()  # a bad expression or zone is refused before anything is written
        safefs.makedirs(self.directory)
        while True:
            fresh = new_id()
            if not self.path(fresh).exists():
                break
        added = schedule.model_copy(update={"id": fresh, "created": schedule.created or now_iso()})
        with FileGuard(self.path(fresh)):
            write_json(self.path(fresh), added.model_dump(mode="json"))
        return added

    def all(self) -> list[Schedule]:
        """Every readable schedule, oldest first (a file that does not parse is left out)."""
        return sorted(self._each(), key=lambda s: (s.created, s.id))

    def _each(self) -> Iterator[Schedule]:
        try:
            names = sorted(p.name for p in self.directory.iterdir() if p.suffix == ".json")
        except FileNotFoundError:
            return
        for name in names:
            found = self.read(name.removesuffix(".json"))
            if found is not None:
                yield found

    def read(self, schedule_id: str) -> Schedule | None:
        try:
            return Schedule.model_validate_json(safefs.read_text(self.path(schedule_id)))
        except (OSError, ValueError, ValidationError, SwarmError):  # a link is an OSError too
            return None

    def find(self, given: str) -> Schedule:
        """The schedule whose id is `given` or starts with it; `ScheduleNotFound` otherwise."""
        return find_in(self.all(), given)

    def remove(self, given: str) -> Schedule:
        """Remove the schedule `given` names (an id or a unique prefix); returns it."""
        found = self.find(given)
        target = self.path(found.id)
        with FileGuard(target):
            target.unlink(missing_ok=True)
        return found

    @redo_if_lock_lost
    def update(
        self, schedule_id: str, change: Callable[[Schedule], Schedule | None], timeout: float
    ) -> Schedule | None:
        """Apply `change` to the schedule under its lock (waiting up to `timeout` seconds for
        it: `protocols.errors.LockTimeout` after) and write what it returns (None: nothing to
        write). None if the schedule is gone."""
        target = self.path(schedule_id)
        with FileGuard(target, timeout=timeout):
            current = self.read(schedule_id)
            if current is None:
                return None
            changed = change(current)
            if changed is not None:
                changed.history = changed.history[-HISTORY:]
                write_json(target, changed.model_dump(mode="json"))
            return changed


def book_for(paths: TeamPaths) -> Book:
    """Where a schedule for the team at `paths` is kept: its store when it is on PostgreSQL
    (every scheduler of the team sees it there), else the config root's files."""
    if paths.store is not None:
        from swarm.schedule.pg_book import PgScheduleBook  # psycopg: only for such a team

        return PgScheduleBook(paths.store)
    return ScheduleBook(paths.root)


def books(root: Path, stores: Iterable[str] = ()) -> list[Book]:
    """The schedules a scheduler under `root` fires, or `swarm schedule list` shows: the config
    root's files, and the store of each team on PostgreSQL this root points at (and `stores`)."""
    urls = dict.fromkeys(stores)
    try:
        teams = sorted(p.name for p in (root / "teams").iterdir() if p.is_dir())
    except FileNotFoundError:
        teams = []
    for team in teams:
        try:
            url = read_pointer(root, team)
        except Error:  # a broken pointer: that team's own commands say so
            continue
        if url is not None:
            urls.setdefault(url)
    found: list[Book] = [ScheduleBook(root)]
    if urls:
        from swarm.schedule.pg_book import PgScheduleBook

        found += [PgScheduleBook(url) for url in urls]
    return found
