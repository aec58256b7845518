"""Permission requests: the legacy file store and the mailbox pair (spec section 4).

File store (`PermissionStore`): a request is written to ``permissions/pending/<id>.json``; its
resolution to ``permissions/resolved/<id>.json`` (the request plus ``status``, ``resolvedBy``,
``resolvedAt`` and optional ``feedback``/``updatedInput``/``permissionUpdates``), after which the
pending file is removed. Writers serialise on ``permissions/pending/.lock``. Resolutions older
than an hour are cleaned.

Mailbox pair: `request_permission` sends ``permission_request`` to the lead and returns its id;
`permission_response` builds the lead's answer; `await_permission_response` waits for it in the
teammate's inbox, leaving every other message there unread.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from protocols.clock import now_ms
from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.fs.jsonio import Durability, ensure_file, write_json
from protocols.fs.locks import FileGuard, redo_if_lock_lost
from protocols.inbox.mailbox import Mailbox
from protocols.messages.correlation import permission_request_id
from protocols.messages.models import PermissionRequest, PermissionResponse, PermissionResponseBody
from protocols.names import LEAD_NAME, checked_component
from protocols.paths import TeamPaths
from protocols.records.base import Record

log = logging.getLogger(__name__)

RESOLUTION_TTL_MS = 60 * 60 * 1000

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract


class PermissionFileRequest(Record):
    id: str
    workerId: str
    workerName: str
    workerColor: str | None = None
    teamName: str
    toolName: str
    toolUseId: str
    description: str
    input: dict[str, Any]
    permissionSuggestions: list[Any] = []
    status: Literal["pending", "approved", "rejected"] = "pending"
    createdAt: int
    resolvedBy: str | None = None
    resolvedAt: int | None = None
    feedback: str | None = None
    updatedInput: dict[str, Any] | None = None
    permissionUpdates: list[Any] | None = None


class RequestWriter:
    """`new_request` for every store of permission requests: the request is built here, and
    the store's own `write_pending` keeps it (`PermissionStore`, the PostgreSQL store's)."""

    team_name: str

    def write_pending(self, request: PermissionFileRequest) -> PermissionFileRequest:
        raise NotImplementedError

    def new_request(
        self,
        *,
        worker_name: str,
        tool_name: str,
        tool_use_id: str,
        description: str,
        input: dict[str, Any],
        worker_color: str | None = None,
        suggestions: list[Any] | None = None,
    ) -> PermissionFileRequest:
        """Write a new pending request for `worker_name` and return it."""
        return self.write_pending(
            PermissionFileRequest(
                id=permission_request_id(),
                workerId=f"{worker_name}@{self.team_name}",
                workerName=worker_name,
                workerColor=worker_color,
                teamName=self.team_name,
                toolName=tool_name,
                toolUseId=tool_use_id,
                description=description,
                input=input,
                permissionSuggestions=suggestions or [],
                status="pending",
                createdAt=now_ms(),
            )
        )


class PermissionStore(RequestWriter):
    """The ``permissions/pending`` and ``permissions/resolved`` directories of one team."""

    def __init__(self, paths: TeamPaths, durability: Durability | None = None) -> None:
        self.paths = paths
        self.durability = durability
        self.team_name = paths.team

    def _lock(self) -> FileGuard:
        target = self.paths.permissions_pending / ".lock"
        ensure_file(target, "", self.durability)
        safefs.makedirs(self.paths.permissions_resolved)
        return FileGuard(target)

    @redo_if_lock_lost
    def write_pending(self, request: PermissionFileRequest) -> PermissionFileRequest:
        with self._lock() as guard:
            guard.confirm()
            write_json(
                _file(self.paths.permissions_pending, request.id),
                request.to_json_dict(),
                self.durability,
            )
        return request

    def pending(self) -> list[PermissionFileRequest]:
        return self._read_dir(self.paths.permissions_pending)

    def resolved(self) -> list[PermissionFileRequest]:
        return self._read_dir(self.paths.permissions_resolved)

    def get_pending(self, request_id: str) -> PermissionFileRequest | None:
        return self._read(_file(self.paths.permissions_pending, request_id))

    def poll(self, request_id: str) -> PermissionFileRequest | None:
        """The resolution of `request_id`, or None while it is unresolved."""
        return self._read(_file(self.paths.permissions_resolved, request_id))

    @redo_if_lock_lost
    def resolve(
        self,
        request_id: str,
        *,
        approved: bool,
        resolved_by: str = "leader",
        feedback: str | None = None,
        updated_input: dict[str, Any] | None = None,
        permission_updates: list[Any] | None = None,
    ) -> PermissionFileRequest:
        """Write the resolution, then remove the pending file. Exactly one resolver wins:
        the others get `ProtocolsError` saying who answered."""
        with self._lock() as guard:
            request = self.get_pending(request_id)
            if request is None:
                done = self.poll(request_id)
                if done is not None:
                    raise ProtocolsError(
                        f"permission request {request_id!r} was already answered "
                        f"({done.status} by {done.resolvedBy or 'someone'})"
                    )
                raise ProtocolsError(f"no pending permission request {request_id!r}")
            resolution = request.updated(
                status="approved" if approved else "rejected",
                resolvedBy=resolved_by,
                resolvedAt=now_ms(),
                feedback=feedback,
                updatedInput=updated_input,
                permissionUpdates=permission_updates,
            )
            guard.confirm()  # a holder paused past the stale window must not answer twice
            write_json(
                _file(self.paths.permissions_resolved, request_id),
                resolution.to_json_dict(),
                self.durability,
            )
            safefs.unlink(_file(self.paths.permissions_pending, request_id), missing_ok=True)
        return resolution

    def clean_resolved(self, max_age_ms: int = RESOLUTION_TTL_MS) -> list[str]:
        """Delete resolutions older than `max_age_ms` (default 1 h); returns their ids."""
        cutoff = now_ms() - max_age_ms
        removed = []
        with self._lock():
            for resolution in self.resolved():
                stamp = resolution.resolvedAt or resolution.createdAt
                if stamp < cutoff:
                    safefs.unlink(
                        _file(self.paths.permissions_resolved, resolution.id), missing_ok=True
                    )
                    removed.append(resolution.id)
        return removed

    def _read_dir(self, directory: Path) -> list[PermissionFileRequest]:
        try:
            names = sorted(n for n in safefs.listdir(directory) if n.endswith(".json"))
        except FileNotFoundError:
            return []
        found = (self._read(directory / n) for n in names)
        return sorted((r for r in found if r is not None), key=lambda r: r.createdAt)

    def _read(self, path: Path) -> PermissionFileRequest | None:
        try:
            return PermissionFileRequest.from_json_dict(json.loads(safefs.read_bytes(path)))
        except FileNotFoundError:
            return None
        except (ValueError, ValidationError, safefs.LinkRefused) as exc:
            log.warning("skipping invalid permission file %s: %s", path, exc)
            return None


def _file(directory: Path, request_id: str) -> Path:
    """The file of request `request_id` in `directory` (an id that is no file name is refused)."""
    return directory / f"{checked_component(request_id, 'request id')}.json"


def request_permission(
    mailbox: MailboxContract,
    *,
    worker: str,
    tool_name: str,
    tool_use_id: str,
    description: str,
    input: dict[str, Any],
    color: str | None = None,
    suggestions: list[Any] | None = None,
) -> PermissionRequest:
    """Send a ``permission_request`` from `worker` to the lead; returns it (with its id)."""
    request = PermissionRequest(
        request_id=permission_request_id(),
        agent_id=worker,
        tool_name=tool_name,
        tool_use_id=tool_use_id,
        description=description,
        input=input,
        permission_suggestions=suggestions or [],
    )
    mailbox.send(LEAD_NAME, request, sender=worker, color=color, summary=description[:60])
    return request


def permission_response(
    request_id: str,
    *,
    approved: bool,
    updated_input: dict[str, Any] | None = None,
    permission_updates: list[Any] | None = None,
    error: str = "Permission denied",
) -> PermissionResponse:
    """The lead's answer to a ``permission_request``."""
    if approved:
        return PermissionResponse(
            request_id=request_id,
            subtype="success",
            response=PermissionResponseBody(
                updated_input=updated_input, permission_updates=permission_updates
            ),
        )
    return PermissionResponse(request_id=request_id, subtype="error", error=error)


def await_permission_response(
    mailbox: Mailbox, agent: str, request_id: str, timeout: float
) -> PermissionResponse | None:
    """Wait for the response to `request_id` in `agent`'s inbox; mark only it read.

    Other messages stay unread for the caller's normal handling. None on timeout.
    """
    found = mailbox.await_message(
        agent,
        lambda m: isinstance(m, PermissionResponse) and m.request_id == request_id,
        timeout,
    )
    return found[1] if found else None
