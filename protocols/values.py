"""The named values every package shares: permission modes, member states, task statuses and
model kinds, each a `StrEnum` listed once.

A member is a `str` (``PermissionMode.PLAN == "plan"``), so it is written to JSON files and
command lines as its text and compares equal to what Claude Code wrote; pydantic fields typed
with these enums accept the text and refuse anything else with the list of allowed values.
"""

from __future__ import annotations

from enum import StrEnum


class PermissionMode(StrEnum):
    """How a member's tool calls are decided (Claude Code's ``--permission-mode``)."""

    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"
    DONT_ASK = "dontAsk"
    AUTO = "auto"  # a small model decides what the rules leave open (teammate.permissions.auto)
    BUBBLE = "bubble"  # always ask the parent's approver: for a teammate, the lead (as default)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The modes as text, in Claude Code's order (for choices and error messages)."""
        return tuple(mode.value for mode in cls)


class MemberState(StrEnum):
    """What a member is doing: as its status file says (`protocols.member.status`: the first six),
    or as the roster and its process say (`swarm.team.members.member_state`: starting, working,
    idle, dead, lead)."""

    STARTING = "starting"
    WORKING = "working"
    WAITING = "waiting"  # for the lead's answer to a permission or plan request
    IDLE = "idle"
    STOPPED = "stopped"
    FAILED = "failed"
    DEAD = "dead"  # its process is gone without saying so
    LEAD = "lead"  # the team's lead (whose process swarm does not track)

    @property
    def live(self) -> bool:
        """A running member that has joined (not starting, stopped or failed)."""
        return self in (MemberState.IDLE, MemberState.WORKING, MemberState.WAITING)

    @property
    def gone(self) -> bool:
        """Its process is gone: dead, or stopped on purpose (`swarm stop`) to start again."""
        return self in (MemberState.DEAD, MemberState.STOPPED)


class TaskStatus(StrEnum):
    """A task's ``status`` field (a failed task is ``in_progress`` with ``metadata.failed``)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


class ModelKind(StrEnum):
    """What thinks for a member: the offline shell worker, the Claude brain on a scripted model,
    or the Claude brain on the Messages API (any other model name)."""

    SHELL = "shell"
    SCRIPTED = "scripted"
    CLAUDE = "claude"

    @classmethod
    def of(cls, model: str) -> ModelKind:
        """The kind of the ``--model`` value `model` (``sonnet``, ``claude-opus-4-1``: CLAUDE)."""
        if model == cls.SHELL:
            return cls.SHELL
        if model == cls.SCRIPTED:
            return cls.SCRIPTED
        return cls.CLAUDE

    @property
    def offline(self) -> bool:
        """Needs no API key."""
        return self is not ModelKind.CLAUDE
