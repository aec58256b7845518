"""The one error root of every package, and the hierarchy of the protocols package.

`Error` is the root: every failure that swarm, the teammate or protocols reports on purpose
derives from it (`ProtocolsError` here, `swarm.errors.SwarmError`, the teammate's `ToolError`,
`ModelError`, `UsageError`, ...), so a caller (the swarm CLI's funnel, the teammate's entry
point) catches one type and prints its message without a traceback. Each subclass names one kind
of failure; the message says what is wrong and what is allowed.
"""

from __future__ import annotations


class Error(Exception):
    """Root of every error raised on purpose by swarm, teammate or protocols: its message is
    for the person and says what is wrong and what is allowed."""


class ProtocolsError(Error):
    """Base class for every error raised on purpose by `protocols`."""


class InvalidName(ProtocolsError, ValueError):
    """A team or agent name that may not be created."""


class UnusableRoot(ProtocolsError):
    """The config root cannot hold teams: it, or a folder on its way to it, is not a directory
    (`protocols.paths.check_root`)."""


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


class StaleClaim(ProtocolsError):
    """A task changed by a claimer whose claim is no longer current (the task was claimed
    again, or returned to pending, since): fencing by the claim's epoch refused the change."""


class UnstorableValue(ProtocolsError, ValueError):
    """A value a store cannot hold (PostgreSQL text cannot hold NUL): nothing was written."""


class StoreUnavailable(ProtocolsError):
    """The store (a PostgreSQL server) could not be reached before the deadline; what was being
    done may or may not have happened, and doing it again is safe."""


class StoreTimeout(StoreUnavailable):
    """Work given a deadline (`protocols.bounded.within`) did not end in time: the store did
    not answer (a server paused or cut off, a lock held by a paused process). The work may still
    take effect later; doing it again is safe."""


class LeaseLost(ProtocolsError):
    """A member whose lease ran out was declared dead (its tasks were released): it must not
    go on with the work it held."""
