"""`PgPermissionStore`: permission requests in PostgreSQL, with
`protocols.inbox.permissions.PermissionStore`'s methods.

A request is one row holding the `PermissionFileRequest` (its resolution written into the same
document). Resolving is one ``UPDATE ... WHERE status = 'pending'``: exactly one resolver wins,
the others are told who answered.
"""

from __future__ import annotations

from typing import Any

import psycopg

from protocols.clock import now_ms
from protocols.errors import ProtocolsError
from protocols.inbox.permissions import RESOLUTION_TTL_MS, PermissionFileRequest, RequestWriter
from protocols.pg.columns import document, text
from protocols.pg.database import Database

Conn = psycopg.Connection[Any]


class PgPermissionStore(RequestWriter):
    """One team's permission requests, in the store at `db`."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = text(team, "team name")
        self.team_name = self.team

    def write_pending(self, request: PermissionFileRequest) -> PermissionFileRequest:
        self.db.run(
            lambda c: c.execute(
                "INSERT INTO permission_requests (team, id, request) VALUES (%s, %s, %s) "
                "ON CONFLICT (team, id) DO NOTHING",
                [self.team, text(request.id, "request id"), document(request.to_json_dict())],
            ),
            "write permission request",
        )
        return request

    def _select(self, where: str, params: list[Any]) -> list[PermissionFileRequest]:
        found = self.db.run(
            lambda c: c.execute(
                f"SELECT request FROM permission_requests WHERE team = %s AND {where} "
                "ORDER BY created_at, id",
                [self.team, *params],
            ).fetchall()
        )
        return [PermissionFileRequest.from_json_dict(r[0]) for r in found]

    def pending(self) -> list[PermissionFileRequest]:
        return self._select("status = 'pending'", [])

    def resolved(self) -> list[PermissionFileRequest]:
        return self._select("status <> 'pending'", [])

    def get_pending(self, request_id: str) -> PermissionFileRequest | None:
        found = self._select("status = 'pending' AND id = %s", [request_id])
        return found[0] if found else None

    def poll(self, request_id: str) -> PermissionFileRequest | None:
        """The resolution of `request_id`, or None while it is unresolved."""
        found = self._select("status <> 'pending' AND id = %s", [request_id])
        return found[0] if found else None

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
        """Record the answer. Exactly one resolver wins: the others get `ProtocolsError`
        saying who answered."""

        def work(conn: Conn) -> PermissionFileRequest:
            found = conn.execute(
                "SELECT request FROM permission_requests WHERE team = %s AND id = %s FOR UPDATE",
                [self.team, request_id],
            ).fetchone()
            if found is None:
                raise ProtocolsError(f"no pending permission request {request_id!r}")
            request = PermissionFileRequest.from_json_dict(found[0])
            if request.status != "pending":
                raise ProtocolsError(
                    f"permission request {request_id!r} was already answered "
                    f"({request.status} by {request.resolvedBy or 'someone'})"
                )
            resolution = request.updated(
                status="approved" if approved else "rejected",
                resolvedBy=resolved_by,
                resolvedAt=now_ms(),
                feedback=feedback,
                updatedInput=updated_input,
                permissionUpdates=permission_updates,
            )
            conn.execute(
                "UPDATE permission_requests SET status = %s, request = %s, resolved_at = now() "
                "WHERE team = %s AND id = %s",
                [resolution.status, document(resolution.to_json_dict()), self.team, request_id],
            )
            return resolution

        return self.db.run(work, "resolve permission request")

    def clean_resolved(self, max_age_ms: int = RESOLUTION_TTL_MS) -> list[str]:
        """Delete resolutions older than `max_age_ms` (default 1 h); returns their ids."""
        found = self.db.run(
            lambda c: c.execute(
                "DELETE FROM permission_requests WHERE team = %s AND status <> 'pending' "
                "AND resolved_at < now() - make_interval(secs => %s) RETURNING id",
                [self.team, max_age_ms / 1000],
            ).fetchall(),
            "clean resolved requests",
        )
        return sorted(r[0] for r in found)
