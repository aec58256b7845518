"""The shapes (`protocols.records.plain`) of the team file: `TEAM_CONFIG` and `MEMBER` mirror
`protocols.team.model.TeamConfig` and `Member` field for field (`tests/unit/test_plain.py` holds
them together).
"""

from __future__ import annotations

from protocols.records.plain import INT, LIST, OPT_BOOL, OPT_STR, STR, Field, Shape

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
