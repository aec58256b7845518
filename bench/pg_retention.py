"""History retention on PostgreSQL: how fast `protocols.pg.retention.prune` deletes, and what a
prune costs when there is nothing to delete (what the lead and each host pay every hour).

What it does
    A temporary PostgreSQL server (`tests/pg/pg_server.running`, fsync on) holds one team of
    ``--members`` members. Each gets ``--messages`` messages (inserted in bulk, as sends would
    leave them), of which 90% are read: half of those read 40 days ago, the rest now. Then:

    * a dry run (the counts);
    * one `prune` with the defaults (30 days, 5,000 read per member, batches of 500): rows
      deleted per second, and the batches;
    * the same `prune` again, with nothing left to delete, once the table is analyzed (as
      autovacuum does after many deletes): its time (median of 5), and the plan of the age
      batch's row choice (whether it uses the index ``messages_read_age``);
    * that the unread messages are all still there.

The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "pg"))

from pg_server import running

from protocols.pg import Database, PgTeamFile
from protocols.pg.retention import DEFAULT_BATCH, Retention, prune


def fill(db: Database, members: int, messages: int) -> None:
    team = PgTeamFile(db, "bench")
    team.create(description="retention", cwd=Path("."))
    for m in range(members):
        team.add_member(f"m{m}", cwd=Path("."))
    db.run(
        lambda c: c.execute(
            "INSERT INTO messages (team, recipient, msg_id, sender, entry, sent_at, read_at) "
            "SELECT 'bench', 'm' || r, 'id-' || r || '-' || i, 'team-lead', "
            "json_build_object('from', 'team-lead', 'text', 'message ' || i, "
            "'timestamp', to_char(now() - interval '41 days', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
            "'read', false), now() - interval '41 days', "
            "CASE WHEN i %% 10 = 0 THEN NULL WHEN i %% 2 = 0 THEN now() - interval '40 days' "
            "ELSE now() END "
            "FROM generate_series(0, %s - 1) AS r, generate_series(1, %s) AS i",
            [members, messages],
        )
    )
    db.run(lambda c: c.execute("ANALYZE messages"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--messages", type=int, default=20_000, help="per member")
    args = parser.parse_args()
    with running(fsync=True) as server:
        conninfo = server.create_database("bench")
        with Database(conninfo, reconnect_s=60.0) as db:
            fill(db, args.members, args.messages)
            unread = _count(db, "read_at IS NULL")
            total = _count(db, "TRUE")
            policy = Retention()
            dry = prune(db, "bench", policy, dry_run=True)
            start = time.perf_counter()
            done = prune(db, "bench", policy)
            took = time.perf_counter() - start
            assert done.counts["messages"] == dry.counts["messages"], (dry, done)
            assert _count(db, "read_at IS NULL") == unread
            db.run(lambda c: c.execute("ANALYZE messages"))  # as autovacuum would, after
            idle = []
            for _ in range(5):
                start = time.perf_counter()
                again = prune(db, "bench", policy)
                idle.append(time.perf_counter() - start)
                assert again.total == 0
            parts = {}
            for part, only in (("age", Retention(keep=None)), ("cap", Retention(days=None))):
                start = time.perf_counter()
                prune(db, "bench", only)
                parts[part] = (time.perf_counter() - start) * 1000
            plan = db.run(
                lambda c: c.execute(
                    "EXPLAIN SELECT seq FROM messages WHERE team = 'bench' AND read_at IS NOT "
                    "NULL AND read_at < now() - 30 * interval '1 day' LIMIT 500 "
                    "FOR UPDATE SKIP LOCKED"
                ).fetchall()
            )
            print("\n".join(row[0] for row in plan))
            uses_index = any("messages_read_age" in row[0] for row in plan)
            left = _count(db, "TRUE")
    deleted = done.counts["messages"]
    print(f"messages: {total} ({unread} unread); deleted {deleted} in {took:.2f} s")
    print(f"a prune with nothing to delete: median {statistics.median(idle) * 1000:.1f} ms")
    print(f"of which: age limits {parts['age']:.1f} ms, the cap {parts['cap']:.1f} ms")
    print(f"the age batch's plan uses messages_read_age: {uses_index}")
    print(
        f"messages_total={total} unread={unread} deleted={deleted} left={left} "
        f"batches={-(-deleted // DEFAULT_BATCH)} prune_s={took:.2f} "
        f"deleted_per_s={deleted / took:.0f} idle_prune_ms={statistics.median(idle) * 1000:.1f} "
        f"age_plan_uses_index={uses_index}"
    )


def _count(db: Database, where: str) -> int:
    row = db.run(lambda c: c.execute(f"SELECT count(*) FROM messages WHERE {where}").fetchone())
    return int(row[0]) if row else 0


if __name__ == "__main__":
    main()
