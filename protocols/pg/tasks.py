"""`PgTaskBoard`: a team's task board in PostgreSQL, with `protocols.tasks.board.TaskBoard`'s
methods.

Creating, reading, updating and deleting tasks hand back the file layer's `Task` records; claims
(`protocols.pg.claims`) add an epoch to each `ClaimResult`, which the claimer passes back to
`update` or `complete` (fencing: a stale epoch is refused with `StaleClaim`). Task ids come
from the team's counter and are never reused. Dependencies live in ``task_deps`` and are
changed under the team row's lock, so a cycle is refused (naming it) however many add links at
once; a creation is one transaction with a key of its own, so a creation done again after its
commit's answer was lost hands back the tasks it made instead of making them twice.
"""

from __future__ import annotations

import builtins
import logging
import secrets
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import psycopg

from protocols.clock import now_iso
from protocols.errors import InvalidTaskUpdate
from protocols.names import checked_component
from protocols.pg import claims
from protocols.pg.columns import document, optional_text, text
from protocols.pg.database import Database
from protocols.pg.notify import TASKS, notify
from protocols.pg.task_changes import Change, add_links, link, union
from protocols.pg.task_rows import (
    COLUMNS,
    Row,
    fence,
    flags,
    lock_graph,
    not_found,
    row,
    rows,
    task_id,
    tasks,
)
from protocols.tasks.board import NewTask, notify_owner
from protocols.tasks.graph import check_acyclic
from protocols.tasks.model import Task
from protocols.tasks.task import FAILED, FAILED_BY, ClaimResult, failed_by

if TYPE_CHECKING:
    from protocols.pg.mailbox import PgMailbox

log = logging.getLogger(__name__)

Conn = psycopg.Connection[Any]


class PgTaskBoard:
    """The task list of one team, in the store at `db`."""

    def __init__(self, db: Database, team: str, mailbox: PgMailbox | None = None) -> None:
        self.db = db
        self.team = text(team, "team name")
        self.mailbox = mailbox

    # reading

    def task_ids(self) -> builtins.list[int]:
        found = self.db.run(
            lambda c: c.execute(
                "SELECT id FROM tasks WHERE team = %s ORDER BY id", [self.team]
            ).fetchall()
        )
        return [r[0] for r in found]

    def get(self, task_id: str | int) -> Task | None:
        """The task, or None if there is none; an id that could name no task file (``../1``,
        ``a/b``) is refused as the file store refuses it (`InvalidName`)."""
        checked_component(str(task_id), "task id")
        number = _number(task_id)
        if number is None:
            return None
        found = self.db.run(lambda c: tasks(c, self.team, rows(c, self.team, [number])), "get")
        return found[0] if found else None

    def require(self, task_id: str | int) -> Task:
        task = self.get(task_id)
        if task is None:
            raise not_found(self.team, task_id)
        return task

    def epoch(self, task_id: str | int) -> int:
        """The task's current claim epoch."""
        return self.db.run(lambda c: row(c, self.team, task_id).epoch, "epoch")

    def list(self, include_internal: bool = False) -> builtins.list[Task]:
        """Every task by id; ``metadata._internal`` ones only when asked."""
        found = self.db.run(lambda c: tasks(c, self.team, rows(c, self.team)), "list tasks")
        return [t for t in found if include_internal or not t.internal]

    def rows(self, include_internal: bool = False) -> builtins.list[Task]:
        """`list`: one query is the cheapest look there is."""
        return self.list(include_internal)

    def task_metadata(self, task_id: str | int) -> dict[str, Any] | None:
        """The task's ``metadata`` (None: no such task)."""
        task = self.get(task_id)
        return None if task is None else task.metadata

    # creating

    def create(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> Task:
        """A new pending task, blocked by `blocked_by` from the start (one transaction)."""
        spec = NewTask(
            subject, description, active_form, metadata, tuple(map(str, blocked_by)), owner=owner
        )
        task = self.create_many([spec])[0]
        if owner is not None:
            self._notify_owner(task, actor=None)
        return task

    def create_file(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> dict[str, Any]:
        """`create`, as the task's JSON document (`TaskBoard.create_file`'s answer)."""
        task = self.create(subject, description, active_form, metadata, blocked_by, owner)
        return task.to_json_dict()

    def create_many(self, specs: Sequence[NewTask], key: str | None = None) -> builtins.list[Task]:
        """Create the tasks of `specs` with their dependencies and owners, in one transaction.
        A `key` of the caller's own (letters, digits, ``-``) makes the creation one however
        often it is called: a call whose key was used hands back the tasks it made."""
        if not specs:
            return []
        key = key or secrets.token_hex(8)
        for spec in specs:
            text(spec.subject, "task subject")
            text(spec.description, "task description")
            optional_text(spec.active_form, "task activeForm")
            optional_text(spec.owner, "task owner")
            for index in spec.after:
                if not 0 <= index < len(specs):
                    raise InvalidTaskUpdate(f"no task number {index} in this batch")

        def work(conn: Conn) -> builtins.list[Task]:
            lock_graph(conn, self.team)
            made = conn.execute(
                f"SELECT {COLUMNS} FROM tasks WHERE team = %s AND create_key LIKE %s ORDER BY id",
                [self.team, f"{key}:%"],
            ).fetchall()
            if made:  # this very call committed before its answer was lost
                return tasks(conn, self.team, [Row(*r) for r in made])
            first = conn.execute(
                "UPDATE teams SET next_task_id = next_task_id + %s WHERE name = %s "
                "RETURNING next_task_id - %s",
                [len(specs), self.team, len(specs)],
            ).fetchone()
            assert first is not None  # lock_graph found the team
            ids = [first[0] + n for n in range(len(specs))]
            existing = {r.id for r in rows(conn, self.team)}
            blockers: dict[int, builtins.list[int]] = {}
            for number, spec in zip(ids, specs, strict=True):
                mine = []
                for blocker in spec.blocked_by:
                    other = _number(blocker)
                    if other is None or other not in existing:
                        raise not_found(self.team, blocker)
                    mine.append(other)
                blockers[number] = union(mine, [ids[i] for i in spec.after])
            check_acyclic({str(k): [str(b) for b in v] for k, v in blockers.items()})
            for n, (number, spec) in enumerate(zip(ids, specs, strict=True)):
                internal, failed = flags(spec.metadata)
                conn.execute(
                    "INSERT INTO tasks (team, id, subject, description, active_form, owner, "
                    "metadata, internal, failed, create_key) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        self.team,
                        number,
                        spec.subject,
                        spec.description,
                        spec.active_form,
                        spec.owner,
                        document(spec.metadata) if spec.metadata else None,
                        internal,
                        failed,
                        f"{key}:{n}",
                    ],
                )
            link(conn, self.team, [(t, b) for t, bs in blockers.items() for b in bs])
            notify(conn, self.team, TASKS)  # idle workers look at the board
            return tasks(conn, self.team, rows(conn, self.team, ids))

        return self.db.run(work, "create tasks")

    # changing

    def update(
        self,
        task_id: str | int,
        *,
        actor: str | None = None,
        epoch: int | None = None,
        **fields: Any,
    ) -> Task | None:
        """Apply a TaskUpdate (Claude Code's field names, ``addBlocks``/``addBlockedBy``, other
        fields under ``metadata``), as `TaskBoard.update` does, in one transaction.

        With `epoch`, the change is fenced: it is made only while `actor` holds the task's claim
        of that epoch, else `StaleClaim`. A change of owner, or back to pending, starts a new
        epoch. ``status="deleted"`` deletes the task and returns None.
        """
        if fields.get("status") == "deleted":
            if epoch is not None:
                self.db.run(lambda c: fence(self.team, row(c, self.team, task_id), actor, epoch))
            if not self.delete(task_id):
                raise not_found(self.team, task_id)
            return None
        change = Change(fields, str(task_id))

        def work(conn: Conn) -> tuple[Row, Task]:
            if change.links:
                lock_graph(conn, self.team)
            before = row(conn, self.team, task_id, lock=True)
            if epoch is not None:
                fence(self.team, before, actor, epoch)
            if change.links:
                add_links(conn, self.team, before.id, change.add_blocks, change.add_blocked_by)
            after = change.apply(conn, self.team, before, actor)
            notify(conn, self.team, TASKS)
            return before, tasks(conn, self.team, [after])[0]

        before, task = self.db.run(work, f"update task #{task_id}")
        if task.owner and task.owner != before.owner:
            self._notify_owner(task, actor)
        return task

    def complete(self, task_id: str | int, agent: str, epoch: int) -> Task:
        """Mark the task completed, fenced by `agent`'s claim epoch (`StaleClaim` if stale)."""
        task = self.update(task_id, actor=agent, epoch=epoch, status="completed")
        assert task is not None
        return task

    def fail(self, task_id: str | int, reason: str, by: str | None) -> Task:
        """Mark the task failed: it stays unfinished, no idle worker claims it again."""
        mark = {"reason": reason, "by": by, "at": now_iso()}
        metadata: dict[str, Any] = {FAILED: mark}
        if by is not None:  # it does not take the task again by itself (`may_take`)
            current = self.get(task_id)
            metadata[FAILED_BY] = failed_by(current.metadata if current else None, by)
        task = self.update(task_id, metadata=metadata)
        assert task is not None
        return task

    def retry(self, task_id: str | int) -> Task:
        """Put a failed (or stuck) task back: pending, no owner, its failure cleared."""
        task = self.update(task_id, status="pending", owner=None, metadata={FAILED: None})
        assert task is not None
        return task

    def unlink(self, task_id: str | int, blocked_by: Sequence[str]) -> Task:
        """Task `task_id` no longer waits for `blocked_by` (what is not a dependency is left
        alone); the task after it. Claude Code has no such update: the bridge carries with it
        a dependency removed in a task file."""
        numbers = [n for n in (_number(b) for b in blocked_by) if n is not None]

        def work(conn: Conn) -> Task:
            found = row(conn, self.team, task_id, lock=True)
            if numbers:
                conn.execute(
                    "DELETE FROM task_deps WHERE team = %s AND task_id = %s "
                    "AND blocker_id = ANY(%s)",
                    [self.team, found.id, numbers],
                )
                notify(conn, self.team, TASKS)
            return tasks(conn, self.team, [found])[0]

        return self.db.run(work, f"remove dependencies of task #{task_id}")

    def delete(self, task_id: str | int) -> bool:
        """Remove the task (its id stays used) and its dependencies on both sides."""
        number = _number(task_id)
        if number is None:
            return False

        def work(conn: Conn) -> bool:
            found = conn.execute(
                "DELETE FROM tasks WHERE team = %s AND id = %s", [self.team, number]
            ).rowcount
            if found:
                notify(conn, self.team, TASKS)
            return found > 0

        return self.db.run(work, "delete task")

    # claiming

    def claim(
        self, task_id: str | int, agent: str, check_busy: bool = True, start: bool = True
    ) -> ClaimResult:
        """Make `agent` the owner if nobody else is, the task is open and unblocked."""
        token = secrets.token_hex(12)
        text(agent, "agent name")
        return self.db.run(
            lambda c: claims.claim(c, self.team, task_id, agent, check_busy, start, token),
            f"claim task #{task_id}",
        )

    def claim_next(
        self, agent: str, start: bool = True, labels: Collection[str] | None = None
    ) -> ClaimResult | None:
        """The lowest-id pending, unowned, unblocked, not failed task; None if there is none.
        With `labels`, only one `agent` may take (`protocols.tasks.task.may_take`)."""
        token = secrets.token_hex(12)
        text(agent, "agent name")
        return self.db.run(
            lambda c: claims.claim_next(c, self.team, agent, start, token, labels), "claim next"
        )

    def release_all(self, agent: str) -> builtins.list[Task]:
        """Return `agent`'s unfinished tasks to ``pending`` with no owner (not a failed one:
        it stays failed until retried); returns them."""

        def work(conn: Conn) -> builtins.list[Task]:
            released = claims.release(conn, self.team, agent)
            if released:
                notify(conn, self.team, TASKS)
            return tasks(conn, self.team, released)

        return self.db.run(work, "release")

    def _notify_owner(self, task: Task, actor: str | None) -> None:
        notify_owner(self.mailbox, task, actor)


def _number(value: str | int) -> int | None:
    return task_id(value)
