"""How a person finds the teammates' tmux panes (issue 38, item 8), with real tmux servers.

- A team's panes are on a private server (``tmux -L swarm-<team>``) that a plain ``tmux ls``
  does not list: `swarm status` (a footer line and ``panes`` in its JSON), `swarm attach` and
  `swarm spawn` print the exact ``tmux -L ... attach -t %N`` command.
- `swarm spawn` run in an 80x24 tmux pane gives the teammate a window of its own instead of a
  one-column split (a pane under 40x8 never); in a 200x50 pane it still splits.
- The demo prints an attach command only for a server that is still there after it: with
  ``--keep``; otherwise it says the panes are gone.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import new_session, swarm, tmux, wait_for

REPO = Path(__file__).resolve().parents[2]
SWARM = [sys.executable, "-m", "swarm"]
needs_tmux = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


def spawned(name: str) -> dict[str, object]:
    result = swarm("spawn", name, "-p", "Work the board.", "--backend", "tmux", "--json")
    assert result.returncode == 0, result.stderr
    started: dict[str, object] = json.loads(result.stdout)
    return started


@needs_tmux
def test_status_attach_and_spawn_print_the_command_of_the_private_tmux_server(
    config_root: Path, tmux_socket: str
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    text = swarm("spawn", "ann", "-p", "Work the board.", "--backend", "tmux")
    assert text.returncode == 0, text.stderr
    ann = json.loads(swarm("attach", "ann", "--json").stdout)
    command = ["tmux", "-L", tmux_socket, "attach", "-t", ann["pane"]]
    assert f"(watch: {shlex.join(command)})" in text.stdout
    ben = spawned("ben")
    assert ben["own_window"] is False  # a detached 200x50 session has room for a split

    status = swarm("status")
    assert status.returncode == 0, status.stderr
    footer = status.stdout.rstrip("\n").splitlines()[-1]
    assert footer == (
        f"panes of ann, ben: on the private tmux server {tmux_socket!r} (plain `tmux ls` does "
        f"not list it): {shlex.join(command)}"
    )
    [panes] = json.loads(swarm("status", "--json").stdout)["panes"]
    assert panes == {
        "socket": tmux_socket,
        "members": ["ann", "ben"],
        "command": command,
        "command_line": shlex.join(command),
    }
    # the command names a server and a pane that are there
    assert tmux(tmux_socket, "display-message", "-p", "-t", ann["pane"], "#{pane_title}") == "ann\n"

    # swarm attach says it before the terminal becomes tmux's (here there is no terminal, so
    # tmux itself then fails: the line is what a person would have seen above tmux's screen)
    target = json.loads(swarm("attach", "ben", "--json").stdout)
    assert shlex.split(target["command_line"]) == target["command"]
    attach = subprocess.run(
        [sys.executable, "-m", "swarm", "attach", "ben", "--team", "t"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    again = shlex.join(["tmux", "-L", tmux_socket, "attach", "-t", str(ben["pane"])])
    assert f"come back with: {again}" in attach.stderr
    assert "plain `tmux ls` does not list it" in attach.stderr

    for name in ("ann", "ben"):
        assert swarm("shutdown", name, "--force", "--wait", "5").returncode == 0
    assert "panes of" not in swarm("status").stdout  # no live pane, no command


def lead_session(socket: str, size: tuple[int, int], tmp_path: Path, *names: str) -> Path:
    """A tmux session of `size` on `socket` whose pane runs `swarm spawn NAME --json` for
    each of `names` (with $TMUX and $TMUX_PANE as tmux sets them, and no private socket);
    the file their output goes to."""
    out = tmp_path / f"spawn-{size[0]}x{size[1]}.out"
    spawns = [
        shlex.join(
            [
                *SWARM,
                "spawn",
                name,
                "-p",
                "Work the board.",
                "--backend",
                "tmux",
                "-t",
                "t",
                "--json",
            ]
        )
        for name in names
    ]
    script = " && ".join(spawns)
    command = f"({script}) > {shlex.quote(str(out))}.tmp 2>&1; mv {shlex.quote(str(out))}.tmp "
    command += f"{shlex.quote(str(out))}; exec sleep 600"
    env = {k: v for k, v in os.environ.items() if k not in ("SWARM_TMUX_SOCKET", "TMUX")}
    new_session(socket, "user", command, size, env=env)
    return out


def documents(text: str) -> list[dict[str, object]]:
    """The JSON documents printed one after another in `text` (whatever else is there: fails)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def panes_of(socket: str) -> dict[str, tuple[str, str, int, int]]:
    """Each pane's (session, window index, width, height), by pane id."""
    rows = tmux(
        socket,
        *("list-panes", "-a", "-F"),
        "#{pane_id} #{session_name} #{window_index} #{pane_width} #{pane_height}",
    )
    found = {}
    for row in rows.splitlines():
        pane, session, window, width, height = row.split()
        found[pane] = (session, window, int(width), int(height))
    return found


def stop_inside(socket: str, *names: str) -> None:
    """Shut the members down as from inside that tmux ($TMUX names the server of their panes)."""
    path = tmux(socket, "display-message", "-p", "#{socket_path}").strip()
    for name in names:
        done = swarm("shutdown", name, "--force", "--wait", "5", env={"TMUX": f"{path},0,0"})
        assert done.returncode == 0, done.stderr


@needs_tmux
def test_spawned_from_an_80_column_pane_a_teammate_gets_a_window_of_its_own(
    config_root: Path, tmux_socket: str, tmp_path: Path
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    out = lead_session(tmux_socket, (80, 24), tmp_path, "ann", "ben")
    wait_for(out.exists, "the two spawns in the lead's pane")
    started = documents(out.read_text())
    assert [s["name"] for s in started] == ["ann", "ben"], out.read_text()
    assert [s["own_window"] for s in started] == [True, True]
    panes = panes_of(tmux_socket)
    [lead] = [p for p in panes if p not in {s["pane"] for s in started}]
    assert panes[lead][1:] == ("0", 80, 24)  # the lead's pane is left whole
    windows = {panes[str(s["pane"])][1] for s in started}
    assert len(windows) == 2 and "0" not in windows  # each its own window ...
    for one in started:
        session, _, width, height = panes[str(one["pane"])]
        assert session == "user" and (width, height) == (80, 24)  # ... in the same session
        name = tmux(tmux_socket, "display-message", "-p", "-t", str(one["pane"]), "#{window_name}")
        assert name.strip() == one["name"]
    stop_inside(tmux_socket, "ann", "ben")
    assert list(panes_of(tmux_socket)) == [lead]  # their windows went with them


@needs_tmux
def test_a_teammate_spawned_from_a_wide_pane_splits_it(
    config_root: Path, tmux_socket: str, tmp_path: Path
) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    out = lead_session(tmux_socket, (200, 50), tmp_path, "ann")
    wait_for(out.exists, "the spawn in the lead's pane")
    [started] = documents(out.read_text())
    assert started["own_window"] is False
    panes = panes_of(tmux_socket)
    session, window, width, height = panes[str(started["pane"])]
    assert (session, window) == ("user", "0") and len(panes) == 2  # beside the lead's pane
    assert width >= 40 and height >= 8
    stop_inside(tmux_socket, "ann")


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    demo = REPO / "examples" / "shell_team_demo.py"
    return subprocess.run(
        [sys.executable, str(demo), "--backend", "tmux", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )


def demo_root(out: str) -> Path:
    first = out.splitlines()[0]  # team 'demo' in /tmp/swarm-demo-...
    return Path(first.split(" in ", 1)[1])


@needs_tmux
def test_the_demo_says_its_panes_are_gone_when_they_are(tmux_socket: str) -> None:
    result = run_demo()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "until the demo ends" in result.stdout
    assert result.stdout.rstrip().endswith(
        "the panes are gone with the team (--keep leaves the team running to look at)"
    )
    assert tmux(tmux_socket, "list-sessions") == ""  # no server to attach to
    assert not demo_root(result.stdout).exists()  # nothing left behind


@needs_tmux
def test_the_demo_with_keep_prints_an_attach_command_that_works(tmux_socket: str) -> None:
    result = run_demo("--keep")
    assert result.returncode == 0, result.stdout + result.stderr
    root = demo_root(result.stdout)
    try:
        tail = result.stdout.rstrip().splitlines()[-6:]
        watch = [line for line in tail if line.lstrip().startswith("tmux ")]
        assert len(watch) == 1, result.stdout
        command = shlex.split(watch[0].split("#")[0])
        assert command[:3] == ["tmux", "-L", tmux_socket] and command[3:5] == ["attach", "-t"]
        pane = command[5]
        assert tmux(tmux_socket, "display-message", "-p", "-t", pane, "#{pane_id}") == pane + "\n"
        env = {"CLAUDE_CONFIG_DIR": str(root)}
        assert "ann" in swarm("status", team="demo", env=env).stdout
    finally:
        down = swarm("down", "demo", "--wait", "5", team=None, env={"CLAUDE_CONFIG_DIR": str(root)})
        shutil.rmtree(root, ignore_errors=True)
    assert down.returncode == 0, down.stderr
    assert tmux(tmux_socket, "list-sessions") == ""  # the panes went with the team
