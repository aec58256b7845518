"""Background commands of a real Claude teammate process (the real SDK against the test suite's
Messages API server): a command in the background shows in `swarm status` and is told to the
idle teammate when it ends; a message arriving during a long foreground command moves it to the
background and is taken up at once; a shutdown during one stops the teammate and its command."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import DEADLINE_S, swarm, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import ShutdownRequest
from protocols.team.file import TeamFile
from teammate.tools.shell import MOVED

Start = Callable[..., subprocess.Popen[str]]


def stop(team: TeamFile, proc: subprocess.Popen[str], name: str = "alice") -> str:
    request = ShutdownRequest(
        requestId=f"shutdown-1@{name}", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send(name, request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output[-3000:]
    return output


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def texts(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


class Replies:
    """A model that answers each request by the first rule that matches it, else "Done."."""

    def __init__(self, *rules: tuple[Callable[[dict[str, Any]], bool], Turn]) -> None:
        self.rules = list(rules)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        with self.lock:
            for index, (matches, turn) in enumerate(self.rules):
                if matches(body):
                    del self.rules[index]
                    return turn
        return Turn.text("Done.")


def test_a_background_command_shows_in_status_and_its_end_wakes_the_teammate(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    serve = "until [ -f stop-now ]; do sleep 0.05; done; echo served 42 requests"
    model = Replies(
        (
            lambda b: "start the server" in texts(b) and "background with ID" not in texts(b),
            Turn.tool(
                "Bash",
                {"command": serve, "run_in_background": True, "description": "dev server"},
            ),
        ),
        (lambda b: "<task-id>" in texts(b), Turn.text("The server stopped.")),
    )
    with MessagesAPI(model) as api:
        proc = start("alice", api, "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "start the server", sender="team-lead")

        def shells() -> list[Any]:
            status = read_status(team.paths, "alice")
            return [s for s in status.shells if s.running] if status else []

        (shell,) = wait_for(shells, "the command to show in the status file")
        shown = swarm("status").stdout
        assert f"alice \u203a $ {shell.id}" in shown and "dev server" in shown
        (workdir / "stop-now").write_text("")
        wait_for(
            lambda: any("<task-id>" in texts(b) for b in api.requests),
            "the teammate to be told it ended",
        )
        stop(team, proc)
    told = next(b for b in api.requests if "<task-id>" in texts(b))
    assert "served 42 requests" in texts(told) and "<status>completed</status>" in texts(told)
    logged = swarm("logs", "alice").stdout
    assert f"background command {shell.id} completed (exit code 0)" in logged


def test_a_message_during_a_long_command_is_taken_up_at_once(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    model = Replies(
        (
            lambda b: "run the long tests" in texts(b) and "tool_result" not in texts(b),
            Turn.tool("Bash", {"command": "sleep 600", "description": "long test run"}),
        ),
    )
    with MessagesAPI(model) as api:
        proc = start("alice", api, "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "run the long tests", sender="team-lead")
        wait_for(lambda: len(api.requests) == 1, "the command to start")
        wait_for(lambda: _sleeping(proc.pid), "sleep 600 to run")
        Mailbox(team.paths).send("alice", "what is the status?", sender="bob")
        wait_for(lambda: len(api.requests) == 2, "the message to reach the model")
        stop(team, proc)  # the command goes with it
    second = texts(api.requests[1])
    assert MOVED in second and "what is the status?" in second
    assert not _sleeping(proc.pid)


def test_a_shutdown_during_a_long_command_stops_the_teammate_and_the_command(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    model = Replies(
        (lambda b: True, Turn.tool("Bash", {"command": "sleep 600", "description": "wait"}))
    )
    with MessagesAPI(model) as api:
        proc = start("alice", api, "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "wait a while", sender="team-lead")
        sleeper = wait_for(lambda: _sleeping(proc.pid), "sleep 600 to run")
        stop(team, proc)
    wait_for(lambda: not alive(sleeper), "its command to be stopped")


def _sleeping(parent: int) -> int | None:
    """The pid of a ``sleep 600`` started by `parent`'s commands (None if there is none): a
    descendant of it, however deep (a sandboxed command runs under bwrap's processes)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        pid = int(entry.name)
        if command[:2] == [b"sleep", b"600"] and parent in _ancestors(pid) and alive(pid):
            return pid
    return None


def _ancestors(pid: int) -> list[int]:
    found = []
    while pid > 1 and len(found) < 20:
        try:
            status = (Path("/proc") / str(pid) / "status").read_text()
            pid = int(status.split("PPid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            break
        found.append(pid)
    return found
