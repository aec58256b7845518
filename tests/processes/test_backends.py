"""Spawn backends with real processes: a plain subprocess, and tmux panes on a private tmux server
per test (libtmux's ``server`` fixture; the user's tmux is never touched).

The child is a small Python script that reports its argv, cwd and environment to a file, prints a
line, and waits to be stopped. Arguments, cwd and environment values are full of things a shell or
tmux would interpret; they must arrive verbatim and nothing may run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from dataclasses import replace
from pathlib import Path

import libtmux
import pytest
from helpers import wait_for

from swarm.backends import (
    SpawnBackend,
    Spawned,
    SpawnError,
    SpawnRequest,
    SubprocessBackend,
    TmuxBackend,
    choose_backend,
    passthrough_env,
)

HAVE_TMUX = shutil.which("tmux") is not None
needs_tmux = pytest.mark.skipif(not HAVE_TMUX, reason="the tmux binary is not installed")

# Reports [argv, cwd, env, pid, ppid] to the file named by argv[1] (atomically), prints a line,
# then waits until a signal ends it (or 60 s pass).
CHILD = """
import json, os, sys, time
report = sys.argv[1]
keys = [k for k in os.environ if k.startswith(("WEIRD", "SWARM_", "CLAUDE_", "UNRELATED"))]
data = [sys.argv[2:], os.getcwd(), {k: os.environ[k] for k in keys}, os.getpid(), os.getppid()]
with open(report + ".tmp", "w", encoding="utf-8") as f:
    json.dump(data, f)
os.replace(report + ".tmp", report)
print("child ready", flush=True)
time.sleep(60)  # bounded, so a failed test leaks nothing for long
"""


def nasty(tmp_path: Path, tag: str) -> str:
    """A value a shell or tmux would act on: substitutions, quotes, ; endings, newline, unicode."""
    pwned = tmp_path / f"pwned-{tag}"
    return (
        f"$(touch {pwned}-1) `touch {pwned}-2` #(touch {pwned}-3) #{{pane_id}} "
        f'\'"; touch {pwned}-4; " \\ \n second line \u00e9\u2713 ${{HOME}} $HOME;'
    )


def injected(*roots: Path) -> list[str]:
    return [str(p) for root in roots for p in root.rglob("pwned*")]


@pytest.fixture
def weird_cwd(tmp_path: Path) -> Path:
    """A directory whose name holds substitutions and tmux formats (relative, no '/')."""
    cwd = tmp_path / "dir $(touch pwned-c1) `touch pwned-c2` #(touch pwned-c3) #{pane_id} '\"\n é;"
    cwd.mkdir()
    return cwd


@pytest.fixture
def tmux_socket(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private tmux socket for this test (libtmux's plugin kills its server in teardown)."""
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert server.socket_name
    return server.socket_name


@pytest.fixture(params=["subprocess", pytest.param("tmux", marks=needs_tmux)])
def backend(request: pytest.FixtureRequest) -> SpawnBackend:
    if request.param == "tmux":
        socket = request.getfixturevalue("tmux_socket")
        return choose_backend("tmux", env=dict(os.environ), socket_name=socket)
    return choose_backend("subprocess", env=dict(os.environ))


def child_request(
    tmp_path: Path, name: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[SpawnRequest, Path]:
    report = tmp_path / f"{name}.json"
    request = SpawnRequest(
        name=name,
        team="t",
        argv=[sys.executable, "-c", CHILD, str(report), *args],
        cwd=cwd,
        env=env or {},
        log_path=tmp_path / "logs" / f"{name}.log",
    )
    return request, report


def read_report(report: Path) -> list:
    wait_for(report.exists, f"{report.name} from the child", timeout=10)
    return json.loads(report.read_text(encoding="utf-8"))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_argv_cwd_and_env_arrive_verbatim(
    backend: SpawnBackend, tmp_path: Path, weird_cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a relative `touch` from an injected shell would land
    args = [
        nasty(tmp_path, "arg"),
        "x;",  # tmux would end its command here and run the next words as a tmux command
        "run-shell",
        f"touch {tmp_path / 'pwned-tmux'}",
        "",
        ";",
        "a\\;",
        "--",
        "-e",
    ]
    env = {"WEIRD": nasty(tmp_path, "env"), "WEIRD_EMPTY": "", "WEIRD_SEMI": "v;"}
    request, report = child_request(tmp_path, "alice", weird_cwd, *args, env=env)
    spawned = backend.spawn(request)
    try:
        got_args, got_cwd, got_env, pid, _ = read_report(report)
        assert got_args == args
        assert got_cwd == str(weird_cwd)
        assert {k: v for k, v in got_env.items() if k.startswith("WEIRD")} == env
        assert got_env["CLAUDE_CONFIG_DIR"] == os.environ["CLAUDE_CONFIG_DIR"]
        assert pid == spawned.pid
        assert spawned.backend_type == backend.backend_type
        assert backend.is_alive(spawned)
    finally:
        backend.stop(spawned)
    assert injected(tmp_path) == []


def test_passthrough_only_and_request_env_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {
        "PATH": os.environ["PATH"],
        "SWARM_TEAM": "t",
        "CLAUDE_CONFIG_DIR": "/from/environ",
        "UNRELATED": "not passed",
    }
    backend = SubprocessBackend(environ=environ)
    request, report = child_request(
        tmp_path, "bob", tmp_path, env={"CLAUDE_CONFIG_DIR": "/from/request"}
    )
    spawned = backend.spawn(request)
    try:
        _, _, got_env, _, _ = read_report(report)
        assert got_env == {"SWARM_TEAM": "t", "CLAUDE_CONFIG_DIR": "/from/request"}
    finally:
        backend.stop(spawned)


def test_stop_ends_the_process_and_is_idempotent(backend: SpawnBackend, tmp_path: Path) -> None:
    request, report = child_request(tmp_path, "alice", tmp_path)
    spawned = backend.spawn(request)
    read_report(report)
    assert backend.is_alive(spawned)
    backend.stop(spawned, timeout=2.0)
    assert not backend.is_alive(spawned)
    assert gone(spawned.pid)
    backend.stop(spawned)  # twice is fine
    assert not backend.is_alive(spawned)


def test_a_killed_child_is_not_alive(backend: SpawnBackend, tmp_path: Path) -> None:
    request, report = child_request(tmp_path, "alice", tmp_path)
    spawned = backend.spawn(request)
    read_report(report)
    os.kill(spawned.pid, signal.SIGKILL)
    wait_for(lambda: not backend.is_alive(spawned), "the killed child to be reported dead")
    backend.stop(spawned)


def test_stop_escalates_to_sigkill(backend: SpawnBackend, tmp_path: Path) -> None:
    stubborn = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    stubborn += "open(sys.argv[1], 'w').close(); time.sleep(60)"
    ready = tmp_path / "ready"
    request = SpawnRequest(
        "alice", "t", [sys.executable, "-c", stubborn, str(ready)], tmp_path, {}, tmp_path / "l"
    )
    spawned = backend.spawn(request)
    wait_for(ready.exists, "the child to ignore SIGTERM")
    backend.stop(spawned, timeout=0.2)
    assert not backend.is_alive(spawned)
    assert gone(spawned.pid)


def test_subprocess_output_goes_to_the_log(tmp_path: Path) -> None:
    backend = SubprocessBackend()
    request, report = child_request(tmp_path, "alice", tmp_path)
    request.log_path.parent.mkdir(parents=True)
    request.log_path.write_text("earlier run\n")
    spawned = backend.spawn(request)
    try:
        read_report(report)
        wait_for(lambda: "child ready" in request.log_path.read_text(), "the child's line")
        assert request.log_path.read_text() == "earlier run\nchild ready\n"  # appended
        assert spawned.pane_id == "" and spawned.socket_name is None
    finally:
        backend.stop(spawned)


def test_subprocess_stop_from_another_backend_instance(tmp_path: Path) -> None:
    """A later `swarm` command has a fresh backend: it can still see and stop the pid."""
    request, report = child_request(tmp_path, "alice", tmp_path)
    spawned = SubprocessBackend().spawn(request)
    read_report(report)
    other = SubprocessBackend()
    assert other.is_alive(spawned)
    other.stop(spawned, timeout=2.0)
    assert not other.is_alive(spawned)


def test_spawn_errors_say_what_failed(backend: SpawnBackend, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    request = SpawnRequest("alice", "t", [sys.executable], missing, {}, tmp_path / "l")
    with pytest.raises(SpawnError, match="no-such-dir is not a directory"):
        backend.spawn(request)
    with pytest.raises(SpawnError, match="command line is empty"):
        backend.spawn(SpawnRequest("alice", "t", [], tmp_path, {}, tmp_path / "l"))
    with pytest.raises(SpawnError, match="invalid environment"):
        backend.spawn(SpawnRequest("alice", "t", ["x"], tmp_path, {"A=B": "1"}, tmp_path / "l"))


def test_subprocess_missing_program(tmp_path: Path) -> None:
    request = SpawnRequest("alice", "t", [str(tmp_path / "nope")], tmp_path, {}, tmp_path / "l")
    with pytest.raises(SpawnError, match=r"cannot start 'alice'.*nope"):
        SubprocessBackend().spawn(request)


@needs_tmux
def test_tmux_missing_program_is_a_dead_pane(tmp_path: Path, tmux_socket: str) -> None:
    backend = TmuxBackend(socket_name=tmux_socket)
    request = SpawnRequest(
        "alice", "t", [str(tmp_path / "nope"), "x"], tmp_path, {}, tmp_path / "l"
    )
    spawned = backend.spawn(request)
    wait_for(lambda: not backend.is_alive(spawned), "the failed pane to be reported dead")
    backend.stop(spawned)


@needs_tmux
def test_tmux_three_members_share_one_titled_window(tmp_path: Path, tmux_socket: str) -> None:
    backend = TmuxBackend(socket_name=tmux_socket, environ={"TMUX": "/elsewhere,1,0"})
    spawned: list[Spawned] = []
    for name in ("alice", "bob", "carol"):
        request, report = child_request(tmp_path, name, tmp_path)
        spawned.append(backend.spawn(request))
        assert read_report(report)[3] == spawned[-1].pid
    server = libtmux.Server(socket_name=tmux_socket)
    [session] = server.sessions
    assert session.session_name == "t"
    [window] = session.windows
    panes = {p.pane_id: (p.pane_title, int(p.pane_pid or 0)) for p in window.panes}
    assert panes == {
        s.pane_id: (n, s.pid) for s, n in zip(spawned, ["alice", "bob", "carol"], strict=True)
    }
    assert window.panes[0].pane_id == spawned[0].pane_id  # the first member has the main pane
    assert {s.socket_name for s in spawned} == {tmux_socket}
    for one in spawned:
        shown = server.cmd("show-options", "-p", "-t", one.pane_id, "remain-on-exit").stdout
        assert shown == ["remain-on-exit off"]
    for one in spawned:
        backend.stop(one)
        assert not backend.is_alive(one)
    assert not server.is_alive()  # the private server went with its last pane


@needs_tmux
def test_tmux_team_name_tmux_would_rewrite(tmp_path: Path, tmux_socket: str) -> None:
    """Claude Code teams may have names swarm would not create; tmux turns '.' into '_'."""
    backend = TmuxBackend(socket_name=tmux_socket)
    spawned = []
    for name in ("alice", "bob"):
        request, report = child_request(tmp_path, name, tmp_path)
        spawned.append(backend.spawn(replace(request, team="v1.2")))
        read_report(report)
    [session] = libtmux.Server(socket_name=tmux_socket).sessions
    assert session.session_name == "v1_2" and len(session.windows[0].panes) == 2
    for one in spawned:
        backend.stop(one)


@needs_tmux
def test_tmux_one_word_command_is_execed(tmp_path: Path, tmux_socket: str) -> None:
    script = tmp_path / "run me $(touch pwned) ;"
    report = tmp_path / "one.json"
    script.write_text(f"#!/bin/sh\necho $$ > {report}.tmp && mv {report}.tmp {report}\nsleep 60\n")
    script.chmod(0o755)
    backend = TmuxBackend(socket_name=tmux_socket)
    spawned = backend.spawn(SpawnRequest("alice", "t", [str(script)], tmp_path, {}, tmp_path / "l"))
    try:
        wait_for(report.exists, "the script's pid")
        assert int(report.read_text()) == spawned.pid
    finally:
        backend.stop(spawned)
    assert injected(tmp_path) == []


@needs_tmux
def test_tmux_inside_tmux_splits_the_lead_window(
    tmp_path: Path, tmux_socket: str, server: libtmux.Server
) -> None:
    # a window with room for two splits of 40x8 or more (an 80x24 one: tests/processes/
    # test_tmux_views.py, where each teammate gets a window of its own)
    lead = server.new_session("user", window_command="sleep 600", x=200, y=50).active_pane
    assert lead is not None and lead.pane_id
    socket_path = server.cmd("display-message", "-p", "#{socket_path}").stdout[0]
    environ = {**os.environ, "TMUX": f"{socket_path},1,0", "TMUX_PANE": lead.pane_id}
    backend = choose_backend("tmux", env=environ)
    spawned = []
    for name in ("alice", "bob"):
        request, report = child_request(tmp_path, name, tmp_path)
        spawned.append(backend.spawn(request))
        read_report(report)
    assert [s.socket_name for s in spawned] == [None, None]
    window = lead.window
    titles = {p.pane_id: p.pane_title for p in window.panes}
    assert titles[spawned[0].pane_id] == "alice" and titles[spawned[1].pane_id] == "bob"
    assert lead.pane_id in titles and len(titles) == 3
    assert window.window_layout and window.panes[0].pane_id == lead.pane_id
    for one in spawned:
        backend.stop(one)
    assert [p.pane_id for p in window.panes] == [lead.pane_id]  # the lead's pane stays
    assert server.is_alive()


@needs_tmux
def test_tmux_no_room_to_split_gives_a_window_of_its_own(
    tmp_path: Path, tmux_socket: str, server: libtmux.Server
) -> None:
    """A lead pane too narrow to split at all (tmux: "no space for new pane")."""
    lead = server.new_session("user", window_command="sleep 600", x=2, y=5).active_pane
    assert lead is not None and lead.pane_id
    socket_path = server.cmd("display-message", "-p", "#{socket_path}").stdout[0]
    environ = {**os.environ, "TMUX": f"{socket_path},1,0", "TMUX_PANE": lead.pane_id}
    backend = choose_backend("tmux", env=environ)
    request, report = child_request(tmp_path, "alice", tmp_path)
    spawned = backend.spawn(request)
    try:
        assert read_report(report)[3] == spawned.pid and spawned.own_window
        [window] = [w for w in lead.session.windows if w.window_id != lead.window.window_id]
        assert window.window_name == "alice"
        assert [p.pane_id for p in window.panes] == [spawned.pane_id]
        assert [p.pane_id for p in lead.window.panes] == [lead.pane_id]
    finally:
        backend.stop(spawned)


@needs_tmux
def test_tmux_inside_tmux_needs_tmux_pane(tmp_path: Path) -> None:
    backend = TmuxBackend(environ={"TMUX": "/tmp/nowhere,1,0"})
    request, _ = child_request(tmp_path, "alice", tmp_path)
    with pytest.raises(SpawnError, match="TMUX_PANE"):
        backend.spawn(request)


def test_choose_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/tmux" if name == "tmux" else None)
    assert choose_backend().backend_type == "tmux"
    assert isinstance(choose_backend("auto", {}, socket_name="s"), TmuxBackend)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert choose_backend("auto").backend_type == "subprocess"
    assert choose_backend("tmux").backend_type == "tmux"  # asked for by name
    assert choose_backend("subprocess").backend_type == "subprocess"
    with pytest.raises(ValueError, match="'screen'; allowed: auto, tmux, subprocess"):
        choose_backend("screen")
    with pytest.raises(SpawnError):
        choose_backend("")


def test_passthrough_env() -> None:
    environ = {
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_BASE_URL": "http://localhost:1",
        "https_proxy": "http://p",
        "NO_PROXY": "localhost",
        "PATH": "/bin",
        "LC_ALL": "C.UTF-8",
        "SWARM_TEAM": "t",
        "SWARM_": "",
        "TERM": "xterm",
        "EDITOR": "vi",
        "MY_SWARM_X": "no",
    }
    dropped = {"TERM", "EDITOR", "MY_SWARM_X"}
    assert passthrough_env(environ) == {k: v for k, v in environ.items() if k not in dropped}
    assert passthrough_env({}) == {}
