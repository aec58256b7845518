"""The models of ``teams/<team>/config.json`` (spec section 2): `TeamConfig` and its `Member`s.

`protocols.team.file.TeamFile` reads and writes the file; the models are apart so that what needs
only the members' names and entries (a send) reads the file without loading pydantic.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from protocols.errors import UnknownMember
from protocols.names import unknown_member_text
from protocols.records.base import Record

COLORS = ("red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan")


class Member(Record):
    agentId: str
    name: str
    agentType: str | None = None
    model: str | None = None
    prompt: str | None = None
    color: str | None = None
    planModeRequired: bool | None = None
    joinedAt: int
    tmuxPaneId: str = ""
    cwd: str = ""
    subscriptions: list[Any] = Field(default_factory=list)
    backendType: str | None = None
    isActive: bool | None = None
    mode: str | None = None
    worktreePath: str | None = None
    sessionId: str | None = None


class TeamConfig(Record):
    name: str
    description: str | None = None
    createdAt: int
    leadAgentId: str
    leadSessionId: str | None = None
    members: list[Member] = Field(default_factory=list)

    @classmethod
    def from_json_dict(cls, raw: dict[str, Any]) -> TeamConfig:
        config = super().from_json_dict(raw)
        # keep each member's own key order too
        members = [Member.from_json_dict(m) for m in raw.get("members", [])]
        object.__setattr__(config, "members", members)
        return config

    def to_json_dict(self) -> dict[str, Any]:
        data = super().to_json_dict()
        data["members"] = [m.to_json_dict() for m in self.members]
        return data

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    def member_names(self) -> list[str]:
        return [m.name for m in self.members]

    def require(self, name: str) -> Member:
        """Member `name`; `UnknownMember` naming the members (and the likely one) if none."""
        member = self.member(name)
        if member is None:
            raise UnknownMember(unknown_member_text(name, self.name, self.member_names()))
        return member


def next_color(config: TeamConfig) -> str:
    """Round robin over `COLORS` (the lead holds red), skipping colors in use while any are free."""
    used = {m.color for m in config.members if m.color} | {"red"}
    start = len(config.members) % len(COLORS)
    rotation = COLORS[start:] + COLORS[:start]
    return next((c for c in rotation if c not in used), rotation[0])
