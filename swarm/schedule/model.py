"""A schedule as its file (or row) holds it (`Schedule`, its `Firing`s), its id, and `Book`: where
schedules are kept, files under a config root (`swarm.schedule.book`) or a PostgreSQL store
(`swarm.schedule.pg_book`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from swarm.errors import SwarmError
from swarm.schedule.cron import Cron

HISTORY = 20  # firings kept in a schedule's file
Action = Literal["task", "send", "up"]
Missed = Literal["skip", "once"]
Outcome = Literal["fired", "skipped", "failed"]
MISSED: tuple[Missed, ...] = ("skip", "once")


class ScheduleNotFound(SwarmError):
    """No schedule has that id (or the prefix given is not unique)."""


class Firing(BaseModel):
    """One firing: the instant it was due (UTC, ISO), when and by whom it was done, and how it
    went (``fired``, ``skipped``: missed while no scheduler ran, or ``failed``)."""

    model_config = ConfigDict(extra="ignore")

    due: str
    at: str
    by: str
    outcome: Outcome
    detail: str = ""


class Schedule(BaseModel):
    """One schedule file (module doc)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    cron: str
    zone: str
    team: str
    action: Action
    subject: str = ""  # task
    description: str = ""  # task
    command: str | None = None  # task: what a shell worker runs
    takers: list[str] = []  # task: who may take it (`swarm task add --for`)
    cwd: str = ""  # task: where its command runs (where `swarm schedule add` was typed)
    to: str = ""  # send: a member, or "*"
    text: str = ""  # send
    file: str = ""  # up: the team file, absolute
    missed: Missed = "skip"
    created: str = ""
    settled: str = ""  # firings due at or before this instant are done with
    history: list[Firing] = []

    def cron_of(self) -> Cron:
        return Cron(self.cron, self.zone)

    def what(self) -> str:
        """What it does, in a few words: ``task "nightly tests"``, ``send alice "..."``."""
        if self.action == "task":
            return f"task {json.dumps(self.subject, ensure_ascii=False)}"
        if self.action == "send":
            return f"send {self.to} {json.dumps(self.text, ensure_ascii=False)}"
        return f"up {self.file}"


def new_id() -> str:
    return "s" + secrets.token_hex(4)


def find_in(schedules: list[Schedule], given: str) -> Schedule:
    """The one of `schedules` whose id is `given` or starts with it; `ScheduleNotFound`
    otherwise."""
    exact = [s for s in schedules if s.id == given]
    matches = exact or [s for s in schedules if given and s.id.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(s.id for s in schedules) or "none"
    why = "matches several" if matches else "matches no schedule"
    raise ScheduleNotFound(f"{given!r} {why}; the schedules are: {known} (swarm schedule list)")


class Book(Protocol):
    """Where schedules are kept: files under a config root (`ScheduleBook`), or a PostgreSQL
    store (`swarm.schedule.pg_book.PgScheduleBook`)."""

    where: str
    store: str | None  # the store its teams are on (None: found under the config root)

    def add(self, schedule: Schedule) -> Schedule: ...
    def all(self) -> list[Schedule]: ...
    def find(self, given: str) -> Schedule: ...
    def remove(self, given: str) -> Schedule: ...
    def update(
        self, schedule_id: str, change: Callable[[Schedule], Schedule | None], timeout: float
    ) -> Schedule | None: ...
