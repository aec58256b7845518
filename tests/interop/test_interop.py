"""swarm and a real Claude Code (2.1.88, 2.1.330, 2.1.332) in one team (docs/interop.md).

Claude Code is installed from the npm registry (`claude_code.install`) and runs offline in tmux
panes on the test's own tmux server, its model the local Messages API server playing scripted
turns. Each test checks one direction of the file format with the real peer: a Claude Code
teammate led by swarm (messages, idle notifications, shutdown, tasks), and locks shared by both
writers. Run alone with ``make test-interop``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claude_code
import inbox_load
import pytest
from claude_code import MODEL, Rule, approve_shutdown, last_user_text, reacting
from helpers import new_session, pane_ids, screen, swarm, wait_for
from messages_api import AGENT_KEY, MessagesAPI, Turn, by_agent

from protocols.errors import ProtocolsError
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

pytestmark = pytest.mark.interop
START_S = 60.0  # Claude Code's first start in a fresh config root takes a few seconds


@pytest.fixture(scope="session", params=claude_code.VERSIONS)
def claude(request: pytest.FixtureRequest) -> Path:
    return installed(request.param)


@pytest.fixture(scope="session")
def newest_claude() -> Path:
    """The newest Claude Code only (2.1.332): for what came after 2.1.88 (session teams, locked
    config, signatures), as 2.1.330 has it too."""
    return installed(claude_code.NEWEST)


def installed(version: str) -> Path:
    """Claude Code `version`: a skip without node or npm (saying so), a failure if npm fails."""
    try:
        return claude_code.install(version)
    except claude_code.Unavailable as exc:
        pytest.skip(str(exc))
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture
def work(tmp_path: Path, config_root: Path) -> Path:
    directory = tmp_path / "work"
    directory.mkdir()
    claude_code.trust(config_root, directory)
    return directory


def member_state(name: str) -> str:
    report = json.loads(swarm("status", "--json").stdout)
    return next(m["state"] for m in report["members"] if m["name"] == name)


def swarm_inbox(name: str) -> list[dict[str, Any]]:
    """`swarm inbox NAME --json`: every message NAME was sent, oldest first."""
    result = swarm("inbox", name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def lead_inbox() -> list[dict[str, Any]]:
    return swarm_inbox("team-lead")


def spawn_claude_code(
    name: str,
    api: MessagesAPI,
    claude: Path,
    work: Path,
    prompt: str,
    debug_file: Path | None = None,
) -> None:
    """``swarm spawn NAME --teammate-command claude``: a Claude Code teammate in a tmux pane
    (writing its debug log to `debug_file` when given)."""
    command = claude_code.command(claude)
    if debug_file is not None:
        command += f" --debug-file {shlex.quote(str(debug_file))}"
    spawned = swarm(
        "spawn",
        name,
        "-p",
        prompt,
        "--model",
        MODEL,
        "--teammate-command",
        command,
        "--backend",
        "tmux",
        "--permission-mode",
        "acceptEdits",
        "--cwd",
        str(work),
        env={"ANTHROPIC_BASE_URL": api.url_for(name), "ANTHROPIC_API_KEY": claude_code.API_KEY},
    )
    assert spawned.returncode == 0, spawned.stderr


@pytest.fixture
def team(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamPaths]:
    """Team ``t`` in `work`, where the test's ``swarm`` commands run too (a task's command runs
    where it was added)."""
    monkeypatch.chdir(work)
    assert swarm("team", "create", "t", "--cwd", str(work)).returncode == 0
    yield TeamPaths.for_team("t")


def test_a_claude_code_teammate_hears_swarm_and_answers(
    claude: Path, team: TeamPaths, work: Path, tmux_socket: str
) -> None:
    seen: list[str] = []
    rules: list[Rule] = [
        (
            "Say hello",
            lambda _: Turn.tool(
                "SendMessage",
                {"to": "team-lead", "message": "hello from Claude Code", "summary": "hello"},
            ),
        ),
        (
            "Repeat after me:",
            lambda text: Turn.tool(
                "SendMessage",
                {
                    "to": "team-lead",
                    "message": text.split("Repeat after me:", 1)[1].strip(),
                    "summary": "repeated",
                },
            ),
        ),
    ]
    with MessagesAPI(by_agent({"alice": reacting(rules, seen)})) as api:
        spawn_claude_code("alice", api, claude, work, "Say hello to the lead.")
        member = TeamFile(team).load().member("alice")
        assert member is not None and member.tmuxPaneId.startswith("%")
        assert member.tmuxPaneId in pane_ids(tmux_socket)

        def said(text: str) -> dict[str, Any] | None:
            return next((m for m in lead_inbox() if m["text"] == text), None)

        hello = wait_for(lambda: said("hello from Claude Code"), "alice's hello", START_S)
        assert (hello["from"], hello["type"], hello["summary"]) == ("alice", "message", "hello")
        assert hello["color"] == member.color
        idle = wait_for(
            lambda: [m for m in lead_inbox() if m["type"] == "idle_notification"],
            "alice's idle notification",
            START_S,
        )
        notification = json.loads(idle[0]["text"])
        assert (notification["from"], notification["idleReason"]) == ("alice", "available")
        assert seen[0] == "Say hello to the lead."
        # swarm status sees it as a live member: the pane's pid, and isActive as it writes it
        wait_for(lambda: member_state("alice") == "idle", "alice idle in swarm status")

        # swarm send: the text reaches the model inside <teammate-message>, byte for byte
        tricky = 'Repeat after me: it\'s "quoted" $(whoami) `id` ünïcode ✓\nsecond line'
        assert swarm("send", "alice", tricky, "--summary", "a test").returncode == 0
        echoed = wait_for(
            lambda: said('it\'s "quoted" $(whoami) `id` ünïcode ✓\nsecond line'),
            "alice repeating the message",
            START_S,
        )
        assert echoed["from"] == "alice"
        assert tricky in seen
        wrapped = f'<teammate-message teammate_id="team-lead" summary="a test">\n{tricky}\n'
        assert any(wrapped in last_user_text(r) for r in api.requests), "the wrapped message"

        # it marked both of swarm's messages read, and kept swarm's own keys
        def all_read() -> list[list[dict[str, Any]]] | None:
            try:  # Claude Code rewrites the file in place: a read can catch it half written
                entries = json.loads(team.inbox("alice").read_text())
            except ValueError:
                return None
            return [entries] if all(e["read"] for e in entries) else None

        (entries,) = wait_for(all_read, "alice's inbox all read")
        assert all("id" in e for e in entries)
        # 2.1.330 deleted what it read; swarm's history still has both messages, read
        history = [(m["text"], m["read"]) for m in swarm_inbox("alice")]
        assert history == [("Say hello to the lead.", True), (tricky, True)], history

        # swarm shutdown: Claude Code approves, swarm removes it and its pane
        rules.insert(0, ('"type":"shutdown_request"', approve_shutdown))
        stopped = swarm("shutdown", "alice", "--reason", "work is done", "--wait", "60")
        assert stopped.returncode == 0, stopped.stderr
        assert "approved" in stopped.stdout
        assert TeamFile(team).load().member("alice") is None
        wait_for(lambda: member.tmuxPaneId not in pane_ids(tmux_socket), "alice's pane gone")
        approved = next(m for m in lead_inbox() if m["type"] == "shutdown_approved")
        body = json.loads(approved["text"])
        # paneId and backendType come from Claude Code reading config.json, which it also
        # rewrites in place (isActive) at about the same moment: it sometimes reads its own
        # half-written file and leaves them out. swarm knows the pane from the member record.
        assert body["from"] == "alice"
        assert body.get("paneId", member.tmuxPaneId) == member.tmuxPaneId
        assert body.get("backendType", "tmux") == "tmux"


def tool_results(api: MessagesAPI, agent: str) -> list[str]:
    """Every tool result `agent`'s model was shown, as text, in the order they came."""
    texts = []
    for body in api.requests:
        if body.get(AGENT_KEY) != agent:
            continue
        content = claude_code.newest_message(body).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "".join(part.get("text", "") for part in inner)
                texts.append(claude_code.without_reminders(str(inner)))
    return texts


def test_tasks_are_shared_with_a_claude_code_teammate(
    claude: Path, team: TeamPaths, work: Path, tmux_socket: str
) -> None:
    assert (
        swarm(
            "task", "add", "write the schema", "-d", "users table", "-c", "make schema"
        ).returncode
        == 0
    )
    assert swarm("task", "add", "test the schema", "--blocked-by", "1").returncode == 0
    metadata = json.loads(team.task(1).read_text())["metadata"]  # swarm's: the command
    work_the_board = [
        Turn.tool("TaskList", {}),
        Turn.tool("TaskGet", {"taskId": "1"}),
        Turn.tool("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "bob"}),
        Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"}),
        Turn.tool(
            "TaskCreate",
            {
                "subject": "document the schema",
                "description": "in README",
                "activeForm": "Documenting",
            },
        ),
        Turn.tool("SendMessage", {"to": "team-lead", "message": "board done", "summary": "done"}),
    ]
    rules: list[Rule] = [("Work the board", lambda _: list(work_the_board))]
    # carol joins before bob starts: 2.1.88 rewrites config.json in place, without a lock, as
    # its turns end, and drops a member added meanwhile (docs/interop.md)
    TeamFile(team).add_member("carol", cwd=work)
    with MessagesAPI(by_agent({"bob": reacting(rules)})) as api:
        spawn_claude_code("bob", api, claude, work, "Work the board.")
        wait_for(
            lambda: any(m["text"] == "board done" for m in lead_inbox()), "bob's report", START_S
        )
        listed, got, claimed, completed, created = tool_results(api, "bob")[:5]

    # Claude Code's TaskList and TaskGet read swarm's tasks
    assert "#1 [pending] write the schema" in listed
    assert "#2 [pending] test the schema [blocked by #1]" in listed
    assert got.startswith("Task #1: write the schema\nStatus: pending\nDescription: users table")
    assert claimed.startswith("Updated task #1") and completed.startswith("Updated task #1")
    assert created == "Task #3 created successfully: document the schema"

    # swarm reads what Claude Code wrote, and Claude Code kept swarm's fields
    tasks = {t["id"]: t for t in json.loads(swarm("task", "list", "--json").stdout)}
    assert (tasks["1"]["status"], tasks["1"]["owner"]) == ("completed", "bob")
    assert tasks["1"]["metadata"] == metadata and metadata["command"] == "make schema"
    assert tasks["2"]["blockedBy"] == ["1"] and tasks["1"]["blocks"] == ["2"]
    assert (tasks["3"]["subject"], tasks["3"]["description"], tasks["3"]["activeForm"]) == (
        "document the schema",
        "in README",
        "Documenting",
    )
    # task #2 is now claimable through swarm; task #3 takes swarm's fields and keeps Claude Code's
    claim = swarm("task", "claim", "2", "--as", "carol")
    assert claim.returncode == 0, claim.stdout + claim.stderr
    assert swarm("task", "update", "3", "--owner", "bob").returncode == 0
    third = json.loads((team.tasks_dir / "3.json").read_text())
    assert (third["activeForm"], third["owner"], third["status"]) == (
        "Documenting",
        "bob",
        "pending",
    )
    # the board stays a valid task list for Claude Code too: ids are never reused
    assert TaskBoard(team).create("fourth").id == "4"
    assert swarm("shutdown", "bob", "--force", "--wait", "0").returncode == 0


def test_a_swarm_writer_and_a_claude_code_writer_share_one_inbox(
    claude: Path, team: TeamPaths, work: Path, tmux_socket: str, tmp_path: Path
) -> None:
    """Claude Code sends 50 messages to the lead in two bursts while one swarm process sends
    about 100 a second to the same inbox and another reads and archives them as fast: every
    message swarm acknowledged is there exactly once, and so is every one Claude Code wrote.
    Claude Code gives up on a lock after ~0.65 s and drops that message while its SendMessage
    still reports success (its bug, docs/interop.md). On a loaded machine that happens now and
    then even at this pace, so each Claude Code message missing must be one its own debug log
    says it failed to write; swarm itself never drops a write."""
    TeamFile(team).add_member("carol", cwd=work)
    burst = [
        Turn.tools(
            [
                (
                    "SendMessage",
                    {"to": "team-lead", "message": f"cc-{turn * 25 + i}", "summary": "burst"},
                )
                for i in range(25)
            ]
        )
        for turn in range(2)
    ]
    rules: list[Rule] = [("Send the burst", lambda _: list(burst))]
    results_seen = [0]  # the most SendMessage results one request of Claude Code's carried
    react = reacting(rules)

    def play(body: dict[str, Any]) -> Turn:
        blocks = [
            block
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
        ]
        results = sum(block.get("type") == "tool_result" for block in blocks)
        results_seen[0] = max(results_seen[0], results)
        return react(body)

    stop = tmp_path / "stop"
    swarm_side = inbox_load.start("t", "carol", 0.01, tmp_path, stop)
    try:
        with MessagesAPI(by_agent({"dan": play})) as api:
            debug_log = tmp_path / "dan-debug.txt"
            spawn_claude_code("dan", api, claude, work, "Send the burst.", debug_log)

            def texts() -> list[str]:
                return [e.text for e in Mailbox(team).peek_all("team-lead")]

            wait_for(lambda: results_seen[0] >= 50, "Claude Code's two bursts", START_S)
            wait_for(lambda: inbox_load.reads(tmp_path) > 10, "the reader at work")
            # on a loaded machine swarm's writer is slower: let it write its share, then stop
            wait_for(lambda: len(inbox_load.acknowledged(tmp_path)) > 50, "swarm's writes")
    finally:
        stop.touch()
        for proc in swarm_side:
            assert proc.wait(30) == 0
    everything = texts()
    sent_by_swarm = inbox_load.acknowledged(tmp_path)
    assert len(sent_by_swarm) > 50  # swarm wrote all the while Claude Code did
    for text in sent_by_swarm:
        assert everything.count(text) == 1, f"{text} is there {everything.count(text)} times"
    from_claude_code = [f"cc-{i}" for i in range(50)]
    for text in from_claude_code:
        assert everything.count(text) <= 1, f"{text} is there {everything.count(text)} times"
    missing = [text for text in from_claude_code if text not in everything]
    assert len(missing) == claude_code_failures(debug_log), (
        f"{missing} are missing; Claude Code logged {claude_code_failures(debug_log)} failed writes"
    )
    assert len(missing) < 5, f"Claude Code dropped {missing}: the lock is held far too long"
    raw = json.loads(team.inbox("team-lead").read_text())  # the live inbox parses as a JSON array
    assert isinstance(raw, list)
    assert swarm("shutdown", "dan", "--force", "--wait", "0").returncode == 0


def claude_code_failures(debug_log: Path) -> int:
    """How many inbox writes Claude Code's debug log says failed (it drops those messages)."""
    if not debug_log.exists():
        return 0
    return debug_log.read_text(errors="replace").count("Failed to write to inbox for")


def start_lead(claude: Path, api: MessagesAPI, root: Path, work: Path, socket: str) -> None:
    """A Claude Code lead in tmux session "lead", whose teammates run swarm's teammate program
    (CLAUDE_CODE_TEAMMATE_COMMAND) in panes beside it; returns once its prompt shows."""
    teammate_command = Path(sys.executable).with_name("swarm-teammate")
    # panes the lead splits start from the tmux server's environment: it gets everything
    environment = {
        "PATH": f"{teammate_command.parent}:{os.environ['PATH']}",
        "HOME": os.environ["HOME"],
        "TERM": "xterm-256color",
        "SHELL": "/bin/sh",
        "CLAUDE_CONFIG_DIR": str(root),
        "ANTHROPIC_BASE_URL": api.url_for("team-lead"),
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        "CLAUDE_CODE_TEAMMATE_COMMAND": str(teammate_command),
        # a swarm teammate stopping hands its tasks back given all the time a loaded machine
        # may need (the 5 s default cut it short once under make test: #1 stayed kim's)
        "SWARM_HANDBACK_S": "60",
        **claude_code.OFFLINE_ENV,
    }
    if claude_code.is_newest(claude):  # it runs teammates in its own process unless told not to
        (root / "settings.json").write_text('{"teammateMode": "tmux"}')
    lead = f"cd {work} && exec {claude} --model {MODEL} --permission-mode acceptEdits"
    new_session(socket, "lead", lead, (200, 50), env=environment)
    wait_for(lambda: "\u276f" in screen(socket, "lead"), "the lead's prompt", START_S)


def type_into(socket: str, target: str, text: str) -> None:
    """Type `text` into a pane and press Enter."""
    subprocess.run(["tmux", "-L", socket, "send-keys", "-t", target, "-l", text], check=True)
    subprocess.run(["tmux", "-L", socket, "send-keys", "-t", target, "Enter"], check=True)


def team_with(config_root: Path, member: str) -> TeamPaths | None:
    """The team that has `member` (a Claude Code lead's: named by it, or its session team)."""
    for config in sorted((config_root / "teams").glob("*/config.json")):
        paths = TeamPaths(config_root, config.parent.name)
        with contextlib.suppress(ProtocolsError):
            if TeamFile(paths).load().member(member):
                return paths
    return None


def test_a_claude_code_lead_starts_a_swarm_teammate(
    claude: Path, config_root: Path, work: Path, tmux_socket: str, tmp_path: Path
) -> None:
    """Claude Code leads: TeamCreate, then Agent with a name and a team starts the program in
    CLAUDE_CODE_TEAMMATE_COMMAND (swarm's teammate) in a pane beside it; they exchange
    messages and a task, and the lead's shutdown_request ends the swarm teammate."""
    lead_seen: list[str] = []
    newest = claude_code.is_newest(claude)
    # 2.1.178 and later: no TeamCreate, every lead session has its team session-<8 hex>
    create = [] if newest else [Turn.tool("TeamCreate", {"team_name": "mixed", "description": "x"})]
    lead_rules: list[Rule] = [
        (
            "Start the team",
            lambda _: [
                *create,
                Turn.tool(
                    "Agent",
                    {
                        "name": "sam",
                        "team_name": "mixed",
                        "description": "sam files a task",
                        "prompt": "File the task 'ship it' and tell the lead.",
                        "model": "sonnet",
                    },
                ),
            ],
        ),
        (
            "filed #1",
            lambda _: [
                Turn.tool("TaskList", {}),
                Turn.tool(
                    "SendMessage",
                    {"to": "sam", "message": "Thanks, sam: I see #1.", "summary": "thanks"},
                ),
            ],
        ),
        (
            "you're welcome",
            lambda _: Turn.tool(
                "SendMessage",
                {"to": "sam", "message": {"type": "shutdown_request", "reason": "all done"}},
            ),
        ),
    ]
    sam = [
        Turn.tool("TaskCreate", {"subject": "ship it", "description": "filed by sam"}),
        Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"}),
        Turn.tool("SendMessage", {"to": "team-lead", "message": "filed #1", "summary": "filed"}),
        Turn.text("Filed."),
        Turn.tool("SendMessage", {"to": "team-lead", "message": "you're welcome", "summary": "ok"}),
        Turn.text("Bye."),
    ]
    with MessagesAPI(by_agent({"team-lead": reacting(lead_rules, lead_seen), "sam": sam})) as api:
        start_lead(claude, api, config_root, work, tmux_socket)
        type_into(tmux_socket, "lead", "Start the team.")

        paths = wait_for(lambda: team_with(config_root, "sam"), "sam in the lead's team", START_S)
        assert (paths.team != "mixed") is newest, paths.team
        member = wait_for(  # the member is written first, its pane a moment later
            lambda: (m := TeamFile(paths).load().member("sam")) and m.tmuxPaneId != "" and m,
            "sam's pane",
        )
        assert member.backendType == "tmux" and member.tmuxPaneId.startswith("%")
        # sam is swarm's teammate: it keeps swarm's status file, and it heard the prompt
        wait_for(lambda: "you're welcome" in lead_seen, "the exchange", START_S)
        assert (paths.team_dir / "agents" / "sam.status.json").exists()
        assert "filed #1" in lead_seen
        sam_heard = [
            last_user_text(r)
            for r in api.requests
            if "You are 'sam'" in json.dumps(r.get("system"))
        ]
        assert any("File the task 'ship it'" in text for text in sam_heard)
        assert any(
            '<teammate-message teammate_id="team-lead" summary="thanks">\nThanks, sam: I see #1.'
            in text
            for text in sam_heard
        )
        # the task sam filed is on the lead's board, as the lead's TaskList shows it
        assert any("#1 [completed] ship it" in t for t in tool_results(api, "team-lead"))

        # the lead's shutdown_request: sam approves and exits; the lead removes it and its pane
        wait_for(
            lambda: TeamFile(paths).load().member("sam") is None, "sam removed by the lead", START_S
        )
        wait_for(lambda: member.tmuxPaneId not in pane_ids(tmux_socket), "sam's pane closed")
        # 2.1.88 tells its model with a teammate_terminated message; 2.1.330 shows it sam's
        # shutdown_approved itself
        told = "shutdown_approved" if newest else "teammate_terminated"
        wait_for(
            lambda: any(told in text and "sam" in text for text in lead_seen),
            "the lead told that sam is gone",
            START_S,
        )


def test_a_claude_code_session_team_ends_with_its_lead(
    newest_claude: Path, config_root: Path, work: Path, tmux_socket: str
) -> None:
    """2.1.330: the lead's team is session-<8 hex>, made and deleted by its session. swarm
    lists it and takes it as --team; when the lead exits, the swarm teammate it started stops
    cleanly, hands back the task it held, and nothing of it is left running."""
    claude = newest_claude  # session teams came with 2.1.178; 2.1.88 names its teams
    lead_rules: list[Rule] = [
        (
            "Start the team",
            lambda _: Turn.tool(
                "Agent",
                {
                    "name": "kim",
                    "description": "kim holds a task",
                    "prompt": "Take the task 'long job' and keep it.",
                    "model": "sonnet",
                },
            ),
        ),
    ]
    kim = [
        Turn.tool("TaskCreate", {"subject": "long job", "description": "held by kim"}),
        Turn.tool("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "kim"}),
        Turn.tool("SendMessage", {"to": "team-lead", "message": "holding #1", "summary": "held"}),
        Turn.text("Holding it."),
    ]
    with MessagesAPI(by_agent({"team-lead": reacting(lead_rules), "kim": kim})) as api:
        start_lead(claude, api, config_root, work, tmux_socket)
        type_into(tmux_socket, "lead", "Start the team.")
        paths = wait_for(lambda: team_with(config_root, "kim"), "kim in the lead's team", START_S)
        config = TeamFile(paths).load()
        session = config.leadSessionId or ""
        assert paths.team == f"session-{session[:8]}", (paths.team, session)
        task = paths.task(1)
        wait_for(
            lambda: task.exists() and json.loads(task.read_text()).get("owner") == "kim",
            "kim holding #1",
            START_S,
        )
        # swarm sees the session team, its lead's session and live process
        (row,) = [r for r in json.loads(swarm("team", "list", "--json").stdout)]
        assert (row["name"], row["kind"], row["lead_session"]) == (paths.team, "session", session)
        assert row["lead_alive"] is True and row["lead_pid"] > 0
        status = swarm("status", "--team", paths.team, "--json")
        assert status.returncode == 0, status.stderr
        assert "kim" in [m["name"] for m in json.loads(status.stdout)["members"]]
        kim_pid = wait_for(
            lambda: (TeamFile(paths).load().member("kim").model_extra or {}).get("pid"),  # type: ignore[union-attr]
            "kim's pid",
        )

        type_into(tmux_socket, "lead", "/exit")
        wait_for(lambda: "Exit and stop tasks" in screen(tmux_socket, "lead"), "the exit dialog")
        type_into(tmux_socket, "lead", "")  # its first choice: exit and stop the teammates
        try:
            wait_for(lambda: not paths.team_dir.exists(), "the session team deleted", 20)
        except AssertionError:
            print("SCREEN", screen(tmux_socket, "lead"))
            print("TREE", sorted(str(p) for p in paths.team_dir.rglob("*")))
            raise
        wait_for(lambda: not pid_alive(kim_pid), "kim's process ended", START_S)
        # the task list stays, its task handed back (the lead's clean-up may finish a moment
        # after the teammate's process is gone)
        wait_for(
            lambda: json.loads(task.read_text()).get("status") == "pending",
            "#1 handed back (pending)",
            20,
        )
        held = json.loads(task.read_text())
        assert held["status"] == "pending" and "owner" not in held, held
        assert not paths.team_dir.exists(), "a stopping teammate made the team again"


def test_members_swarm_adds_while_claude_code_works_are_kept(
    newest_claude: Path, team: TeamPaths, work: Path, tmux_socket: str
) -> None:
    """2.1.330 takes config.json.lock when it rewrites the team file (2.1.88 does not: there a
    member added at the wrong moment can be lost, docs/interop.md)."""
    claude = newest_claude  # 2.1.88 rewrites config.json without a lock
    rules: list[Rule] = [("Say", lambda text: Turn.text("ok"))]
    with MessagesAPI(by_agent({"alice": reacting(rules)})) as api:
        spawn_claude_code("alice", api, claude, work, "Say something.")
        wait_for(lambda: member_state("alice") == "idle", "alice idle", START_S)
        added = []
        for n in range(30):  # each message makes alice rewrite config.json (isActive) twice
            assert swarm("send", "alice", f"Say {n}.").returncode == 0
            TeamFile(team).add_member(f"extra{n}", cwd=work)
            added.append(f"extra{n}")
        wait_for(
            lambda: not Mailbox(team).read_unread("alice") and member_state("alice") == "idle",
            "alice through her messages",
            START_S,
        )
        names = TeamFile(team).load().member_names()
        assert [n for n in added if n not in names] == []
