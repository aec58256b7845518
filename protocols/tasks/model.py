"""The model of one task file ``tasks/<team>/<N>.json``: `Task` (see `protocols.tasks.task` for the
key order and the rules it keeps).

Apart from `protocols.tasks.task` so that creating a task
(`protocols.tasks.board.TaskBoard.create_file`) needs no model: pydantic loads when a task is read.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints

from protocols.records.base import Record
from protocols.tasks.task import FAILED, ID_PATTERN, failure_of, is_internal
from protocols.values import TaskStatus

TaskId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]


class Task(Record):
    """One task file. Frozen: change a task with `updated` (or `TaskBoard.update`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: TaskId
    subject: str
    description: str
    activeForm: str | None = None
    status: TaskStatus = TaskStatus.PENDING
    blocks: list[TaskId] = Field(default_factory=list)
    blockedBy: list[TaskId] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    owner: str | None = None  # added after creation, so it goes at the end

    @property
    def internal(self) -> bool:
        return is_internal(self.metadata)

    @property
    def unfinished(self) -> bool:
        return self.status != TaskStatus.COMPLETED

    @property
    def failed(self) -> bool:
        """Its worker failed it (or was denied); it waits for a retry. (Whether `failure` is
        not empty, without building its text: a redraw asks this of every task.)"""
        return self.status != TaskStatus.COMPLETED and bool((self.metadata or {}).get(FAILED))

    @property
    def failure(self) -> str:
        """Why it failed (empty when it did not)."""
        return failure_of(self.status, self.metadata)

    @property
    def busy(self) -> bool:
        """Whether it keeps its owner busy: unfinished and not failed."""
        return self.unfinished and not self.failed
