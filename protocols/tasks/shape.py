"""The shape (`protocols.records.plain`) of a task file: `TASK` mirrors `protocols.tasks.model.Task`
field for field (`tests/unit/test_plain.py` holds them together), so `swarm status` reads a board
without pydantic.
"""

from __future__ import annotations

from protocols.records.plain import (
    DICT,
    OPT_STR,
    STR,
    Field,
    Shape,
    list_of,
    matching,
    one_of,
    optional,
)
from protocols.values import TaskStatus

TASK_ID = matching(r"[0-9]{1,18}")  # `protocols.tasks.task.ID_PATTERN`, whole

TASK = Shape(
    "Task",
    id=Field(TASK_ID),
    subject=Field(STR),
    description=Field(STR),
    activeForm=Field(OPT_STR, None),
    status=Field(one_of(*TaskStatus), str(TaskStatus.PENDING)),
    blocks=Field(list_of(TASK_ID), []),
    blockedBy=Field(list_of(TASK_ID), []),
    metadata=Field(optional(DICT), None),
    owner=Field(OPT_STR, None),
)
