"""The store's schema: the versioned SQL files in ``migrations/`` (``NNNN_name.sql``), applied
in order when a `Database` first connects.

All of it lives in the PostgreSQL schema ``swarm``, with a ``schema_version`` table that lists
the versions applied. Migrating runs in one transaction under a transaction-level advisory
lock, so many processes connecting at once to a new database apply each version once, and a
failure leaves the schema as it was. A database whose schema is newer than this code is refused.

A tool was not worth its weight here: alembic needs SQLAlchemy, yoyo-migrations brings its own
lock table and dependencies; the whole job is this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from protocols.errors import ProtocolsError

SCHEMA = "swarm"
LOCK_KEY = 0x5357_524D_0001  # pg_advisory_xact_lock's key for migrating
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """Every migration shipped with this code, by version."""
    found = []
    for item in (resources.files("protocols.pg") / "migrations").iterdir():
        match = _FILE.match(item.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), item.read_text("utf-8")))
    return sorted(found, key=lambda m: m.version)


def latest_version() -> int:
    return max((m.version for m in migrations()), default=0)


def current_version(conn: psycopg.Connection) -> int:
    """The highest version applied (0 for a database without swarm's schema)."""
    row = conn.execute("SELECT to_regclass(%s)", [f"{SCHEMA}.schema_version"]).fetchone()
    if row is None or row[0] is None:
        return 0
    found = conn.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.schema_version")
    version = found.fetchone()
    return int(version[0]) if version else 0


def migrate(conn: psycopg.Connection) -> list[int]:
    """Bring the database to `latest_version`; returns the versions applied (none if current).

    `conn` is in autocommit mode; the work is one transaction of its own."""
    latest = latest_version()
    if current_version(conn) == latest:
        return []
    applied = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA}.schema_version ("
            "version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = current_version(conn)  # again, under the lock
        if current > latest:
            raise ProtocolsError(
                f"the database's swarm schema is at version {current}, newer than this swarm "
                f"knows (up to {latest}); upgrade swarm to use it"
            )
        conn.execute(f"SET LOCAL search_path TO {SCHEMA}")
        for migration in migrations():
            if migration.version <= current:
                continue
            conn.execute(migration.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                [migration.version, migration.name],
            )
            applied.append(migration.version)
    return applied
