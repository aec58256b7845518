"""Idle load on the database: what 50 idle teammates of a PostgreSQL team ask the server, beside
the heartbeats they must send, and their CPU beside as many idle teammates on files.

What it does
    A temporary PostgreSQL server (`tests/pg/pg_server.running`, ``pg_stat_statements``
    preloaded) holds one team; ``--count`` shell teammates (subprocesses, `spawn_member` as
    ``swarm spawn --backend subprocess`` does) join it with the store's URL in their
    environment, so they run on PostgreSQL. Beside it, a team of as many shell teammates on
    files (a temporary config root). Once every teammate of both is idle (inactive, inbox
    read), for a ``--seconds`` window:

    * every statement the server executes for the team's database (``pg_stat_statements``,
      reset at the window's start; the benchmark's own look at the statistics left out), per
      kind: the lease heartbeat, the sweep of expired leases, ``BEGIN``/``COMMIT``, and each
      other statement by its text (``pg_stat_database``'s transaction counts are not used:
      a backend reports them up to 10 s late);
    * the user+system CPU of every teammate of both teams (from /proc), as a percentage of one
      core.

    The baseline for the statements is the heartbeats an idle team needs: one per member per
    third of its lease (`protocols.pg.leases.DEFAULT_LEASE_S` / 3 = 10 s), so 5 per second for
    50 teammates. Target: nothing else per second beyond them (``other``, below, under 10% of
    the heartbeats: a rescan now and then is the safety net).

The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchkit import verdict
from idle_cpu import alive, cpu_seconds, settle

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "pg"))

from pg_server import running

from protocols import TeamPaths
from protocols.pg.leases import DEFAULT_LEASE_S
from protocols.store.selection import STORE_ENV, open_store
from swarm.team.lifecycle import spawn_member
from teammate.options import MemberSpec

OTHER_TARGET = 0.10  # of the heartbeat rate
STATS = {"shared_preload_libraries": "'pg_stat_statements'", "pg_stat_statements.max": "1000"}


def url_of(conninfo: str) -> str:
    """The temporary server's conninfo as the ``postgresql://`` URL a team is created with."""
    info = dict(part.split("=", 1) for part in conninfo.split())
    host = quote(info["host"], safe="")
    return f"postgresql://{info['user']}@/{info['dbname']}?host={host}&port={info['port']}"


def kind(query: str) -> str:
    """What a statement is for, from its text."""
    flat = " ".join(query.split())
    if "SET lease_expires_at" in flat:
        return "heartbeat"
    if "lease_expires_at < now()" in flat:
        return "sweep"
    if flat.upper() in ("BEGIN", "COMMIT", "ROLLBACK"):
        return "begin/commit"
    return "other: " + flat[:90]


class Team:
    """`count` idle shell teammates of one team (on PostgreSQL when `url` is given)."""

    def __init__(self, root: Path, team: str, url: str | None) -> None:
        self.paths = TeamPaths(root, team, store=url)
        self.store = open_store(self.paths)
        self.store.team_file().create(description="idle load")
        self.names: list[str] = []
        self.pids: list[int] = []

    def grow(self, count: int) -> None:
        spec = MemberSpec(backend="subprocess", cwd=str(self.paths.root))
        while len(self.names) < count:
            name = f"w{len(self.names)}"
            _, spawned = spawn_member(self.paths, name, "Nothing to do yet.", spec)
            self.names.append(name)
            self.pids.append(spawned.pid)

    def settle(self, timeout: float = 600) -> None:
        settle(self.paths, self.names, timeout)

    def stop(self) -> None:
        """SIGTERM to every teammate, SIGKILL to what is left after 60 s."""
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(alive(p) for p in self.pids):
            time.sleep(0.2)
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def statements(conn: Any, dbname: str) -> Counter[str]:
    """Calls per statement kind in `dbname` since the last reset (this look left out)."""
    rows = conn.execute(
        "SELECT query, calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
        "WHERE d.datname = %s",
        [dbname],
    ).fetchall()
    counts: Counter[str] = Counter()
    for query, calls in rows:
        if "pg_stat" not in query:
            counts[kind(query)] += int(calls)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50, help="idle teammates per team")
    parser.add_argument("--seconds", type=float, default=30.0, help="the measuring window")
    args = parser.parse_args()
    import psycopg

    with (
        running(fsync=True, settings=STATS) as server,
        tempfile.TemporaryDirectory(prefix="swarm-bench-pgidle-") as tmp,
    ):
        root = Path(tmp)
        os.environ["CLAUDE_CONFIG_DIR"] = tmp
        os.environ.pop("TMUX", None)
        os.environ.pop(STORE_ENV, None)
        conninfo = server.create_database("idle")
        dbname = conninfo.rsplit("dbname=", 1)[1]
        stats = psycopg.connect(conninfo, autocommit=True)
        stats.execute("CREATE EXTENSION pg_stat_statements")
        print(f"PostgreSQL {server.version()} at {server.host} (temporary)")
        on_pg, on_files = Team(root, "idle-pg", url_of(conninfo)), Team(root, "idle-files", None)
        try:
            print(f"spawning {args.count} shell teammates on PostgreSQL, {args.count} on files")
            on_pg.grow(args.count)
            on_files.grow(args.count)
            on_pg.settle()
            on_files.settle()
            # one heartbeat period more: each teammate's heartbeat thread opens its connection
            # at its first beat, which is start-up, not idling
            time.sleep(DEFAULT_LEASE_S / 3)
            print(f"all idle; measuring {args.seconds:g} s")
            stats.execute("SELECT pg_stat_statements_reset()")
            cpu0 = {"pg": cpu_seconds(on_pg.pids), "files": cpu_seconds(on_files.pids)}
            started = time.monotonic()
            time.sleep(args.seconds)  # the measuring window itself, not a wait for a condition
            elapsed = time.monotonic() - started
            cpu = {
                "pg": (cpu_seconds(on_pg.pids) - cpu0["pg"]) / elapsed * 100,
                "files": (cpu_seconds(on_files.pids) - cpu0["files"]) / elapsed * 100,
            }
            counts = statements(stats, dbname)
        finally:
            on_pg.stop()
            on_files.stop()
        stats.close()
    report(args, counts, elapsed, cpu)


def report(
    args: argparse.Namespace,
    counts: Counter[str],
    elapsed: float,
    cpu: dict[str, float],
) -> None:
    expected = args.count / (DEFAULT_LEASE_S / 3)
    rate = {k: v / elapsed for k, v in counts.items()}
    heartbeat, sweep = rate.pop("heartbeat", 0.0), rate.pop("sweep", 0.0)
    begin_commit = rate.pop("begin/commit", 0.0)
    other = sum(rate.values())
    total = heartbeat + sweep + begin_commit + other
    print()
    print(f"{args.count} idle teammates, {elapsed:.1f} s window; statements per second:")
    print(f"  heartbeat      {heartbeat:7.2f}   baseline (needed): {expected:.2f}")
    print(f"  sweep          {sweep:7.2f}")
    print(f"  begin/commit   {begin_commit:7.2f}")
    for what, value in sorted(rate.items(), key=lambda kv: -kv[1]):
        print(f"  {value:7.2f}  {what}")
    print(f"  all            {total:7.2f}")
    beyond = sweep + other
    ok = beyond <= OTHER_TARGET * expected
    print(
        f"beyond heartbeats: {beyond:.2f}/s (sweeps and others) vs the heartbeats' {expected:.2f}/s"
        f"  target < {OTHER_TARGET * expected:.2f}/s  {verdict(ok)}"
    )
    print(
        f"CPU of the {args.count} idle teammates: PostgreSQL {cpu['pg']:.2f}% of a core, "
        f"files {cpu['files']:.2f}% (same window)"
    )
    pairs = {
        "teammates": str(args.count),
        "heartbeats_per_s": f"{heartbeat:.2f}",
        "expected_heartbeats_per_s": f"{expected:.2f}",
        "sweeps_per_s": f"{sweep:.2f}",
        "other_per_s": f"{other:.2f}",
        "statements_per_s": f"{total:.2f}",
        "pg_cpu_percent": f"{cpu['pg']:.2f}",
        "file_cpu_percent": f"{cpu['files']:.2f}",
        "verdict": verdict(ok),
    }
    print(" ".join(f"{key}={value}" for key, value in pairs.items()))


if __name__ == "__main__":
    main()
