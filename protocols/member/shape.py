"""The shapes (`protocols.records.plain`) of a member's status file: `AGENT_STATUS` and the records
in it mirror `protocols.member.status.AgentStatus` field for field (`tests/unit/test_plain.py` holds
them together), so a look at 200 members builds no model.
"""

from __future__ import annotations

from protocols.clock import now_iso
from protocols.member.status_keys import zero_usage
from protocols.records.plain import (
    BOOL,
    FLOAT,
    INT,
    OPT_INT,
    OPT_STR,
    STR,
    USAGE,
    Field,
    Shape,
    one_of,
    optional,
)
from protocols.values import MemberState

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
