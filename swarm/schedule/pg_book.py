"""`PgScheduleBook`: the schedules of the teams of one PostgreSQL store, one row each
(`protocols.pg.schedules`), with `swarm.schedule.book.ScheduleBook`'s methods. Every scheduler
that fires a team on that store (`swarm host serve` on each of its machines, a `swarm lead` of
it, `swarm scheduler --store`) sees them; the row's lock makes each firing once among them."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from protocols.clock import now_iso
from protocols.pg.schedules import PgSchedules
from protocols.pg.store import database
from protocols.store.selection import redacted
from swarm.schedule.model import HISTORY, Schedule, find_in, new_id


class PgScheduleBook:
    """The schedules kept in the store at `url`."""

    store: str | None

    def __init__(self, url: str) -> None:
        self.url = self.store = url
        self.where = redacted(url)

    @property
    def rows(self) -> PgSchedules:
        return PgSchedules(database(self.url))  # this thread's connection

    def add(self, schedule: Schedule) -> Schedule:
        schedule.cron_of()  # a bad expression or zone is refused before anything is written
        added = schedule.model_copy(
            update={"id": new_id(), "created": schedule.created or now_iso()}
        )
        self.rows.insert(added.id, added.team, added.model_dump(mode="json"))
        return added

    def all(self) -> list[Schedule]:
        found = []
        for body in self.rows.all():
            try:
                found.append(Schedule.model_validate(body))
            except ValidationError:  # a row written by a newer swarm, or by hand: left out
                continue
        return found

    def read(self, schedule_id: str) -> Schedule | None:
        return next((s for s in self.all() if s.id == schedule_id), None)

    def find(self, given: str) -> Schedule:
        return find_in(self.all(), given)

    def remove(self, given: str) -> Schedule:
        found = self.find(given)
        self.rows.delete(found.id)
        return found

    def update(
        self, schedule_id: str, change: Callable[[Schedule], Schedule | None], timeout: float
    ) -> Schedule | None:
        """`ScheduleBook.update`, under the schedule's row lock."""
        changed: list[Schedule] = []

        def on_row(body: dict) -> dict | None:
            done = change(Schedule.model_validate(body))
            if done is None:
                return None
            done.history = done.history[-HISTORY:]
            changed.append(done)
            return done.model_dump(mode="json")

        self.rows.locked(schedule_id, on_row, timeout)
        return changed[0] if changed else None
