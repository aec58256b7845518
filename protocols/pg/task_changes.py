"""Changing one task: a TaskUpdate's fields checked and applied to its row, and new dependency
links checked for cycles (under the team row's lock, taken by the caller) before they are added.

An update starts a new epoch when it changes the owner or puts the task back to pending, so the
previous claimer's fenced changes are refused from then on; each completion and each release
is recorded in ``task_events``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import psycopg

from protocols.errors import InvalidTaskUpdate
from protocols.pg import claims
from protocols.pg.columns import document, text
from protocols.pg.task_rows import (
    COLUMNS,
    Row,
    dependency_edges,
    flags,
    key_order_after,
    not_found,
    task_id,
)
from protocols.tasks.graph import check_acyclic
from protocols.tasks.task import FAILED, STATUSES

Conn = psycopg.Connection[Any]
_FIELDS = {"subject", "description", "activeForm", "status", "owner"}


class Change:
    """A TaskUpdate's fields, checked, and how they change one row."""

    def __init__(self, fields: dict[str, Any], task_ref: str) -> None:
        fields = dict(fields)
        self.add_blocks = [str(x) for x in fields.pop("addBlocks", None) or []]
        self.add_blocked_by = [str(x) for x in fields.pop("addBlockedBy", None) or []]
        for other in (*self.add_blocks, *self.add_blocked_by):
            if other == task_ref:
                raise InvalidTaskUpdate(f"task #{task_ref} cannot block or be blocked by itself")
        for name in ("blocks", "blockedBy"):
            if name in fields:
                raise InvalidTaskUpdate(
                    f"{name} cannot be set directly; use addBlocks or addBlockedBy"
                )
        self.changes = {k: v for k, v in fields.items() if k in _FIELDS}
        extra = {k: v for k, v in fields.items() if k not in _FIELDS and k != "metadata"}
        status = self.changes.get("status")
        if "status" in self.changes and status not in STATUSES:
            raise InvalidTaskUpdate(
                f"invalid status {status!r}; allowed: {', '.join(STATUSES)}, deleted"
            )
        for name in ("subject", "description", "activeForm", "owner"):
            if self.changes.get(name) is not None:
                text(str(self.changes[name]), f"task {name}")
        self.metadata = {**(fields.get("metadata") or {}), **extra}
        if status == "pending":
            self.metadata.setdefault(FAILED, None)  # a failed task put back is retried

    @property
    def links(self) -> bool:
        return bool(self.add_blocks or self.add_blocked_by)

    def apply(self, conn: Conn, team: str, before: Row, actor: str | None) -> Row:
        status = self.changes.get("status", before.status)
        owner = self.changes.get("owner", before.owner)
        was_failed = flags(before.metadata)[1]
        if was_failed and status == "pending" and "owner" not in self.changes:
            owner = None  # retried: any idle worker may take it
        metadata = dict(before.metadata or {})
        for key, value in self.metadata.items():
            if value is None:
                metadata.pop(key, None)
            else:
                metadata[key] = value
        returned = status == "pending" and before.status != "pending"
        new_epoch = before.epoch + 1 if owner != before.owner or returned else before.epoch
        internal, failed = flags(metadata)
        new = replace(
            before,
            subject=self.changes.get("subject", before.subject),
            description=self.changes.get("description", before.description),
            active_form=self.changes.get("activeForm", before.active_form),
            status=status,
            owner=owner,
            metadata=metadata or None,
            epoch=new_epoch,
        )
        found = conn.execute(
            "UPDATE tasks SET subject = %s, description = %s, active_form = %s, status = %s, "
            "owner = %s, metadata = %s, internal = %s, failed = %s, epoch = %s, key_order = %s, "
            "claim_token = CASE WHEN %s THEN claim_token ELSE NULL END, "
            "completed_at = CASE WHEN %s = 'completed' THEN coalesce(completed_at, "
            "clock_timestamp()) ELSE NULL END "
            f"WHERE team = %s AND id = %s RETURNING {COLUMNS}",
            [
                new.subject,
                new.description,
                new.active_form,
                new.status,
                new.owner,
                None if new.metadata is None else document(new.metadata),
                internal,
                failed,
                new.epoch,
                document(order) if (order := key_order_after(before, new)) else None,
                new_epoch == before.epoch,
                status,
                team,
                before.id,
            ],
        ).fetchone()
        assert found is not None  # locked by the caller
        after = Row(*found)
        if status == "completed" and before.status != "completed":
            claims.record(conn, team, after.id, "completed", actor or after.owner, after.epoch)
        elif new_epoch != before.epoch and before.owner:
            claims.record(conn, team, after.id, "released", before.owner, after.epoch)
        return after


def link(conn: Conn, team: str, pairs: list[tuple[int, int]]) -> None:
    """Add ``task waits for blocker`` rows (each pair once)."""
    for waiting, blocker in pairs:
        conn.execute(
            "INSERT INTO task_deps (team, task_id, blocker_id) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [team, waiting, blocker],
        )


def add_links(
    conn: Conn, team: str, number: int, add_blocks: list[str], add_blocked_by: list[str]
) -> None:
    """Task `number` blocks `add_blocks` and waits for `add_blocked_by`: every task must exist
    and no cycle may close (`InvalidTaskUpdate` naming it)."""
    edges = dependency_edges(conn, team)
    blocks = [_existing(team, edges, other) for other in add_blocks]
    blocked_by = [_existing(team, edges, other) for other in add_blocked_by]
    me = str(number)
    edges[me] = union(edges[me], [str(b) for b in blocked_by])
    for other in blocks:
        edges[str(other)] = union(edges[str(other)], [me])
    check_acyclic(edges)
    link(conn, team, [(number, b) for b in blocked_by] + [(o, number) for o in blocks])


def _existing(team: str, edges: dict[str, list[str]], value: str) -> int:
    number = task_id(value)
    if number is None or str(number) not in edges:
        raise not_found(team, value)
    return number


def union(current: Iterable[Any], more: Iterable[Any]) -> list[Any]:
    result = list(current)
    for item in more:
        if item not in result:
            result.append(item)
    return result
