"""`swarm attach NAME` with real tmux servers and subprocess teammates: from outside tmux it
attaches a terminal to the teammate's pane, inside tmux it switches the client there, for a
subprocess teammate it follows the log until Ctrl-C; --json says what it would do. Also
`swarm send` to a dead member, and --json of spawn, restart and shutdown."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ctrl_c_obeyed, swarm, tmux, wait_for

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.team.file import TeamFile

needs_tmux = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


@pytest.fixture
def outer() -> Iterator[str]:
    """A second tmux server: the terminal a person runs `swarm attach` in."""
    socket = f"swarm-term-{uuid.uuid4().hex[:8]}"
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def spawned(name: str, backend: str) -> dict[str, object]:
    result = swarm("spawn", name, "-p", "Work the board.", "--backend", backend, "--json")
    assert result.returncode == 0, result.stderr
    started: dict[str, object] = json.loads(result.stdout)
    return started


def swarm_command(*args: str) -> str:
    """A `swarm` command line for a tmux pane (no shell quoting needed: plain words only)."""
    return " ".join([sys.executable, "-m", "swarm", *args, "--team", "t"])


def terminal(socket: str, command: str) -> None:
    """A terminal running `command`: a session of the tmux server `socket`."""
    size = ["-x", "120", "-y", "40"]
    created = subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", *size, command], capture_output=True, text=True
    )
    assert created.returncode == 0, created.stderr


def clients(socket: str) -> list[str]:
    """``session pane`` of every client attached to the tmux server `socket`."""
    return tmux(socket, "list-clients", "-F", "#{session_name} #{pane_id}").splitlines()


@needs_tmux
def test_attach_from_outside_tmux_attaches_a_terminal_to_the_teammates_pane(
    config_root: Path, tmp_path: Path, tmux_socket: str, outer: str
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    ann, ben = spawned("ann", "tmux"), spawned("ben", "tmux")
    target = json.loads(swarm("attach", "ben", "--json").stdout)
    assert target["pane"] == ben["pane"] and target["socket"] == tmux_socket
    assert target["how"] == "attach" and target["command"][:3] == ["tmux", "-L", tmux_socket]
    assert clients(tmux_socket) == []
    tmux(tmux_socket, "select-pane", "-t", str(ann["pane"]))
    # the person's terminal: a pane of another server, outside tmux as far as swarm knows
    terminal(outer, swarm_command("attach", "ben"))
    wait_for(lambda: clients(tmux_socket) == [f"t {ben['pane']}"], "a client on ben's pane")
    active = tmux(tmux_socket, "display-message", "-p", "-t", "t", "#{pane_id}").strip()
    assert active == ben["pane"]


@needs_tmux
def test_attach_inside_tmux_switches_the_client_to_the_teammates_pane(
    config_root: Path, tmp_path: Path, tmux_socket: str, outer: str
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    ann = spawned("ann", "tmux")
    # the person works in session "work" of the same server, through a terminal (outer)
    tmux(tmux_socket, "new-session", "-d", "-s", "work", "sh")
    terminal(outer, f"env -u TMUX tmux -L {tmux_socket} attach-session -t work")
    wait_for(lambda: [c.split()[0] for c in clients(tmux_socket)] == ["work"], "a client on work")
    environ = [
        f"{key}={os.environ[key]}"
        for key in ("CLAUDE_CONFIG_DIR", "HOME", "PATH")
        if key in os.environ
    ]
    opened = tmux(
        tmux_socket,
        "new-window",
        "-t",
        "work",
        *[arg for pair in environ for arg in ("-e", pair)],
        swarm_command("attach", "ann"),
    )
    assert opened == ""  # new-window prints nothing; it ran
    wait_for(lambda: clients(tmux_socket) == [f"t {ann['pane']}"], "the client moved to ann")


def test_attach_follows_a_subprocess_teammates_log_until_ctrl_c(
    config_root: Path, tmp_path: Path
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    spawned("ann", "subprocess")
    paths = TeamPaths(config_root, "t")
    target = json.loads(swarm("attach", "ann", "--json").stdout)
    assert target["log"] == str(paths.log("ann")) and target["how"] == "follow-log"
    follower = subprocess.Popen(
        [sys.executable, "-m", "swarm", "attach", "ann", "--team", "t"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_obeyed,
    )
    lines: list[str] = []

    def read() -> None:
        assert follower.stdout is not None
        lines.extend(line.rstrip("\n") for line in follower.stdout)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("joined team 't'" in line for line in lines), "the log so far")
        assert swarm("send", "ann", "a line \x1b[31m for the log").returncode == 0
        wait_for(lambda: any("a line" in line for line in lines), "a new log line", 30)
        assert not any("\x1b" in line for line in lines)  # escaped for the terminal
        follower.send_signal(signal.SIGINT)
        assert follower.wait(20) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)
        swarm("shutdown", "ann", "--force", "--wait", "5")  # a teammate outlives its test else


def test_attach_refuses_a_dead_member_and_names_the_likely_one(team: TeamFile) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    team.update_member("alice", pid=dead.pid, backendType="tmux", tmuxPaneId="%3")
    result = swarm("attach", "alice")
    assert result.returncode == 1
    assert result.stderr.startswith(
        "swarm: error: 'alice' is dead (its process is gone), so there is nothing to attach "
        "to; start it again with `swarm restart alice`"
    )
    unknown = swarm("attach", "alicia")
    assert unknown.returncode == 1 and "did you mean 'alice'?" in unknown.stderr
    lead = swarm("attach", "team-lead")
    assert lead.returncode == 1 and "is the lead, not a teammate" in lead.stderr


def test_send_to_a_dead_member_warns_and_still_delivers(team: TeamFile) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    team.update_member("alice", pid=dead.pid)
    result = swarm("send", "alice", "are you there?")
    assert result.returncode == 0 and result.stdout == "sent to alice\n"
    assert result.stderr == (
        "swarm: warning: alice is dead (its process is gone): the message waits in its inbox "
        "until it runs again (swarm restart alice)\n"
    )
    as_json = json.loads(swarm("send", "alice", "still?", "--json").stdout)
    assert as_json["sent_to"] == ["alice"] and "alice is dead" in as_json["warning"]
    texts = [e.text for e in Mailbox(team.paths).read_unread("alice")]
    assert texts == ["are you there?", "still?"]
    live = swarm("send", "bob", "hello", "--json")  # starting, not dead: no warning
    assert live.stderr == "" and "warning" not in json.loads(live.stdout)


def test_spawn_restart_and_shutdown_print_json(config_root: Path, tmp_path: Path) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    ann = spawned("ann", "subprocess")
    assert (ann["name"], ann["backend"], ann["pane"], ann["resumed"]) == (
        "ann",
        "subprocess",
        None,
        False,
    )
    assert isinstance(ann["pid"], int) and pid_alive(ann["pid"])
    restarted = swarm("restart", "ann", "--json", "--wait", "10")
    assert restarted.returncode == 0, restarted.stderr
    again = json.loads(restarted.stdout)
    assert again["name"] == "ann" and again["pid"] != ann["pid"]
    stopped = swarm("shutdown", "ann", "--json", "--wait", "10")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {
        "name": "ann",
        "outcome": "approved",
        "reason": "",
        "stopped": True,
        "released": [],
    }
