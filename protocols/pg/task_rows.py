"""Tasks as rows: reading them back as the file layer's `Task` records, and the checks every
change of the board shares (task ids, fencing, the dependency graph).

A task's ``blockedBy`` and ``blocks`` are not columns: they are the rows of ``task_deps`` that
name it, in the order they were added, so the two sides can never disagree. ``internal`` and
``failed`` are columns kept beside ``metadata`` (``_internal``, ``failed``) for the claim query.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import psycopg

from protocols.errors import StaleClaim, TaskNotFound, TeamNotFound
from protocols.tasks.model import Task
from protocols.tasks.task import FAILED

Conn = psycopg.Connection[Any]

_ID = re.compile(r"^[0-9]{1,18}$")
COLUMNS = "id, subject, description, active_form, status, owner, metadata, epoch, key_order"


@dataclass(frozen=True)
class Row:
    id: int
    subject: str
    description: str
    active_form: str | None
    status: str
    owner: str | None
    metadata: dict[str, Any] | None
    epoch: int
    key_order: list[str] | None


def task_id(value: str | int) -> int | None:
    """The id as a number; None for anything that is not a task id (``"../x"``, ``"-1"``)."""
    text = str(value)
    return int(text) if _ID.fullmatch(text) else None


def not_found(team: str, value: str | int) -> TaskNotFound:
    return TaskNotFound(f"task #{value} not found in team {team!r}")


def rows(conn: Conn, team: str, ids: Iterable[int] | None = None, lock: bool = False) -> list[Row]:
    """The task rows of `team` (those of `ids` only, when given), by id; with `lock`, locked
    (``FOR UPDATE``) until the transaction ends."""
    query = f"SELECT {COLUMNS} FROM tasks WHERE team = %s"
    params: list[Any] = [team]
    if ids is not None:
        query += " AND id = ANY(%s)"
        params.append(list(ids))
    query += " ORDER BY id" + (" FOR UPDATE" if lock else "")
    return [Row(*found) for found in conn.execute(query, params).fetchall()]


def row(conn: Conn, team: str, value: str | int, lock: bool = False) -> Row:
    """One task's row, or `TaskNotFound`."""
    number = task_id(value)
    found = rows(conn, team, [number], lock) if number is not None else []
    if not found:
        raise not_found(team, value)
    return found[0]


def tasks(conn: Conn, team: str, found: list[Row]) -> list[Task]:
    """`found` as `Task` records, their dependencies read in the same transaction."""
    if not found:
        return []
    ids = [r.id for r in found]
    blocked_by: dict[int, list[str]] = defaultdict(list)
    blocks: dict[int, list[str]] = defaultdict(list)
    for waiting, blocker in conn.execute(
        "SELECT task_id, blocker_id FROM task_deps WHERE team = %s "
        "AND (task_id = ANY(%s) OR blocker_id = ANY(%s)) ORDER BY position",
        [team, ids, ids],
    ).fetchall():
        blocked_by[waiting].append(str(blocker))
        blocks[blocker].append(str(waiting))
    return [as_task(r, blocked_by[r.id], blocks[r.id]) for r in found]


def as_task(found: Row, blocked_by: list[str], blocks: list[str]) -> Task:
    """The record the file board would hold: Claude Code's key order ``id, subject,
    description, activeForm?, status, blocks, blockedBy, metadata?, owner?`` at creation; a key
    added later goes at the end, as when the file is rewritten (`key_order`)."""
    raw: dict[str, Any] = {
        "id": str(found.id),
        "subject": found.subject,
        "description": found.description,
    }
    if found.active_form is not None:
        raw["activeForm"] = found.active_form
    raw.update(status=found.status, blocks=blocks, blockedBy=blocked_by)
    if found.metadata is not None:
        raw["metadata"] = found.metadata
    if found.owner is not None:
        raw["owner"] = found.owner
    if found.key_order:
        ordered = {key: raw[key] for key in found.key_order if key in raw}
        raw = {**ordered, **{k: v for k, v in raw.items() if k not in ordered}}
    return Task.from_json_dict(raw)


def key_order_after(before: Row, after: Row) -> list[str] | None:
    """The order of `after`'s keys when it is `before` changed: kept keys where they were,
    new ones at the end. None when that is Claude Code's creation order."""
    before_keys = list(as_task(before, [], []).to_json_dict())
    canonical = list(as_task(replace(after, key_order=None), [], []).to_json_dict())
    kept = [k for k in before_keys if k in canonical]
    order = kept + [k for k in canonical if k not in before_keys]
    return None if order == canonical else order


def flags(metadata: dict[str, Any] | None) -> tuple[bool, bool]:
    """(internal, failed) of a task with this metadata."""
    meta = metadata or {}
    return bool(meta.get("_internal")), bool(meta.get(FAILED))


def fence(team: str, found: Row, actor: str | None, epoch: int) -> None:
    """`StaleClaim` unless `actor` still holds the claim of epoch `epoch` on the task."""
    if found.owner == actor and found.epoch == epoch:
        return
    holder = f"owned by {found.owner!r}" if found.owner else "owned by nobody"
    raise StaleClaim(
        f"task #{found.id} in team {team!r}: {actor!r}'s claim (epoch {epoch}) is no longer "
        f"current: the task is {found.status}, {holder}, at epoch {found.epoch}; nothing was "
        "changed. Changes by a claimer must carry the epoch of its current claim"
    )


def dependency_edges(conn: Conn, team: str) -> dict[str, list[str]]:
    """Every task of `team` -> the tasks it waits for (ids as text, for `check_acyclic`)."""
    edges: dict[str, list[str]] = {
        str(r[0]): [] for r in conn.execute("SELECT id FROM tasks WHERE team = %s", [team])
    }
    for waiting, blocker in conn.execute(
        "SELECT task_id, blocker_id FROM task_deps WHERE team = %s ORDER BY position", [team]
    ).fetchall():
        edges[str(waiting)].append(str(blocker))
    return edges


def lock_graph(conn: Conn, team: str) -> None:
    """Serialise changes of `team`'s task ids and dependencies (the team row, ``FOR NO KEY
    UPDATE``: claims and sends do not wait for it)."""
    if (
        conn.execute("SELECT 1 FROM teams WHERE name = %s FOR NO KEY UPDATE", [team]).fetchone()
        is None
    ):
        raise TeamNotFound(f"team {team!r} not found in the store")
