"""`swarm lead` on a PostgreSQL team: key classic scenarios of `tests/processes/test_scenarios.py`
again, with the team in the store (`swarm lead --create --store URL`). A lead agent and Claude
or shell teammates on the real `anthropic` SDK against the local Messages API server (scripted
turns, no network), real teammate processes (subprocess backend), the person at the console.
What the team holds is read from the store, never from files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, swarm, wait_for
from messages_api import MessagesAPI, Turn, by_agent
from pg_cli import url_of

from protocols.messages import IdleNotification
from protocols.paths import TeamPaths
from protocols.pg.store import PgStore
from protocols.store import locate, open_store
from swarm.team.lifecycle import request_shutdown

pytestmark = pytest.mark.slow


@pytest.fixture
def paths(conninfo: str, config_root: Path) -> TeamPaths:
    return locate("t", config_root, url_of(conninfo))


@pytest.fixture
def run(workdir: Path, paths: TeamPaths) -> Iterator[Any]:
    """Start `swarm lead` for team t on PostgreSQL with these scripts; stop its teammates
    afterwards."""
    servers: list[MessagesAPI] = []
    sessions: list[LeadSession] = []

    def start(scripts: dict[str, Any], *args: str) -> LeadSession:
        api = MessagesAPI(by_agent(scripts)).__enter__()
        servers.append(api)
        assert paths.store is not None
        lead = LeadSession(api, workdir, "--backend", "subprocess", "--store", paths.store, *args)
        sessions.append(lead)
        lead.expect("leading team 't'", timeout=60)
        return lead

    yield start
    for session in sessions:
        session.close()
    store = open_store(paths)
    if store.team_exists():
        for member in store.team_file().load().members[1:]:
            request_shutdown(paths, member.name, "test over", wait_s=5, force=True)
    for api in servers:
        api.__exit__(None, None, None)


def spawn(name: str, prompt: str, **extra: Any) -> Turn:
    return Turn.tool(
        "Agent", {"description": f"{name}'s job", "name": name, "prompt": prompt, **extra}
    )


def says(text: str) -> Turn:
    return Turn.tool("SendMessage", {"to": "team-lead", "message": text, "summary": text[:40]})


def test_a_developer_writes_the_schema_and_reports_to_the_lead_on_postgresql(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    schema = "CREATE TABLE users (id INTEGER PRIMARY KEY);\n"
    lead = run(
        {
            "team-lead": [
                spawn("alice", "Create schema.sql with a users table.", mode="acceptEdits"),
                Turn.text("Alice is on it."),
            ],
            "alice": [
                Turn.tool("Write", {"file_path": "schema.sql", "content": schema}),
                says("schema.sql is written $(x) 'é'"),
                Turn.text("Done."),
            ],
        },
        "--teammate-model",
        "sonnet",
    )
    lead.type("Spawn alice. Ask her to create schema.sql with a users table.")
    lead.expect("alice: schema.sql is written $(x) 'é'")
    assert (workdir / "schema.sql").read_text() == schema
    store = open_store(paths)
    assert isinstance(store, PgStore)  # the team is in PostgreSQL: no team files here
    assert [m.name for m in store.team_file().load().members] == ["team-lead", "alice"]
    assert not paths.config.exists()
    assert lead.quit() == 0


def test_three_tasks_two_shell_workers_each_task_done_exactly_once_on_postgresql(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    tasks = [
        Turn.tool(
            "TaskCreate",
            {"subject": f"step {n}", "description": "", "metadata": {"command": f"echo {n} >> d"}},
        )
        for n in (1, 2, 3)
    ]
    lead = run(
        {
            "team-lead": [
                *tasks,
                spawn("alice", "Work the board."),
                spawn("bob", "Work the board."),
                Turn.text("Both are working."),
            ]
        },
        "--teammate-model",
        "shell",
    )
    lead.type("Put three steps on the board and have alice and bob do them.")
    board = open_store(paths).task_board()
    wait_for(
        lambda: len(board.list()) == 3 and all(t.status == "completed" for t in board.list()),
        "all three tasks done",
    )
    assert sorted((workdir / "d").read_text().splitlines()) == ["1", "2", "3"]
    mailbox = open_store(paths).mailbox()

    def reports() -> list[str]:
        notes = [e.structured() for e in mailbox.peek_all("team-lead")]
        return [
            n.completedTaskId
            for n in notes
            if isinstance(n, IdleNotification) and n.completedTaskId
        ]

    wait_for(lambda: len(reports()) >= 3, "three completion reports")
    assert sorted(reports()) == ["1", "2", "3"]
    assert lead.quit() == 0


def test_a_request_is_approved_from_another_terminal_and_denied_at_the_console_on_postgresql(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    def carol(body: dict[str, Any]) -> Turn:
        results = [
            b
            for m in body["messages"]
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        if not results:
            return Turn.tool("Bash", {"command": "echo approved > a.txt"})
        if len(results) == 1:
            return Turn.tool("Bash", {"command": "echo denied > d.txt"})
        if len(results) == 2:
            return says(f"second command: {results[1]['content'][:80]}")
        return Turn.text("Done.")

    lead = run(
        {
            "team-lead": [spawn("carol", "Make a.txt and d.txt."), Turn.text("Spawned.")],
            "carol": carol,
        },
        "--teammate-model",
        "sonnet",
    )
    lead.type("Spawn carol to make two files.")
    lead.expect("carol: asks: Bash: echo approved > a.txt")
    assert paths.store is not None
    listed = swarm("permissions", "--json", env={"SWARM_STORE": paths.store})
    (request,) = json.loads(listed.stdout)
    assert request["teammate"] == "carol" and request["tool"] == "Bash"
    approved = swarm("approve", request["id"], env={"SWARM_STORE": paths.store})
    assert approved.returncode == 0, approved.stderr
    wait_for(lambda: (workdir / "a.txt").exists(), "the approved command to run")
    lead.expect("carol: asks: Bash: echo denied > d.txt")
    lead.type("n not that one")
    lead.expect(
        "carol: second command: Permission to use Bash was denied by team-lead: not that one"
    )
    assert not (workdir / "d.txt").exists()
    assert lead.quit() == 0
