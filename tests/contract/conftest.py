"""The store contract's suite (`protocols.store.contract`): every test here runs once on a team
in files and once on a team in a real PostgreSQL server, through the contract alone.

A test that holds for one store only (how the files look, a lost connection, a notification)
stays with that store's tests: `tests/unit` for files, `tests/pg` for PostgreSQL. The
PostgreSQL half is skipped without PostgreSQL's binaries, as `tests/pg` is (a failure under
``make test``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import url_of

from protocols.paths import TeamPaths
from protocols.store.contract import StoreContract
from protocols.store.selection import open_store

MEMBERS = ("alice", "bob", "carol")


@pytest.fixture(params=["files", "postgresql"])
def store_paths(request: pytest.FixtureRequest, config_root: Path) -> TeamPaths:
    """Team ``t``'s paths, on files or on the test's own PostgreSQL database."""
    if request.param == "files":
        return TeamPaths(config_root, "t")
    url = url_of(request.getfixturevalue("conninfo"))
    return TeamPaths(config_root, "t", store=url)


@pytest.fixture
def store(store_paths: TeamPaths, tmp_path: Path) -> Iterator[StoreContract]:
    """Team ``t`` with alice, bob and carol besides the lead, in the store of this run."""
    opened = open_store(store_paths)
    team = opened.team_file()
    team.create(description="contract team", cwd=tmp_path)
    for name in MEMBERS:
        team.add_member(name, cwd=tmp_path)
    yield opened
    opened.close_thread_connection()
