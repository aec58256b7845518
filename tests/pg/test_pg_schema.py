"""The schema: versioned migrations applied once, under a lock, and never past what the code
knows."""

from __future__ import annotations

import psycopg
import pytest
from pg_procs import connect_and_migrate
from pg_server import TemporaryServer
from procs import forkserver_context, run_together

from protocols.errors import ProtocolsError
from protocols.pg import Database
from protocols.pg.schema import current_version, latest_version, migrate, migrations


def test_a_new_database_is_migrated_on_first_use_and_once(conninfo: str) -> None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        assert current_version(conn) == 0
        assert migrate(conn) == [m.version for m in migrations()]
        assert migrate(conn) == []
        assert current_version(conn) == latest_version() >= 1
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'swarm'"
            )
        }
    assert {"schema_version", "teams", "members", "messages", "tasks", "task_deps"} <= tables
    assert {"permission_requests", "member_status", "task_events"} <= tables


def test_many_processes_connecting_to_a_new_database_migrate_it_once(
    pg_server: TemporaryServer,
) -> None:
    conninfo = pg_server.create_database("fresh")
    reports = run_together(
        forkserver_context(), [(connect_and_migrate, (conninfo,)) for _ in range(8)], 120
    )
    assert reports == ["ok"] * 8
    with psycopg.connect(conninfo) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM swarm.schema_version")]
    assert versions == [m.version for m in migrations()]


def test_a_schema_newer_than_the_code_is_refused(conninfo: str) -> None:
    with Database(conninfo) as db:
        db.run(lambda c: c.execute("INSERT INTO schema_version VALUES (9999, 'future')"))
    with pytest.raises(ProtocolsError, match="version 9999, newer than this swarm knows"):
        Database(conninfo).run(lambda c: c.execute("SELECT 1"))
