"""What the board's index knows of one task file, read without building its model.

Every process's index reads again every task file that any process changed (`protocols.
task_index`), so with 16 workers each claim's two writes are read 30 times. `TaskFacts` is what
choosing a claim needs of a task (status, owner, blockers, failed, internal), taken straight from
the decoded JSON by `facts_of` when the file is plainly valid: each check the `Task` model
makes, done by hand, in about a tenth of the time the model takes to build. A file that is not
plainly valid (an odd type anywhere) gets None and the caller asks the model, so no file is
taken for valid here that the model would refuse (`tests/unit/test_task_facts.py` checks that
against the model on generated files). The model is built from the same JSON only when
something asks for it (`TaskFacts.task`: a listing, a claim's result), once per version of the
file.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from protocols.tasks.task import FAILED, STATUSES
from protocols.values import TaskStatus

if TYPE_CHECKING:
    from protocols.tasks.model import Task

_ID = re.compile(r"[0-9]{1,18}")  # `protocols.tasks.task.ID_PATTERN`, ASCII digits only
_STATUSES = frozenset(STATUSES)
_PENDING = TaskStatus.PENDING.value
_COMPLETED = TaskStatus.COMPLETED.value
_NO_IDS: list[str] = []


class TaskFacts:
    """One valid task file, as far as choosing a claim needs it (read-only)."""

    __slots__ = (
        "_raw",
        "_task",
        "blockedBy",
        "failed",
        "id",
        "internal",
        "metadata",
        "owner",
        "status",
    )

    def __init__(
        self,
        task_id: str,
        status: str,
        owner: str | None,
        blocked_by: list[str],
        metadata: dict[str, Any] | None,
        raw: dict[str, Any] | None,
        task: Task | None = None,
    ) -> None:
        self.id = task_id
        self.status = status
        self.owner = owner
        self.blockedBy = blocked_by
        # `Task.failed` and `Task.internal`
        self.failed = bool(status != _COMPLETED and metadata and metadata.get(FAILED))
        self.internal = bool(metadata and metadata.get("_internal"))
        self.metadata = metadata  # read only: who may take it (`protocols.tasks.task.may_take`)
        self._raw = raw
        self._task = task

    @classmethod
    def of_task(cls, task: Task) -> TaskFacts:
        """The facts of a model already built."""
        return cls(task.id, str(task.status), task.owner, task.blockedBy, task.metadata, None, task)

    @property
    def unfinished(self) -> bool:
        return self.status != _COMPLETED

    @property
    def busy(self) -> bool:
        """Whether it keeps its owner busy: unfinished and not failed."""
        return self.status != _COMPLETED and not self.failed

    @property
    def open(self) -> bool:
        """Pending, unowned, not failed, not internal: what `claim_next` may take."""
        return self.status == _PENDING and not self.owner and not self.failed and not self.internal

    @property
    def raw(self) -> dict[str, Any] | None:
        """The file's JSON object as read (do not change it); None once the model was built,
        or when the file was read through the model."""
        return self._raw

    def task(self) -> Task:
        """The model, built from the file's JSON the first time it is asked for."""
        if self._task is None:
            from protocols.tasks.model import Task

            assert self._raw is not None
            self._task = Task.from_json_dict(self._raw)
            self._raw = None
        return self._task


def facts_of(raw: object, task_id: str) -> TaskFacts | None:
    """The facts of `raw`, the decoded JSON of the file ``<task_id>.json``, when it is plainly a
    valid task whose id is its name; None when it is not plainly one (the model decides)."""
    if type(raw) is not dict:
        return None
    get = raw.get
    if get("id") != task_id or not _ID.fullmatch(task_id):
        return None
    if type(get("subject")) is not str or type(get("description")) is not str:
        return None
    owner = get("owner")
    active_form = get("activeForm")
    if (owner is not None and type(owner) is not str) or (
        active_form is not None and type(active_form) is not str
    ):
        return None
    status = get("status", _PENDING)
    if type(status) is not str or status not in _STATUSES:
        return None
    blocked_by = get("blockedBy", _NO_IDS)
    if not _ids(blocked_by) or not _ids(get("blocks", _NO_IDS)):
        return None
    metadata = get("metadata")
    if metadata is not None and type(metadata) is not dict:
        return None
    return TaskFacts(task_id, status, owner, blocked_by, metadata, raw)


def _ids(value: object) -> bool:
    """Whether `value` is a list of task ids (decimal strings)."""
    if type(value) is not list:
        return False
    match = _ID.fullmatch
    return all(type(item) is str and match(item) for item in value)
