"""The shapes (`protocols.records.plain`) of the records ``swarm status`` reads: a task file, the
team file and its members, a member's status file, an inbox entry. Each mirrors its model
(`protocols.tasks.model.Task`, `protocols.team.model.TeamConfig` and `Member`,
`protocols.member.status.AgentStatus` and the records in it, `protocols.inbox.entry.InboxEntry`),
field for field; `tests/unit/test_plain.py` holds them together.

`PlainEntry` is an inbox entry read by its shape: what a view asks of an `InboxEntry` (its fields,
`identity`, `is_read`, `structured`, `to_json_dict`), without pydantic.
"""

from __future__ import annotations

from typing import Any

from protocols.clock import now_iso
from protocols.inbox.file import identity_of
from protocols.member.status_keys import zero_usage
from protocols.records.plain import (
    BOOL,
    DICT,
    FLOAT,
    INT,
    LIST,
    STR,
    Field,
    Plain,
    Shape,
    dict_of,
    list_of,
    matching,
    one_of,
    optional,
)
from protocols.values import MemberState, TaskStatus

OPT_STR = optional(STR)
OPT_INT = optional(INT)
OPT_BOOL = optional(BOOL)
TASK_ID = matching(r"[0-9]{1,18}")  # `protocols.tasks.task.ID_PATTERN`, whole
USAGE = dict_of(INT)

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

MEMBER = Shape(
    "Member",
    agentId=Field(STR),
    name=Field(STR),
    agentType=Field(OPT_STR, None),
    model=Field(OPT_STR, None),
    prompt=Field(OPT_STR, None),
    color=Field(OPT_STR, None),
    planModeRequired=Field(OPT_BOOL, None),
    joinedAt=Field(INT),
    tmuxPaneId=Field(STR, ""),
    cwd=Field(STR, ""),
    subscriptions=Field(LIST, []),
    backendType=Field(OPT_STR, None),
    isActive=Field(OPT_BOOL, None),
    mode=Field(OPT_STR, None),
    worktreePath=Field(OPT_STR, None),
    sessionId=Field(OPT_STR, None),
)

TEAM_CONFIG = Shape(
    "TeamConfig",
    name=Field(STR),
    description=Field(OPT_STR, None),
    createdAt=Field(INT),
    leadAgentId=Field(STR),
    leadSessionId=Field(OPT_STR, None),
    # records of their own: `TeamConfig.from_json_dict` reads each with its key order
    members=Field(shape=MEMBER, many=True, factory=list, record=True),
)

SUBAGENT_STATUS = Shape(
    "SubAgentStatus",
    agentId=Field(STR),
    agentType=Field(STR),
    name=Field(OPT_STR, None),
    description=Field(STR, ""),
    state=Field(STR, "running"),
    activity=Field(STR, ""),
    model=Field(OPT_STR, None),
    usage=Field(USAGE, factory=zero_usage),
    toolUses=Field(INT, 0),
    requests=Field(INT, 0),
    turns=Field(INT, 0),
    color=Field(OPT_STR, None),
    costUsd=Field(optional(FLOAT), None),
    startedAt=Field(STR, factory=now_iso),
    endedAt=Field(OPT_STR, None),
)

MCP_SERVER_STATUS = Shape(
    "McpServerStatus",
    name=Field(STR),
    state=Field(STR, "pending"),
    error=Field(OPT_STR, None),
    tools=Field(INT, 0),
    transport=Field(STR, "stdio"),
)

SHELL_STATUS = Shape(
    "ShellStatus",
    id=Field(STR),
    kind=Field(STR, "bash"),
    command=Field(STR, ""),
    description=Field(STR, ""),
    owner=Field(STR, ""),
    state=Field(STR, "running"),
    exitCode=Field(OPT_INT, None),
    startedAt=Field(STR, ""),
    endedAt=Field(OPT_STR, None),
    outputFile=Field(STR, ""),
)

BUDGET_STATUS = Shape(
    "BudgetStatus",
    maxCostUsd=Field(optional(FLOAT), None),
    maxTokens=Field(OPT_INT, None),
    maxSeconds=Field(optional(FLOAT), None),
    costUsd=Field(FLOAT, 0.0),
    tokens=Field(INT, 0),
    seconds=Field(FLOAT, 0.0),
    over=Field(BOOL, False),
    reason=Field(OPT_STR, None),
)

AGENT_STATUS = Shape(
    "AgentStatus",
    name=Field(STR),
    model=Field(STR),
    state=Field(one_of(*MemberState), str(MemberState.STARTING)),
    activity=Field(STR, ""),
    currentTask=Field(OPT_STR, None),
    requests=Field(INT, 0),
    turns=Field(INT, 0),
    toolCalls=Field(INT, 0),
    usage=Field(USAGE, factory=zero_usage),
    pid=Field(OPT_INT, None),
    updatedAt=Field(STR, factory=now_iso),
    subagents=Field(shape=SUBAGENT_STATUS, many=True, factory=list),
    mcpServers=Field(shape=MCP_SERVER_STATUS, many=True, factory=list),
    budget=Field(shape=BUDGET_STATUS, default=None),
    costUsd=Field(optional(FLOAT), None),
    contextTokens=Field(OPT_INT, None),
    contextWindow=Field(OPT_INT, None),
    compactions=Field(INT, 0),
    shells=Field(shape=SHELL_STATUS, many=True, factory=list),
)

INBOX_ENTRY = Shape(
    "InboxEntry",
    from_=Field(STR, key="from"),
    text=Field(STR),
    summary=Field(OPT_STR, None),
    timestamp=Field(STR),
    color=Field(OPT_STR, None),
    read=Field(OPT_BOOL, None),
    id=Field(OPT_STR, None),
    msgV=Field(OPT_INT, None),
    msg_id=Field(OPT_STR, None),
    type=Field(OPT_STR, None),
)


class PlainEntry(Plain):
    """An inbox entry read by `INBOX_ENTRY`: what a view asks of an `InboxEntry`."""

    __slots__ = ()

    @classmethod
    def read(cls, item: Any) -> PlainEntry | None:
        """`item` as a `PlainEntry`, or None when the model is to judge it."""
        return cls(INBOX_ENTRY, item) if INBOX_ENTRY.accepts(item) else None

    @property
    def identity(self) -> str:
        return identity_of(self.raw)

    @property
    def is_read(self) -> bool:
        return self.raw.get("read") is True

    def marked_read(self) -> PlainEntry:
        """The entry with ``read: true`` (as `protocols.inbox.file._marked_read` marks a model)."""
        return self if self.is_read else PlainEntry(INBOX_ENTRY, {**self.raw, "read": True})

    def structured(self) -> Any:
        """`InboxEntry.structured`: the structured message in ``text`` (a `Plain` when it is
        plainly one), None for a plain message; `MessageValidationError` for a known type with
        bad fields."""
        from protocols.messages.shapes import decode_plain

        return decode_plain(self.raw["text"])
