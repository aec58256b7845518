"""Errors of the orchestrator. Like `protocols.ProtocolsError`, each message says what is wrong
and what is allowed; the CLI prints it without a traceback."""

from __future__ import annotations

from protocols.errors import Error


class SwarmError(Error):
    """Base class for errors raised on purpose by `swarm`."""
