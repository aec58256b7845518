"""Fixtures for the PostgreSQL store's tests: a real server, a fresh database per test.

The server and the database (``pg_server``, ``conninfo``) are in tests/conftest.py, for tests
elsewhere too (the lead scenarios on a PostgreSQL team). One server per pytest process, started
the first time a test asks for it and stopped at the end of the session (`pg_server.TemporaryServer`: initdb into a temporary directory, a Unix
socket only, as the ``postgres`` user when we are root). Under pytest-xdist every worker is its
own pytest process and so starts its own server, rather than sharing one: a test restarts the
server (`test_restart.py`) and must cut only its own clients, never another worker's tests
mid-transaction, and a server per worker needs no cross-process start-up or shutdown
coordination. A server costs about two seconds to start and 40 MB.
Inside one server each test gets a database of its own (``CREATE DATABASE``, about 0.1 s), so no
test sees another's rows, and the schema is migrated by the test's first connection as in use.

Without PostgreSQL's binaries the tests are skipped, saying how to install them, except under
CI (``CI`` set) or with ``SWARM_REQUIRE_POSTGRESQL=1`` (``make test`` sets it once it has
installed them), where that is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cli import ok, swarm, url_of

from protocols.pg import Database, PgTeamFile


@pytest.fixture
def db(conninfo: str) -> Iterator[Database]:
    database = Database(conninfo, reconnect_s=60.0)
    yield database
    database.close()


@pytest.fixture
def pg_team(db: Database, tmp_path: Path) -> PgTeamFile:
    """Team ``t`` in the store, with alice, bob and carol besides the lead."""
    team = PgTeamFile(db, "t")
    team.create(description="test team", cwd=tmp_path)
    for name in ("alice", "bob", "carol"):
        team.add_member(name, cwd=tmp_path)
    return team


@pytest.fixture
def url(conninfo: str) -> str:
    """The test's database as a store URL."""
    return url_of(conninfo)


@pytest.fixture
def home(workdir: Path) -> Path:
    """The directory the `swarm` commands of a test run in."""
    return workdir


@pytest.fixture
def pg_team_t(url: str, home: Path, config_root: Path) -> Iterator[str]:
    """Team ``t`` created on PostgreSQL by ``swarm team create --store`` (a pointer here);
    deleted after (its teammates shut down). Its URL."""
    ok(swarm("team", "create", "t", "--store", url, cwd=home, team=None))
    yield url
    swarm("team", "delete", "t", "--force", cwd=home, team=None)
