"""A teammate's status file: what it is doing and what it has cost, for `swarm status`/`watch`.

``teams/<team>/agents/<name>.status.json``, written atomically by the teammate whenever its
state changes or a model call returns, and only read by everyone else. Claude Code has no such
file; it is swarm's own, kept out of the way of Claude Code's files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from protocols import safefs
from protocols.clock import now_iso
from protocols.jsonio import Durability, write_json
from protocols.paths import TeamPaths
from protocols.records import Record
from protocols.values import MemberState

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class AgentStatus(Record):
    name: str
    model: str
    state: MemberState = MemberState.STARTING
    activity: str = ""  # one line: what it is doing right now
    currentTask: str | None = None
    requests: int = 0  # model calls made
    turns: int = 0  # model calls that were answered
    toolCalls: int = 0
    usage: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    pid: int | None = None
    updatedAt: str = Field(default_factory=now_iso)


def write_status(
    paths: TeamPaths, status: AgentStatus, durability: Durability | None = "process"
) -> None:
    """Replace the status file (atomic; no fsync by default: it is rewritten often)."""
    status.updatedAt = now_iso()
    target = paths.agent_status(status.name)
    safefs.makedirs(target.parent)
    write_json(target, status.to_json_dict(), durability)


def read_status(paths: TeamPaths, name: str) -> AgentStatus | None:
    """The status file of `name`; None if there is none or it cannot be read."""
    return _read(paths.agent_status(name))


def _read(path: Path) -> AgentStatus | None:
    try:
        value: Any = json.loads(safefs.read_text(path))
        return AgentStatus.from_json_dict(value)
    except (OSError, ValueError, ValidationError):  # a link (LinkRefused) is an OSError too
        return None
