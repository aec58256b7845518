"""The live views on a PostgreSQL team: `swarm watch` redrawn on the team's notifications (in a
real tmux on its own socket), `swarm logs` and `--follow` reading the lines a teammate ships to
the store, `swarm attach` for a member on another host. Real `swarm` and teammate processes,
a real server (`conftest.pg_server`); waits are on a condition with a deadline."""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import new_session, screen, swarm, wait_for
from pg_cli import url_of

from protocols.paths import TeamPaths
from protocols.pg import Database, PgTeamFile
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


def elsewhere(config_root: Path, url: str) -> dict[str, str]:
    """The environment of a command on "another host": a config root of its own (no team files
    of t, no transcripts, no logs), the store given by $SWARM_STORE."""
    other = config_root.parent / "other-host"
    other.mkdir(exist_ok=True)
    return {"CLAUDE_CONFIG_DIR": str(other), "SWARM_STORE": url}


def start_swarm(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = {**os.environ, **env, "SWARM_TEAM": "t"}
    return subprocess.Popen(
        [sys.executable, "-m", "swarm", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=full,
    )


class Output:
    """What a process prints, read by a thread as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def test_logs_of_a_claude_teammate_read_on_another_host_from_the_store(
    url: str, config_root: Path, tmp_path: Path
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text(
        "- tool: SendMessage\n"
        "  input: {to: team-lead, message: \"schema $(done) 'é'\", summary: done}\n"
        "- text: All done here.\n"
    )
    spawned = swarm(
        "spawn", "alice", "-p", "say you are done", "--script", str(script),
        "--backend", "subprocess", "--cwd", str(tmp_path),
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr
    try:
        other = elsewhere(config_root, url)
        shown = wait_for(
            lambda: (
                "says: All done here." in (out := swarm("logs", "alice", env=other).stdout) and out
            ),
            "alice's reply in the log read on another host",
        )
        assert "→ SendMessage" in shown, shown
        assert "out to team-lead: schema $(done) 'é'" in shown, shown
        assert "joined team 't'" in shown, shown  # what its process printed
        process = swarm("logs", "alice", "--process", env=other)
        assert "alice joined team 't'" in process.stdout and "says:" not in process.stdout
        raw = swarm("logs", "alice", "--raw", env=other).stdout.splitlines()
        kinds = [json.loads(line)["kind"] for line in raw]
        assert "tool_call" in kinds and "response" in kinds and "output" not in kinds, kinds
        assert "request" not in kinds  # never the conversation itself
    finally:
        swarm("shutdown", "alice", "--force", "--wait", "10")


def test_logs_follow_on_another_host_prints_lines_as_the_teammate_ships_them(
    url: str, config_root: Path, tmp_path: Path
) -> None:
    spawned = swarm(
        "spawn", "bea", "--model", "shell", "-p", "work", "--backend", "subprocess",
        "--cwd", str(tmp_path),
    )  # fmt: skip
    assert spawned.returncode == 0, spawned.stderr
    follower = start_swarm("logs", "bea", "--follow", env=elsewhere(config_root, url))
    output = Output(follower)
    try:
        wait_for(lambda: "bea joined team 't'" in output.text, "bea's start followed")
        assert swarm("send", "bea", "ping $(rm -rf /) \x1b[31m").returncode == 0
        wait_for(lambda: "message from team-lead: ping" in output.text, "the message followed")
        assert "\x1b" not in output.text and "\\x1b[31m" in output.text  # escaped on screen
    finally:
        follower.kill()
        follower.wait(10)
        swarm("shutdown", "bea", "--force", "--wait", "10")


def test_attach_to_a_member_on_another_host_says_where_and_how_to_follow(
    url: str, config_root: Path, conninfo: str
) -> None:
    with Database(conninfo) as db:
        PgTeamFile(db, "t").add_member("carl", backend_type="tmux", tmux_pane_id="%1")
        before = swarm("attach", "carl", "--json")  # (--json: never exec tmux in this test)
        assert "another host" not in before.stdout + before.stderr  # no line shipped yet
        db.run(
            lambda c: c.execute(
                "INSERT INTO member_log (team, member, host, pid, line) "
                "VALUES ('t', 'carl', 'far-away', 4242, '{\"kind\": \"output\"}')"
            )
        )
    attached = swarm("attach", "carl", "--json")
    assert attached.returncode != 0
    assert "'carl' runs on another host, 'far-away' (pid 4242)" in attached.stderr
    assert "swarm logs carl --follow --team t" in attached.stderr
    assert "Traceback" not in attached.stderr
