"""Request ids in Claude Code's formats, pairing responses with requests, and stale requests.

Formats (spec section 4): shutdown ``shutdown-<ms>@<target>``; plan approval
``plan_approval-<ms>@<agent>@<team>``; permission ``perm-<ms>-<7 base36>``; sandbox
``sandbox-<ms>-<7 base36>``.

`PendingRequests` remembers what a process has asked and not yet had answered, and pairs each
incoming response with its request. `is_stale` tells a request sent before the receiver joined
the team (an old ``shutdown_request`` left in the inbox of a re-spawned teammate, Claude Code
#45874) from a live one.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from protocols.clock import ms_from_iso, now_ms

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_ID_MS = re.compile(r"^(?:shutdown|plan_approval|perm|sandbox)-(\d+)[@-]")


def _base36(length: int = 7) -> str:
    import secrets  # (it loads OpenSSL: only a process that makes ids pays for it)

    return "".join(secrets.choice(_BASE36) for _ in range(length))


def shutdown_request_id(target: str, ms: int | None = None) -> str:
    return f"shutdown-{ms if ms is not None else now_ms()}@{target}"


def plan_approval_request_id(agent: str, team: str, ms: int | None = None) -> str:
    return f"plan_approval-{ms if ms is not None else now_ms()}@{agent}@{team}"


def permission_request_id(ms: int | None = None) -> str:
    return f"perm-{ms if ms is not None else now_ms()}-{_base36()}"


def sandbox_request_id(ms: int | None = None) -> str:
    return f"sandbox-{ms if ms is not None else now_ms()}-{_base36()}"


def request_id_ms(request_id: str) -> int | None:
    """The creation time (ms) embedded in a request id of any of the four formats."""
    match = _ID_MS.match(request_id)
    return int(match.group(1)) if match else None


def request_id_of(message: Any) -> str | None:
    """The request id a request or response carries, whatever its spelling."""
    for name in ("requestId", "request_id"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            return value
    return None


def sent_at_ms(message: Any) -> int | None:
    """When a request was made: its ``timestamp``/``createdAt``, else the time in its id."""
    created = getattr(message, "createdAt", None)
    if isinstance(created, int):
        return created
    stamp = getattr(message, "timestamp", None)
    if isinstance(stamp, str) and (ms := ms_from_iso(stamp)) is not None:
        return ms
    rid = request_id_of(message)
    return request_id_ms(rid) if rid else None


def is_stale(request: Any, joined_at_ms: int) -> bool:
    """True if `request` was sent before the receiver joined (so it was meant for a predecessor)."""
    sent = sent_at_ms(request)
    return sent is not None and sent < joined_at_ms


@functools.cache
def _response_to() -> dict[type, type]:
    """Each response's request model (loaded when first asked: `request_id_of` needs none)."""
    from protocols.messages.models import (
        PermissionRequest,
        PermissionResponse,
        PlanApprovalRequest,
        PlanApprovalResponse,
        SandboxPermissionRequest,
        SandboxPermissionResponse,
        ShutdownApproved,
        ShutdownRejected,
        ShutdownRequest,
    )

    return {
        ShutdownApproved: ShutdownRequest,
        ShutdownRejected: ShutdownRequest,
        PlanApprovalResponse: PlanApprovalRequest,
        PermissionResponse: PermissionRequest,
        SandboxPermissionResponse: SandboxPermissionRequest,
    }


class PendingRequests:
    """Requests this process sent and has not had answered, keyed by request id."""

    def __init__(self, outstanding: dict[str, Any] | None = None) -> None:
        self.outstanding: dict[str, Any] = {} if outstanding is None else outstanding

    def add(self, request: Any) -> str:
        rid = request_id_of(request)
        if rid is None:
            raise ValueError(f"{type(request).__name__} carries no request id")
        self.outstanding[rid] = request
        return rid

    def match(self, response: Any) -> Any | None:
        """The outstanding request `response` answers (and forget it), or None.

        A response whose id is unknown, or that answers a request of another kind, is not a
        match: it is left to the caller to report.
        """
        rid = request_id_of(response)
        if not rid:
            return None
        request = self.outstanding.get(rid)
        expected = _response_to().get(type(response))
        if request is None or expected is None or not isinstance(request, expected):
            return None
        return self.outstanding.pop(rid)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self.outstanding

    def __len__(self) -> int:
        return len(self.outstanding)
