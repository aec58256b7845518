"""Teammates' commands in bubblewrap (`teammate.sandbox`), with real teammate processes and real
bwrap (skipped where it cannot run: `make test` installs Debian's bubblewrap). A sandboxed
teammate writes in its working directory and nowhere else, whatever the route (`cd /`, a
symbolic link, ``/proc/self/root``, a background command, a hook it could have written into the
project's settings); it cannot read the lead's key, reaches no network when it is off and can
when it is on; a Claude teammate's model is told in one line what the sandbox stopped, and a
call that asks to leave the sandbox waits for the lead even in bypassPermissions mode, and runs
outside once approved. Teammates in modes that act without asking are sandboxed unless their
settings say no, and so are the MCP stdio servers a sandboxed teammate starts."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import Processes, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.tasks.board import TaskBoard
from protocols.team import keyfile
from protocols.team.file import TeamFile
from swarm.team.approvals import answer, pending_requests
from teammate.sandbox import landlock
from teammate.sandbox.bwrap import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")


def sandboxed(workdir: Path, **sandbox: Any) -> None:
    """The project's settings turn the sandbox on (with `sandbox`'s keys besides)."""
    (workdir / ".claude").mkdir(exist_ok=True)
    settings = {"sandbox": {"enabled": True, **sandbox}}
    (workdir / ".claude" / "settings.json").write_text(json.dumps(settings))


def run_all(board: TaskBoard, commands: list[str]) -> list[tuple[str, str]]:
    """Each command as a task; once all have ended, (status, failure) of each."""
    ids = [board.create(f"step {i}", metadata={"command": c}).id for i, c in enumerate(commands)]

    def ended() -> bool:
        return all(board.require(i).status == "completed" or board.require(i).failed for i in ids)

    wait_for(ended, "every command to end", 60)
    return [(board.require(i).status, board.require(i).failure) for i in ids]


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback that accepts and closes; its port."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.parametrize("engine", ["bwrap", "landlock"])
def test_a_sandboxed_shell_teammate_writes_only_in_its_directory(
    team: TeamFile, workers: Processes, workdir: Path, tmp_path: Path, listener: int, engine: str
) -> None:
    if engine == "landlock" and landlock.available() is None:
        pytest.skip("this kernel has no Landlock")
    outside = tmp_path / "outside"
    outside.mkdir()
    key = team.paths.lead_key
    keyfile.load_or_create(key)
    sandboxed(workdir)
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": f"touch {outside}/hook"}]}
    (workdir / ".claude" / "settings.local.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [hook]}})
    )
    connect = f"import socket; socket.create_connection(('127.0.0.1', {listener}), 5)"
    board = TaskBoard(team.paths)
    workers.start(teammate_argv("alice"), {**os.environ, "SWARM_SANDBOX_ENGINE": engine})
    results = run_all(
        board,
        [
            "echo made > inside.txt",
            f"touch {outside}/direct",
            f"cd / && touch {outside}/from-root",
            f"ln -s {outside} link && touch link/through-link",
            f"touch /proc/self/root{outside}/through-proc",
            f"(sleep 0.1; touch {outside}/background) & wait $!",
            f"cat {key}",
            f'python3 -c "{connect}"',
        ],
    )
    assert results[0] == ("completed", "")
    assert (workdir / "inside.txt").read_text() == "made\n"
    for status, failure in results[1:6]:
        assert status == "in_progress" and "[sandbox] commands may write only in" in failure
    assert results[6][0] == "in_progress" and "BEGIN" not in results[6][1]
    off = "[sandbox] the network is off" if engine == "bwrap" else "and the network is off"
    assert results[7][0] == "in_progress" and off in results[7][1]
    assert list(outside.iterdir()) == []  # nothing of any route, nor of the hook
    assert (workdir / "link").is_symlink()  # made inside, where it may write


def test_the_network_is_on_when_every_domain_is_allowed(
    team: TeamFile, workers: Processes, workdir: Path, listener: int
) -> None:
    sandboxed(workdir, network={"allowedDomains": ["*"]})
    board = TaskBoard(team.paths)
    workers.start(teammate_argv("alice"), None)
    connect = f"import socket; socket.create_connection(('127.0.0.1', {listener}), 5)"
    outside = workdir.parent / "elsewhere"
    results = run_all(board, [f'python3 -c "{connect}"', f"touch {outside}"])
    assert results[0] == ("completed", "")
    assert "[sandbox] commands may write only in" in results[1][1] and not outside.exists()


@pytest.fixture
def web() -> Iterator[int]:
    """An HTTP server on the host's loopback that answers every GET with ``hello``; its port."""

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_allowed_domains_are_reached_through_the_proxy_and_nothing_else(
    team: TeamFile, workers: Processes, workdir: Path, web: int
) -> None:
    sandboxed(workdir, network={"allowedDomains": ["127.0.0.1", "*.example.invalid"]})
    board = TaskBoard(team.paths)
    workers.start(teammate_argv("alice"), None)

    def get(host: str) -> str:
        code = f"import urllib.request as u; print(u.urlopen('http://{host}:{web}/').read())"
        return f'python3 -c "{code}" > got-{host}.txt'

    connect = f"import socket; socket.create_connection(('127.0.0.1', {web}), 5)"
    results = run_all(board, [get("127.0.0.1"), get("localhost"), f'python3 -c "{connect}"'])
    assert results[0] == ("completed", "")
    assert (workdir / "got-127.0.0.1.txt").read_text() == "b'hello'\n"  # through the proxy
    for status, failure in results[1:]:  # a domain not listed; around the proxy
        assert status == "in_progress"
        assert "[sandbox] the network allows only 127.0.0.1, *.example.invalid" in failure
    assert "localhost refused" in results[1][1]  # the proxy said which


def test_modes_that_act_without_asking_are_sandboxed_unless_the_settings_say_no(
    team: TeamFile, workers: Processes, workdir: Path, tmp_path: Path
) -> None:
    board = TaskBoard(team.paths)
    escape = tmp_path / "escaped"
    for name, mode in (("alice", "bypassPermissions"), ("bob", "acceptEdits")):
        workers.start(teammate_argv(name, "--permission-mode", mode), None)  # no sandbox settings
    (result,) = run_all(board, [f"touch {escape}"])
    assert result[0] == "in_progress" and "[sandbox] commands may write only in" in result[1]
    assert not escape.exists()
    for proc in workers.procs:
        proc.kill()
    (workdir / ".claude").mkdir()
    (workdir / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"enabled": False}}))
    team.add_member("dan", cwd=workdir)
    workers.start(teammate_argv("carol", "--permission-mode", "bypassPermissions"), None)
    workers.start(teammate_argv("dan"), None)  # the default mode: no sandbox either way
    for who in ("carol", "dan"):  # each its own task
        board.create(who, metadata={"command": f"touch {escape}-{who}", "for": [who]})
    wait_for(
        lambda: len(board.list()) == 3 and all(t.status == "completed" for t in board.list()[1:]),
        "carol's and dan's tasks",
    )
    assert {t.subject: t.owner for t in board.list()[1:]} == {"carol": "carol", "dan": "dan"}
    assert (tmp_path / "escaped-carol").exists() and (tmp_path / "escaped-dan").exists()


def test_a_sandboxed_teammates_mcp_stdio_server_writes_only_in_its_directory(
    team: TeamFile, start: Callable[..., subprocess.Popen[str]], workdir: Path, tmp_path: Path
) -> None:
    server = str(Path(__file__).resolve().parent.parent / "mcp_server.py")
    servers = {"notes": {"command": sys.executable, "args": [server]}}
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    outside, inside = tmp_path / "outside.txt", workdir / "inside.txt"
    calls = [("mcp__notes__note", {"path": str(p), "text": "hi"}) for p in (inside, outside)]

    def play(body: dict[str, Any]) -> Turn:
        done = sum(m["role"] == "assistant" for m in body["messages"])
        return Turn.tool(*calls[done]) if done < len(calls) else Turn.text("Noted.")

    with MessagesAPI(play) as api:
        # bypassPermissions and no sandbox settings: sandboxed by its mode, servers included
        start("alice", api, "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "Take notes.", sender="team-lead")
        wait_for(lambda: len(api.requests) == 3, "alice's two calls")
    said = [json.dumps(api.requests[n]["messages"][-1]) for n in (1, 2)]
    assert f"wrote {inside}" in said[0] and inside.read_text() == "hi"
    assert "not written: Read-only file system" in said[1], said[1]
    assert not outside.exists()


def test_a_claude_teammate_is_told_and_leaving_the_sandbox_asks_the_lead(
    team: TeamFile, start: Callable[..., subprocess.Popen[str]], workdir: Path, tmp_path: Path
) -> None:
    sandboxed(workdir)
    outside = tmp_path / "out.txt"
    script = [
        Turn.tool("Bash", {"command": f"touch {outside}"}),
        Turn.tool("Bash", {"command": f"touch {outside}", "dangerouslyDisableSandbox": True}),
        Turn.text("Done."),
    ]
    with MessagesAPI(script) as api:
        start("alice", api, "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "Make the file.", sender="team-lead")
        wait_for(lambda: len(api.requests) >= 2, "the first command's result at the model")
        told = json.dumps(api.requests[1]["messages"][-1]["content"])
        assert "Read-only file system" in told and "[sandbox] commands may write only in" in told

        def asked() -> list[Any]:
            return [
                e
                for e in Mailbox(team.paths).read_all("team-lead")
                if "permission_request" in e.text
            ]

        (request,) = wait_for(asked, "alice to ask before leaving the sandbox")
        assert "dangerouslyDisableSandbox" in request.text
        assert not outside.exists()
        (pending,) = pending_requests(team.paths)
        answer(team.paths, pending.id, approve=True)
        wait_for(outside.exists, "the approved command to run outside the sandbox")


def test_doctor_says_the_sandbox_works_here(config_root: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "swarm", "doctor", "--cwd", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    (sandbox,) = [c for c in json.loads(result.stdout) if c["name"] == "sandbox"]
    assert sandbox["state"] == "ok" and "bubblewrap works" in sandbox["found"]
