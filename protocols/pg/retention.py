"""History retention for a team in PostgreSQL: what is deleted, when, and in what batches.

A read message stays in ``messages`` as the history (`PgMailbox.peek_all`), and finished work
leaves records behind (``task_events``, answered ``host_requests``, resolved
``permission_requests``, the shipped log of a member that left). Left alone these only grow.
`prune` deletes, for one team:

- read messages read more than `Retention.days` ago, and each recipient's read messages beyond
  its newest `Retention.keep`. An unread message is never deleted, whatever its age: every
  statement selects ``read_at IS NOT NULL``, and nothing ever marks a read message unread;
- ``task_events`` older than `days` of tasks that are completed or deleted;
- ``host_requests`` answered more than `days` ago, but those of members still in the roster;
- ``permission_requests`` resolved more than `days` ago;
- ``member_log`` lines older than `days` of members no longer in the roster (a member's own
  log is bounded already: `protocols.pg.member_log.KEEP`).

Each batch is one transaction of at most `Retention.batch` rows, chosen with ``FOR UPDATE SKIP
LOCKED``, so several pruners at once (the lead, every host, a ``swarm team prune``) take
different rows and never wait on each other, and a pruner cut off midway loses one batch's
work. Running it again deletes nothing more: it is idempotent. For each inbox pruned,
``history_pruned`` keeps the newest timestamp deleted (the entry's own), which the bridge reads
so as not to carry back a pruned message from a local inbox file (`pruned_through`).

The policy comes from ``$SWARM_HISTORY_DAYS`` (default 30; ``off``: no age limit) and
``$SWARM_HISTORY_KEEP`` (default 5,000 read messages per recipient; ``off``: no cap; at least
`SEND_UNLESS_HISTORY`, which compare-and-set sends look back on) of the process that prunes.
`Pruner` runs `prune` when due, for a process that loops anyway (the lead, a host agent).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from protocols.errors import InvalidSetting, ProtocolsError
from protocols.pg.database import Database
from protocols.pg.mailbox import SEND_UNLESS_HISTORY

Conn = psycopg.Connection[Any]

DAYS_ENV = "SWARM_HISTORY_DAYS"
KEEP_ENV = "SWARM_HISTORY_KEEP"
DEFAULT_DAYS = 30.0
DEFAULT_KEEP = 5000
DEFAULT_BATCH = 500
PRUNE_EVERY_S = 3600.0  # how often a `Pruner` prunes (sooner while a run left work behind)
MAX_BATCHES = 20  # batches per `Pruner` run: a loop that prunes is never held up for long

OFF = "off"


@dataclass(frozen=True)
class Retention:
    """What is kept: `days` (None: no age limit), `keep` read messages per recipient (None: no
    cap); deleted `batch` rows per transaction."""

    days: float | None = DEFAULT_DAYS
    keep: int | None = DEFAULT_KEEP
    batch: int = DEFAULT_BATCH

    def __post_init__(self) -> None:
        if self.days is not None and not self.days > 0:
            raise InvalidSetting(f"history days must be more than 0 (or {OFF}), not {self.days}")
        if self.keep is not None and self.keep < SEND_UNLESS_HISTORY:
            raise InvalidSetting(
                f"history keep must be at least {SEND_UNLESS_HISTORY} read messages per "
                f"recipient (or {OFF}), not {self.keep}: compare-and-set sends look back on them"
            )
        if self.batch < 1:
            raise InvalidSetting(f"the batch must be at least 1 row, not {self.batch}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Retention:
        """The policy of ``$SWARM_HISTORY_DAYS`` and ``$SWARM_HISTORY_KEEP``; `given` (days,
        keep, batch) wins over them. `InvalidSetting` for a value that is not a number."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "days": _setting(env, DAYS_ENV, float, DEFAULT_DAYS),
            "keep": _setting(env, KEEP_ENV, int, DEFAULT_KEEP),
        }
        values.update(given)
        return cls(**values)


def _setting(env: Mapping[str, str], name: str, kind: Callable[[str], Any], default: Any) -> Any:
    raw = env.get(name, "").strip()
    return default if not raw else setting(raw, f"${name}", kind)


def setting(raw: str, what: str, kind: Callable[[str], Any]) -> Any:
    """`raw` as a number of `kind`, or None for ``off``; `InvalidSetting` names `what`."""
    if raw.strip().lower() == OFF:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise InvalidSetting(f"{what} must be a number or {OFF!r}, not {raw!r}") from None


@dataclass
class Pruned:
    """What one `prune` deleted (or, dry, would delete), per kind of row; `more`: it stopped at
    `max_batches` with rows left."""

    counts: dict[str, int] = field(default_factory=dict)
    more: bool = False

    def add(self, what: str, n: int) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    @property
    def total(self) -> int:
        return sum(self.counts.values())


KINDS = ("messages", "task_events", "host_requests", "permission_requests", "member_log")

_AGE = "%s * interval '1 day'"

# each kind's rows past `days`: (table, its key, the WHERE clause, with team and days to bind)
_OLD: dict[str, tuple[str, str, str]] = {
    "messages": (
        "messages",
        "seq",
        f"team = %s AND read_at IS NOT NULL AND read_at < now() - {_AGE}",
    ),
    "task_events": (
        "task_events",
        "seq",
        f"team = %s AND at < now() - {_AGE} AND NOT EXISTS (SELECT 1 FROM tasks t "
        "WHERE t.team = task_events.team AND t.id = task_events.task_id "
        "AND t.status <> 'completed')",
    ),
    "host_requests": (
        "host_requests",
        "id",
        f"team = %s AND state <> 'pending' AND answered_at < now() - {_AGE} AND NOT EXISTS "
        "(SELECT 1 FROM members m WHERE m.team = host_requests.team "
        "AND m.name = host_requests.member)",
    ),
    "permission_requests": (
        "permission_requests",
        "id",
        f"team = %s AND status <> 'pending' AND resolved_at < now() - {_AGE}",
    ),
    "member_log": (
        "member_log",
        "seq",
        f"team = %s AND written_at < now() - {_AGE} AND NOT EXISTS (SELECT 1 FROM members m "
        "WHERE m.team = member_log.team AND m.name = member_log.member)",
    ),
}


def prune(
    db: Database,
    team: str,
    policy: Retention | None = None,
    *,
    dry_run: bool = False,
    max_batches: int | None = None,
) -> Pruned:
    """Delete what `policy` (default: `Retention.from_env`) no longer keeps of `team` (module
    doc), batch by batch; with `dry_run`, count it and delete nothing. `max_batches` stops after
    that many batches (``Pruned.more`` then says rows are left)."""
    policy = policy or Retention.from_env()
    result = Pruned({kind: 0 for kind in KINDS})
    budget = [max_batches]

    def spend() -> bool:
        if budget[0] is None:
            return True
        if budget[0] <= 0:
            result.more = True
            return False
        budget[0] -= 1
        return True

    if policy.days is not None:
        for kind in KINDS:
            table, key, where = _OLD[kind]
            args = [team, policy.days]
            if dry_run:
                result.add(kind, _count(db, f"SELECT count(*) FROM {table} WHERE {where}", args))
                continue
            while spend():
                n = _batch(db, team, table, key, where, args, policy.batch, kind)
                result.add(kind, n)
                if n < policy.batch:
                    break
    if policy.keep is not None:
        _prune_beyond_cap(db, team, policy, dry_run, result, spend)
    return result


def _prune_beyond_cap(
    db: Database,
    team: str,
    policy: Retention,
    dry_run: bool,
    result: Pruned,
    spend: Callable[[], bool],
) -> None:
    """Each recipient's read messages beyond its newest `policy.keep`. The rows beyond are
    chosen on the statement's snapshot (no lock), so concurrent pruners agree on them, and
    newer reads only push more rows beyond: never fewer than `keep` read messages stay."""
    keep = int(policy.keep or 0)
    if dry_run:  # among those the age limit leaves, as a real run prunes by age first
        young = "" if policy.days is None else f"AND NOT read_at < now() - {_AGE}"
        query = (
            "SELECT count(*) FROM (SELECT row_number() OVER (PARTITION BY recipient "
            "ORDER BY seq DESC) AS newest FROM messages WHERE team = %s "
            f"AND read_at IS NOT NULL {young}) AS read WHERE newest > %s"
        )
        args: list[Any] = [team] + ([] if policy.days is None else [policy.days]) + [keep]
        result.add("messages", _count(db, query, args))
        return
    over = db.run(
        lambda c: c.execute(
            "SELECT recipient FROM messages WHERE team = %s AND read_at IS NOT NULL "
            "GROUP BY recipient HAVING count(*) > %s ORDER BY recipient",
            [team, keep],
        ).fetchall(),
        "count read messages",
    )
    where = (
        "team = %s AND read_at IS NOT NULL AND seq IN (SELECT seq FROM messages "
        "WHERE team = %s AND recipient = %s AND read_at IS NOT NULL ORDER BY seq DESC OFFSET %s)"
    )
    for (recipient,) in over:
        args = [team, team, recipient, keep]
        while spend():
            n = _batch(db, team, "messages", "seq", where, args, policy.batch, "messages")
            result.add("messages", n)
            if n < policy.batch:
                break


def _batch(
    db: Database,
    team: str,
    table: str,
    key: str,
    where: str,
    args: list[Any],
    batch: int,
    kind: str,
) -> int:
    """`_delete` in a transaction of its own."""
    return db.run(lambda c: _delete(c, team, table, key, where, args, batch, kind), f"prune {kind}")


def _count(db: Database, query: str, args: list[Any]) -> int:
    row = db.run(lambda c: c.execute(query, args).fetchone(), "count")
    return int(row[0]) if row else 0


def _delete(
    conn: Conn,
    team: str,
    table: str,
    key: str,
    where: str,
    args: list[Any],
    batch: int,
    kind: str,
) -> int:
    """One batch: at most `batch` rows of `table` matching `where`, locked with SKIP LOCKED,
    deleted; for messages, the watermark of each inbox pruned moves on."""
    returning = ", recipient, sent_at, entry->>'timestamp'" if kind == "messages" else ""
    rows = conn.execute(
        f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {where} "
        f"LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING {key}{returning}",  # any order: an index
        [*args, batch],
    ).fetchall()
    if kind == "messages" and rows:
        newest: dict[str, tuple[datetime, int]] = {}
        for _, recipient, sent_at, stamp in rows:
            sent = entry_time(stamp) or sent_at  # the entry's own clock, as the files have it
            at, n = newest.get(recipient, (sent, 0))
            newest[recipient] = (max(at, sent), n + 1)
        conn.cursor().executemany(
            "INSERT INTO history_pruned (team, recipient, through, messages) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (team, recipient) DO UPDATE SET "
            "through = greatest(history_pruned.through, excluded.through), "
            "messages = history_pruned.messages + excluded.messages",
            [(team, r, at, n) for r, (at, n) in sorted(newest.items())],
        )
    return len(rows)


def entry_time(stamp: str | None) -> datetime | None:
    """An inbox entry's ``timestamp`` as an aware time (None: missing, or does not parse)."""
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def pruned_through(db: Database, team: str, recipient: str) -> datetime | None:
    """The newest timestamp of a message pruned from `recipient`'s inbox (None: none was)."""
    row = db.run(
        lambda c: c.execute(
            "SELECT through FROM history_pruned WHERE team = %s AND recipient = %s",
            [team, recipient],
        ).fetchone(),
        "history pruned",
    )
    return row[0] if row else None


class Pruner:
    """`prune` when due, for a loop that runs anyway: at the first call, then every
    `every_s` seconds (at the next call while a run stopped at `MAX_BATCHES` with rows left).
    Its failures are said through `say` and tried again when next due."""

    def __init__(
        self,
        db: Database,
        team: str,
        say: Callable[[str], None],
        policy: Retention | None = None,
        every_s: float = PRUNE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.team = team
        self.say = say
        self.policy = policy
        self.every_s = every_s
        self.clock = clock
        self._due = clock()

    def maybe(self) -> Pruned | None:
        """Prune if due; what it deleted (None: not due, or it failed)."""
        now = self.clock()
        if now < self._due:
            return None
        self._due = now + self.every_s
        try:
            pruned = prune(self.db, self.team, self.policy, max_batches=MAX_BATCHES)
        except ProtocolsError as exc:  # a bad setting, or the server away: said, tried later
            self.say(f"history retention: {exc}")
            return None
        if pruned.more:
            self._due = now
        return pruned
