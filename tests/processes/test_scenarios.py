"""The classic team scenarios, end to end through `swarm lead`: a lead agent and Claude
teammates on the real `anthropic` SDK against the local Messages API server (scripted turns,
no network), real teammate processes, and the person at the console typing answers.

Each runs three ways: a team in files with its teammates in tmux panes on a private server, the
same with subprocesses, and a team in PostgreSQL whose teammates run on two hosts (`swarm lead
--host a --host b`: two `swarm host serve` agents, each a "machine" with a config root of its
own, `tests/pg/machines.py`). Their teammates work in the lead's directory, the same path on
every machine here, as a shared checkout would be. What the team holds is read through the
store's interfaces (`protocols.store.selection.open_store`), so the checks hold on both stores."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, panes, swarm, wait_for
from machines import HostAgent, machine, serve, stop
from messages_api import MessagesAPI, Turn, by_agent
from pg_cli import url_of

from protocols.messages.models import IdleNotification
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.store.selection import locate, open_store
from swarm.team.lifecycle import request_shutdown
from swarm.team.liveness import member_host

HOSTS = ("a", "b")  # the PostgreSQL team's hosts, in the order `swarm lead --host` gets them

pytestmark = pytest.mark.parametrize(
    ("store", "backend"),
    [
        pytest.param("files", "subprocess", id="files-subprocess"),
        pytest.param(
            "files",
            "tmux",
            id="files-tmux",
            marks=pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed"),
        ),
        pytest.param("postgresql", "subprocess", id="postgresql-two-hosts", marks=pytest.mark.slow),
    ],
)


@pytest.fixture
def paths(store: str, config_root: Path, request: pytest.FixtureRequest) -> TeamPaths:
    """Team t: in files under the config root, or in the test's PostgreSQL database (which
    asks for a server: without one the test is skipped, as tests/pg are)."""
    if store == "files":
        return TeamPaths(config_root, "t")
    return locate("t", config_root, url_of(request.getfixturevalue("conninfo")))


@pytest.fixture
def run(
    workdir: Path, paths: TeamPaths, tmp_path: Path, tmux_socket: str, backend: str
) -> Iterator[Any]:
    """Start `swarm lead` for team t with these scripts (on PostgreSQL: the team, and hosts a
    and b serving it, first); stop every teammate and host afterwards."""
    servers: list[MessagesAPI] = []
    sessions: list[LeadSession] = []
    hosts: list[HostAgent] = []

    def start(scripts: dict[str, Any], *args: str) -> LeadSession:
        api = MessagesAPI(by_agent(scripts)).__enter__()
        servers.append(api)
        where = ["--backend", backend]
        if paths.store is not None:
            hosts.extend(serve_hosts(paths, tmp_path, api.url))
            where += ["--store", paths.store, *(f"--host={h}" for h in HOSTS)]
        lead = LeadSession(api, workdir, *where, *args)
        sessions.append(lead)
        lead.expect("leading team 't'", timeout=60)  # a loaded machine starts Python slowly
        return lead

    yield start
    for session in sessions:
        session.close()
    store = open_store(paths)
    if store.team_exists():
        for member in store.team_file().load().members[1:]:
            request_shutdown(paths, member.name, "test over", wait_s=5, force=True)
    for host in hosts:
        stop(host)
    for api in servers:
        api.__exit__(None, None, None)


def serve_hosts(paths: TeamPaths, tmp_path: Path, api_url: str) -> list[HostAgent]:
    """Team t made on PostgreSQL here, and `swarm host serve` for it on two other machines
    (their teammates talk to the Messages API server at `api_url`), once both are alive."""
    assert paths.store is not None
    made = swarm("team", "create", "t", "--store", paths.store)
    assert made.returncode == 0, made.stderr
    env = {"ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "test-key"}
    agents = [serve(machine(tmp_path, f"host-{h}", paths.store, **env), h) for h in HOSTS]
    store = open_store(paths)
    wait_for(lambda: all(store.hosts().alive().get(h) for h in HOSTS), "hosts a and b to serve")
    return agents


def placed(paths: TeamPaths, **hosts: str) -> bool:
    """Check that each named teammate runs where it should: on PostgreSQL on that host (the
    lead spreads them: the live host with the fewest live members, `a` on a tie), on files
    here."""
    roster = open_store(paths).team_file().load().members
    found = {m.name: member_host(m) for m in roster if m.name in hosts}
    expected = {n: (h if paths.store is not None else None) for n, h in hosts.items()}
    assert found == expected
    return True


def spawn(name: str, prompt: str, **extra: Any) -> Turn:
    return Turn.tool(
        "Agent", {"description": f"{name}'s job", "name": name, "prompt": prompt, **extra}
    )


def on_input(*rules: tuple[str, Turn]) -> Any:
    """A lead script that answers what it was just told: the first rule whose text is in the
    last user message (a person's line or teammate messages) plays its turn, once; after a
    tool call the turn ends with text; anything else is acknowledged."""
    return _playing(rules, whole_conversation=False)


def once_seen(*rules: tuple[str, Turn]) -> Any:
    """A lead script that plays each rule's turn once, as soon as its text is anywhere in the
    conversation (the person's line, a teammate's message, a tool's result); anything else is
    acknowledged."""
    return _playing(rules, whole_conversation=True)


def _playing(rules: tuple[tuple[str, Turn], ...], whole_conversation: bool) -> Any:
    played: set[int] = set()

    def play(body: dict[str, Any]) -> Turn:
        last = body["messages"][-1]["content"]
        if whole_conversation:
            text = json.dumps(body["messages"])
        elif any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            return Turn.text("ok")
        else:
            text = json.dumps(last)
        for index, (needle, turn) in enumerate(rules):
            if needle in text and index not in played:
                played.add(index)
                return turn
        return Turn.text("noted")

    return play


def says(text: str) -> Turn:
    return Turn.tool("SendMessage", {"to": "team-lead", "message": text, "summary": text[:40]})


def members(paths: TeamPaths) -> list[str]:
    return [m.name for m in open_store(paths).team_file().load().members]


def test_1_a_developer_writes_the_schema_and_a_tester_checks_it(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    schema = "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL);\n"
    lead = run(
        {
            # by what the conversation holds, not by turn number: on a loaded machine alice's
            # report can come with the result of her spawn, in the same request
            "team-lead": once_seen(
                (
                    "Spawn alice",
                    spawn("alice", "Create schema.sql with a users table.", mode="acceptEdits"),
                ),
                (
                    "schema.sql is written",
                    spawn("bob", "Check that schema.sql exists and list its contents."),
                ),
            ),
            "alice": [
                Turn.tool("Write", {"file_path": "schema.sql", "content": schema}),
                says("schema.sql is written with a users table $(x) 'é'"),
                Turn.text("Done."),
            ],
            "bob": [
                Turn.tool("Read", {"file_path": "schema.sql"}),
                says("schema.sql exists: CREATE TABLE users (id, email)"),
                Turn.text("Checked."),
            ],
        },
        "--teammate-model",
        "sonnet",
    )
    lead.type(
        "Spawn alice as a backend developer. Ask her to create schema.sql with a users table."
    )
    lead.expect("alice: schema.sql is written with a users table $(x) 'é'")  # text unharmed
    lead.expect("bob: schema.sql exists: CREATE TABLE users")
    assert (workdir / "schema.sql").read_text() == schema
    assert members(paths) == ["team-lead", "alice", "bob"]
    assert placed(paths, alice="a", bob="b")  # on PostgreSQL, one on each host
    assert paths.config.exists() == (paths.store is None)  # on PostgreSQL, no team files here
    assert lead.quit() == 0


def test_2_a_shutdown_is_approved_the_pane_goes_and_tasks_return(
    run: Any, workdir: Path, paths: TeamPaths, backend: str, tmux_socket: str
) -> None:
    lead = run(
        {
            "team-lead": on_input(
                ("Spawn alice", spawn("alice", "Create notes.txt.", mode="acceptEdits")),
                (
                    "Ask alice to shut down",
                    Turn.tool(
                        "SendMessage",
                        {"to": "alice", "message": {"type": "shutdown_request", "reason": "done"}},
                    ),
                ),
            ),
            "alice": [
                Turn.tool("Write", {"file_path": "notes.txt", "content": "notes\n"}),
                says("notes.txt is written"),
                Turn.text("Done."),
            ],
        },
        "--teammate-model",
        "sonnet",
    )
    lead.type("Spawn alice and have her create notes.txt")
    lead.expect("alice: notes.txt is written")
    assert placed(paths, alice="a")
    alice = open_store(paths).team_file().load().member("alice")
    assert alice is not None
    pid = alice.model_extra["pid"]  # on this machine, whichever host started it
    board = open_store(paths).task_board()
    task = board.create("half done")
    board.update(task.id, owner="alice", status="in_progress")
    lead.type("Ask alice to shut down.")
    wait_for(lambda: "alice" not in members(paths), "alice to be removed")
    lead.expect("alice: alice has shut down")
    assert (workdir / "notes.txt").exists()
    released = board.require(task.id)
    assert released.status == "pending" and released.owner is None
    wait_for(lambda: not pid_alive(pid), "alice's process to end")
    if backend == "tmux":
        wait_for(lambda: "alice" not in panes(tmux_socket), "alice's pane to close")
    assert lead.quit() == 0


def test_3_a_plan_is_rejected_with_feedback_then_approved_then_edits_happen(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    (workdir / "util.py").write_text("def f(x):\n    return x+1\n")
    lead = run(
        {
            "team-lead": [
                spawn("bob", "Refactor util.py: rename f to increment.", mode="plan"),
                Turn.text("Bob will send a plan."),
            ],
            "bob": [
                Turn.tool(
                    "Edit",
                    {
                        "file_path": "util.py",
                        "old_string": "def f(",
                        "new_string": "def increment(",
                    },
                ),
                Turn.tool("ExitPlanMode", {"plan": "1. rename f"}),
                Turn.tool("ExitPlanMode", {"plan": "1. rename f to increment\n2. update callers"}),
                Turn.tool(
                    "Edit",
                    {
                        "file_path": "util.py",
                        "old_string": "def f(",
                        "new_string": "def increment(",
                    },
                ),
                says("util.py refactored"),
                Turn.text("Done."),
            ],
        },
        "--teammate-model",
        "sonnet",
    )
    lead.type("Spawn bob to refactor util.py, plan first.")
    lead.expect("bob: asks: ExitPlanMode: a plan [plan_approval-", "bob's first plan")
    assert placed(paths, bob="a")
    assert (workdir / "util.py").read_text().startswith("def f(")  # plan mode: no edit yet
    lead.type("n say which callers you will update")
    lead.expect("denied plan_approval_request")
    wait_for(lambda: lead.output.count("asks: ExitPlanMode") == 2, "bob's second plan")
    lead.type("/approve --mode acceptEdits")
    lead.expect("bob: util.py refactored")
    assert (workdir / "util.py").read_text().startswith("def increment(")
    assert lead.quit() == 0


def test_4_three_tasks_two_workers_each_task_done_exactly_once(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    tasks = [
        Turn.tool(
            "TaskCreate",
            {
                "subject": f"step {n}",
                "description": "",
                "metadata": {"command": f"echo step {n} >> done.txt"},
            },
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
    lines = (workdir / "done.txt").read_text().splitlines()
    assert sorted(lines) == ["step 1", "step 2", "step 3"]
    # alice may do all three before bob has joined: he is spawned all the same
    wait_for(lambda: {"alice", "bob"} <= set(members(paths)), "alice and bob to join")
    assert placed(paths, alice="a", bob="b")
    mailbox = open_store(paths).mailbox()

    def reports() -> list[str]:
        # on files the archive first: an entry compacted meanwhile is then seen twice, never
        # missed
        entries = mailbox.peek_all("team-lead")
        notes = [e.structured() for e in {e.identity: e for e in entries}.values()]
        return [
            n.completedTaskId
            for n in notes
            if isinstance(n, IdleNotification) and n.completedTaskId
        ]

    # a worker marks its task completed, then reports: wait for the three reports
    wait_for(lambda: len(reports()) >= 3, "three completion reports")
    assert sorted(reports()) == ["1", "2", "3"]
    assert lead.quit() == 0


def test_5_a_command_the_mode_does_not_allow_waits_for_an_approval_from_another_terminal(
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
    assert placed(paths, carol="a")
    listed = swarm("permissions", "--json")
    (request,) = json.loads(listed.stdout)
    assert request["teammate"] == "carol" and request["tool"] == "Bash"
    assert swarm("approve", request["id"]).returncode == 0  # another terminal
    wait_for(lambda: (workdir / "a.txt").exists(), "the approved command to run")
    lead.expect("carol: asks: Bash: echo denied > d.txt")
    lead.type("n not that one")
    lead.expect(
        "carol: second command: Permission to use Bash was denied by team-lead: not that one"
    )
    assert not (workdir / "d.txt").exists()
    assert lead.quit() == 0


def test_6_a_broadcast_reaches_every_member_but_the_sender(
    run: Any, workdir: Path, paths: TeamPaths
) -> None:
    lead = run(
        {
            "team-lead": [
                # alice last: `spawn` returns once a teammate has joined, and alice says
                # hello as soon as she starts
                spawn("bob", "Wait."),
                spawn("carol", "Wait."),
                spawn("alice", "Tell everyone hello.", model="sonnet"),
                Turn.text("All three are up."),
            ],
            "alice": [
                Turn.tool(
                    "SendMessage", {"to": "*", "message": "hello everyone", "summary": "hello"}
                ),
                Turn.text("Said hello."),
            ],
        },
        "--teammate-model",
        "shell",
    )
    # alice is a Claude teammate, bob and carol shell workers
    lead.type("Spawn alice, bob and carol.")
    wait_for(
        lambda: set(members(paths)) == {"team-lead", "alice", "bob", "carol"}, "three teammates"
    )
    assert placed(paths, bob="a", carol="b", alice="a")
    mailbox = open_store(paths).mailbox()

    def got_hello(name: str) -> bool:
        return any(e.text == "hello everyone" for e in mailbox.peek_all(name))

    wait_for(lambda: all(got_hello(n) for n in ("bob", "carol", "team-lead")), "the broadcast")
    assert not got_hello("alice")
    lead.expect("alice: hello everyone")
    assert lead.quit() == 0
