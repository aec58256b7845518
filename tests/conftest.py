"""Shared pytest fixtures: an isolated config root for every test, teams, the Claude Code sample.

Every test runs with ``CLAUDE_CONFIG_DIR`` pointing at its own temporary directory, so nothing
touches the real ``~/.claude``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Processes, claude_env, teammate_argv
from hypothesis import settings

from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from teammate.tools.base import ToolContext

FIXTURES = Path(__file__).parent / "fixtures" / "cc-2.1.88"
REAPER_VARIABLE = "SWARM_TEST_RUN"  # `tests/reaper.py`'s
REAPER = pytest.StashKey[subprocess.Popen[bytes]]()

# tests/pg's helpers (a temporary PostgreSQL server, `swarm` against it) serve tests elsewhere
# too (the lead scenarios on a PostgreSQL team); pytest puts tests/pg on the path only once it
# collects a test there
PG_HELPERS = str(Path(__file__).parent / "pg")
if PG_HELPERS not in sys.path:
    sys.path.append(PG_HELPERS)

# no timing assertions: hypothesis's per-example deadline (200 ms) would fail a property test
# on a machine busy with the process tests running beside it
settings.register_profile("swarm", deadline=None)
settings.load_profile("swarm")


def pytest_configure(config: pytest.Config) -> None:
    """In the runner (not in an xdist worker, which inherits both): mark every process the run
    will start with a token in its environment, and start the reaper that kills them all once
    the runner is gone, however it ends (`tests/reaper.py`)."""
    if hasattr(config, "workerinput") or os.environ.get(REAPER_VARIABLE):
        return
    token = uuid.uuid4().hex
    os.environ[REAPER_VARIABLE] = token
    reaper = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("reaper.py")), token, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C at the terminal is the runner's, not the reaper's
    )
    config.stash[REAPER] = reaper  # it outlives this process, by design


# files of long tests not marked slow (the longest in `make test`'s --durations): run early too
LONG_FILES = frozenset(
    {
        "test_bench_smoke.py",
        "test_docs.py",
        "test_mcp.py",
        "test_team_gone.py",
        "test_web_page_actions.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run four at a time (the Makefile hands each worker one test at a time, in this order),
    the long tests go first (next to real Claude Code, then the stress and crash runs and the
    other long ones) and the short ones after them in their usual order, so that the long ones
    run side by side and at the end the short ones fill the gaps instead of one long test
    running alone."""

    def rank(item: pytest.Item) -> int:
        if "interop" in item.path.parts:
            return 0
        long = item.get_closest_marker("slow") or item.path.name in LONG_FILES
        return 1 if long or "stress" in item.path.parts else 2

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def config_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test: its own config root and home, and its temporary directory as the working
    directory (a `swarm task add` records where it was typed: its command runs there, never in
    the checkout)."""
    root = tmp_path / "claude-config"
    root.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return root


@pytest.fixture
def cc_root(config_root: Path) -> Path:
    """The Claude Code 2.1.88 sample tree, copied into the test's config root."""
    shutil.copytree(FIXTURES, config_root, dirs_exist_ok=True)
    return config_root


@pytest.fixture
def paths(config_root: Path) -> TeamPaths:
    return TeamPaths(config_root, "t")


@pytest.fixture
def team(paths: TeamPaths, tmp_path: Path) -> TeamFile:
    """Team ``t`` with members alice, bob and carol besides the lead."""
    team_file = TeamFile(paths)
    team_file.create(description="test team", cwd=tmp_path)
    for name in ("alice", "bob", "carol"):
        team_file.add_member(name, cwd=tmp_path)
    return team_file


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Processes]:
    """Processes a test starts in its temporary directory; whatever still runs is killed after."""
    processes = Processes(tmp_path)
    yield processes
    processes.close()


@pytest.fixture
def start(team: TeamFile, workdir: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start Claude teammates (model sonnet) of team ``t`` in `workdir`, talking to a test
    Messages API server: ``start(name, api, *flags, env={...})``; killed after the test."""
    processes = Processes(workdir)

    def launch(
        name: str, api: Any, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        environ = {**claude_env(api.url), **(env or {})}
        return processes.start(teammate_argv(name, *extra, model="sonnet"), environ)

    yield launch
    processes.close()


@pytest.fixture
def workers(workdir: Path) -> Iterator[Processes]:
    """Processes a test starts in `workdir`; whatever still runs is killed after."""
    processes = Processes(workdir)
    yield processes
    processes.close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty working directory for the processes a test starts."""
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A real headless Chromium (`chromium.Chromium`) for the test; closed after it. A module
    that uses it is marked `chromium.NEEDS_CHROMIUM` (skipped where there is none)."""
    from chromium import Chromium

    opened = Chromium(tmp_path / "chromium")
    yield opened
    opened.close()


@pytest.fixture
def ctx(workdir: Path) -> ToolContext:
    """A tool context in `workdir`, with no team."""
    return ToolContext(cwd=workdir)


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private tmux server for this test only (swarm's tmux backend uses it); killed after."""
    socket = f"swarm-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.setenv("SWARM_TMUX_SOCKET", socket)
    monkeypatch.setenv("SHELL", "/bin/sh")
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


# PostgreSQL (tests/pg/conftest.py has the rest of its fixtures)


def postgresql_required() -> bool:
    """Must the PostgreSQL tests run (CI, or ``make test`` once it installed the server)?"""
    return bool(os.environ.get("CI")) or os.environ.get("SWARM_REQUIRE_POSTGRESQL") == "1"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """This pytest process's PostgreSQL server (tests/pg/conftest.py says why one per process);
    without its binaries the test is skipped, saying how to install them, unless
    `postgresql_required`, where that is a failure."""
    from pg_server import ServerUnavailable, TemporaryServer

    try:
        server = TemporaryServer()
    except ServerUnavailable as exc:
        if postgresql_required():
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def conninfo(pg_server: Any) -> str:
    """A new, empty database on the session's server."""
    return str(pg_server.create_database("test"))
