"""The one error hierarchy of the protocols package.

Every failure the package reports on purpose is a `ProtocolsError`, so callers (the teammate
runtime, the swarm CLI) can catch one type and print its message without a traceback.
Each subclass names one kind of failure; the message says what is wrong and what is allowed.
"""

from __future__ import annotations


class ProtocolsError(Exception):
    """Base class for every error raised on purpose by `protocols`."""


class InvalidName(ProtocolsError, ValueError):
    """A team or agent name that may not be created."""


class LockTimeout(ProtocolsError, TimeoutError):
    """A lock could not be taken before its deadline; the write did not happen."""


class InvalidSetting(ProtocolsError, ValueError):
    """An environment setting (``SWARM_*``) with a value that is not allowed."""


class LockLost(ProtocolsError):
    """A lock this process held was taken by another while it was paused; nothing was written,
    and the operation is to be done again from a fresh read."""


class MessageValidationError(ProtocolsError, ValueError):
    """A structured message of a known `type` whose fields are invalid."""


class TeamNotFound(ProtocolsError, LookupError):
    """The team directory or its config.json does not exist."""


class TeamExists(ProtocolsError):
    """A team of that name already exists."""


class MemberExists(ProtocolsError):
    """A member of that name is already in the team."""


class UnknownMember(ProtocolsError, LookupError):
    """A name that is not a member of the team (for example a misspelt recipient)."""


class BroadcastRefused(ProtocolsError):
    """Structured protocol messages cannot be broadcast to `*`."""


class TaskNotFound(ProtocolsError, LookupError):
    """No task file with that id."""


class InvalidTaskUpdate(ProtocolsError, ValueError):
    """A task update that names a bad status, a self-dependency or a missing task."""


class CorruptFile(ProtocolsError):
    """A file that stayed unparseable; it was moved aside (the path says where)."""
