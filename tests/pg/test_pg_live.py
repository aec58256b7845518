"""The live views on a PostgreSQL team: `swarm watch` redrawn on the team's notifications (in a
real tmux on its own socket), `swarm logs` and `--follow` reading the lines a teammate ships to
the store, `swarm attach` for a member on another host. Real `swarm` and teammate processes,
a real server (`conftest.pg_server`); waits are on a condition with a deadline."""

from __future__ import annotations

import multiprocessing
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from helpers import new_session, screen, swarm, wait_for
from test_pg_commands import url_of

from protocols.paths import TeamPaths
from protocols.pg.store import PgStore

pytestmark = pytest.mark.slow


@pytest.fixture
def url(conninfo: str, config_root: Path) -> str:
    """Team ``t`` created on PostgreSQL by ``swarm team create --store``: its URL."""
    store = url_of(conninfo)
    made = swarm("team", "create", "t", "--store", store, team=None)
    assert made.returncode == 0, made.stderr
    return store


def add_task_elsewhere(url: str, subject: str) -> None:
    """A task added by another process (the `spawn` context: a fresh interpreter)."""
    from protocols.pg import Database, PgTaskBoard

    with Database(url) as db:
        PgTaskBoard(db, "t").create(subject, "from another process")


def test_the_team_watcher_wakes_on_a_change_made_by_another_process(
    url: str, config_root: Path
) -> None:
    store = PgStore(TeamPaths(config_root, "t", store=url))
    with store.team_watcher(rescan_s=3600) as watcher:  # the rescan cannot be what wakes it
        watcher.clear()
        assert not watcher.wait(0.05)  # nothing happened: no wake
        child = multiprocessing.get_context("spawn").Process(
            target=add_task_elsewhere, args=(url, "from afar")
        )
        child.start()
        child.join(60)
        assert child.exitcode == 0
        assert wait_for(lambda: watcher.wait(1.0), "the watcher woken by the new task")
        watcher.clear()
        assert swarm("send", "team-lead", "a message").returncode == 0
        assert wait_for(lambda: watcher.wait(1.0), "the watcher woken by the message")


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")
def test_swarm_watch_redraws_what_other_processes_change(
    url: str, config_root: Path, tmux_socket: str
) -> None:
    command = shlex.join([sys.executable, "-m", "swarm", "watch", "--team", "t"])
    root = shlex.quote(str(config_root))
    new_session(tmux_socket, "watch", f"env CLAUDE_CONFIG_DIR={root} {command}", (120, 40))
    wait_for(lambda: "team t" in screen(tmux_socket, "watch"), "the dashboard's first frame")
    subject = "ship it $(whoami) 'é'"
    assert swarm("task", "add", subject).returncode == 0
    wait_for(lambda: subject in screen(tmux_socket, "watch"), "the new task on screen")
    assert swarm("send", "team-lead", "hello from another host").returncode == 0
    wait_for(
        lambda: "hello from another host" in screen(tmux_socket, "watch"),
        "the message to the lead on screen",
    )
    shown = screen(tmux_socket, "watch")
    assert subject in shown and "team t" in shown
