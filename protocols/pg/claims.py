"""Claiming tasks in PostgreSQL: one transaction per claim, an epoch per claim for fencing.

`claim_next` is one transaction: it takes a lock on the claimer's name (so one member's
concurrent claims are one at a time and the busy rule holds), refuses a member that already
holds an unfinished task that is not failed (the file board's busy rule), then locks the
lowest-id pending, unowned, visible, not failed task whose blockers are all completed with
``FOR UPDATE SKIP LOCKED`` (concurrent claimers take different tasks instead of queueing on
one), and makes it the claimer's: ``in_progress``, ``epoch + 1``, and the call's claim token.
A claim that is done again after its commit's answer was lost finds its token and answers
with the task it already made its own, never a second one.

The epoch is the claim's fencing token: a claimer passes it back with its changes
(`PgTaskBoard.update(..., epoch=)`, `complete`), and a change whose epoch is not the task's
current one (the task was returned to pending, by `release` or a lease sweep, and perhaps
claimed again) is refused with `StaleClaim`. Every return to pending bumps the epoch too.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import psycopg

from protocols.pg.columns import document
from protocols.pg.task_rows import COLUMNS, Row, row, task_id, tasks
from protocols.tasks.task import FAILED, ClaimFailure, ClaimResult

Conn = psycopg.Connection[Any]

_T_COLUMNS = ", ".join(f"t.{name}" for name in COLUMNS.split(", "))
# `protocols.tasks.task.may_take` in SQL: with %(takers)s (the claimer's name and labels) given, a
# task it has not failed (``failedBy``), that its ``for`` names one of, or, without ``for``, a
# task with a command for shell workers and any other for anyone; with NULL, any task
_TAKEABLE = """(%(takers)s::text[] IS NULL OR (
    NOT COALESCE((t.metadata::jsonb -> 'failedBy') ? %(agent)s, false)
    AND CASE
      WHEN jsonb_typeof(t.metadata::jsonb -> 'for') IN ('string', 'array')
           AND (t.metadata::jsonb -> 'for') NOT IN ('""'::jsonb, '[]'::jsonb)
        THEN (t.metadata::jsonb -> 'for') ?| %(takers)s::text[]
      WHEN COALESCE(t.metadata::jsonb -> 'command', 'null'::jsonb)
           NOT IN ('null'::jsonb, '""'::jsonb, 'false'::jsonb)
        THEN 'shell' = ANY(%(takers)s::text[])
      ELSE true
    END))"""
_CLAIMABLE = f"""
SELECT {_T_COLUMNS} FROM tasks t
WHERE t.team = %(team)s AND t.status = 'pending' AND t.owner IS NULL
  AND NOT t.failed AND NOT t.internal
  AND NOT EXISTS (
    SELECT 1 FROM task_deps d JOIN tasks b ON b.team = d.team AND b.id = d.blocker_id
    WHERE d.team = t.team AND d.task_id = t.id AND b.status <> 'completed')
  AND {_TAKEABLE}
ORDER BY t.id
LIMIT 1
"""


def lock_claimer(conn: Conn, team: str, agent: str) -> None:
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"claim\x1f{team}\x1f{agent}"]
    )


def busy_with(conn: Conn, team: str, agent: str, other_than: int | None = None) -> list[str]:
    """The unfinished, not failed tasks `agent` owns (but `other_than`)."""
    found = conn.execute(
        "SELECT id FROM tasks WHERE team = %s AND owner = %s AND status <> 'completed' "
        "AND NOT failed AND id IS DISTINCT FROM %s ORDER BY id",
        [team, agent, other_than],
    ).fetchall()
    return [str(r[0]) for r in found]


def open_blockers(conn: Conn, team: str, number: int) -> list[str]:
    found = conn.execute(
        "SELECT d.blocker_id FROM task_deps d JOIN tasks b ON b.team = d.team "
        "AND b.id = d.blocker_id WHERE d.team = %s AND d.task_id = %s "
        "AND b.status <> 'completed' ORDER BY d.position",
        [team, number],
    ).fetchall()
    return [str(r[0]) for r in found]


def take(conn: Conn, team: str, locked: Row, agent: str, start: bool, token: str) -> Row:
    """Make the (locked) task `agent`'s: a new epoch, the claim token, a failure cleared (a
    failed task claimed by name is a deliberate retry)."""
    metadata = locked.metadata
    if metadata and FAILED in metadata:
        metadata = {k: v for k, v in metadata.items() if k != FAILED} or None
    found = conn.execute(
        "UPDATE tasks SET owner = %(agent)s, epoch = epoch + 1, claim_token = %(token)s, "
        "claimed_at = clock_timestamp(), "
        "status = CASE WHEN %(start)s AND status = 'pending' THEN 'in_progress' ELSE status END, "
        "failed = false, metadata = %(metadata)s "
        f"WHERE team = %(team)s AND id = %(id)s RETURNING {COLUMNS}",
        {
            "agent": agent,
            "token": token,
            "start": start,
            "metadata": None if metadata is None else document(metadata),
            "team": team,
            "id": locked.id,
        },
    ).fetchone()
    assert found is not None  # locked by the caller
    taken = Row(*found)
    record(conn, team, taken.id, "claimed", agent, taken.epoch)
    return taken


def record(conn: Conn, team: str, number: int, event: str, agent: str | None, epoch: int) -> None:
    conn.execute(
        "INSERT INTO task_events (team, task_id, event, agent, epoch) VALUES (%s, %s, %s, %s, %s)",
        [team, number, event, agent, epoch],
    )


def result(conn: Conn, team: str, taken: Row) -> ClaimResult:
    return ClaimResult(True, tasks(conn, team, [taken])[0], epoch=taken.epoch)


def claim_next(
    conn: Conn,
    team: str,
    agent: str,
    start: bool,
    token: str,
    labels: Collection[str] | None = None,
) -> ClaimResult | None:
    """The auto-claim, in the caller's transaction (see the module's docstring); with
    `labels`, only a task `agent` may take (`protocols.tasks.task.may_take`)."""
    params = {
        "team": team,
        "agent": agent,
        "takers": None if labels is None else [agent, *labels],
    }
    lock_claimer(conn, team, agent)
    again = conn.execute(
        f"SELECT {COLUMNS} FROM tasks WHERE team = %s AND claim_token = %s AND owner = %s",
        [team, token, agent],
    ).fetchone()
    if again is not None:  # this very call committed before its answer was lost
        return result(conn, team, Row(*again))
    busy = busy_with(conn, team, agent)
    if busy:
        first = conn.execute(_CLAIMABLE, params).fetchone()
        if first is None:
            return None
        waiting = tasks(conn, team, [Row(*first)])[0]
        return ClaimResult(False, waiting, ClaimFailure.AGENT_BUSY, busy_with=busy)
    chosen = conn.execute(_CLAIMABLE + " FOR UPDATE OF t SKIP LOCKED", params).fetchone()
    if chosen is None:
        return None
    return result(conn, team, take(conn, team, Row(*chosen), agent, start, token))


def claim(
    conn: Conn, team: str, value: str | int, agent: str, check_busy: bool, start: bool, token: str
) -> ClaimResult:
    """Claim one task by id (waiting for its row lock), with the file board's reasons."""
    number = task_id(value)
    if number is None:
        return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
    lock_claimer(conn, team, agent)
    try:
        found = row(conn, team, number, lock=True)
    except LookupError:
        return ClaimResult(False, None, ClaimFailure.TASK_NOT_FOUND)
    task = tasks(conn, team, [found])[0]
    if found.status == "completed":
        return ClaimResult(False, task, ClaimFailure.ALREADY_RESOLVED)
    if found.owner and found.owner != agent:
        return ClaimResult(False, task, ClaimFailure.ALREADY_CLAIMED)
    blockers = open_blockers(conn, team, number)
    if blockers:
        return ClaimResult(False, task, ClaimFailure.BLOCKED, blocked_by=blockers)
    if check_busy:
        busy = busy_with(conn, team, agent, other_than=number)
        if busy:
            return ClaimResult(False, task, ClaimFailure.AGENT_BUSY, busy_with=busy)
    return result(conn, team, take(conn, team, found, agent, start, token))


def release(conn: Conn, team: str, agent: str) -> list[Row]:
    """Return `agent`'s unfinished tasks to pending with no owner, each at a new epoch; those
    now back on the board (a failed one loses its owner too, but stays failed until it is
    retried: it is not returned)."""
    found = conn.execute(
        "UPDATE tasks SET owner = NULL, status = 'pending', epoch = epoch + 1, "
        "claim_token = NULL, key_order = (key_order::jsonb - 'owner')::json "
        "WHERE team = %s AND owner = %s AND status <> 'completed' "
        f"RETURNING {COLUMNS}, failed",
        [team, agent],
    ).fetchall()
    released = sorted((Row(*r[:-1]) for r in found if not r[-1]), key=lambda r: r.id)
    for one in released:
        record(conn, team, one.id, "released", agent, one.epoch)
    return released
