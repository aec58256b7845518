"""`swarm lead` as a person uses it: a real process reading typed lines on stdin, a lead agent
and its teammates on the real `anthropic` SDK against the local Messages API server, real
teammate processes (subprocess backend here; tmux in the scenario tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn, by_agent

from protocols.clock import iso_from_ms, now_ms
from protocols.inbox.mailbox import Mailbox, new_item
from protocols.inbox.permissions import request_permission
from protocols.member.status import read_status
from protocols.paths import TeamPaths
from protocols.pids import pid_alive
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from protocols.values import MemberState
from swarm.team.approvals import pending_requests
from swarm.team.lifecycle import request_shutdown
from swarm.team.members import member_state


@pytest.fixture
def sessions(config_root: Path) -> Iterator[list[LeadSession]]:
    started: list[LeadSession] = []
    yield started
    for session in started:
        session.close()
    for team_dir in sorted((config_root / "teams").glob("*")):
        paths = TeamPaths(config_root, team_dir.name)
        for member in TeamFile(paths).load().members:
            if member.name != "team-lead":
                # a member whose process never started (or died) cannot answer: do not wait
                live = member_state(member) in (MemberState.WORKING, MemberState.IDLE)
                request_shutdown(
                    paths, member.name, "test over", wait_s=5 if live else 0, force=True
                )


def test_the_lead_agent_spawns_a_teammate_and_reads_its_result(
    workdir: Path, sessions: list[LeadSession], paths: TeamPaths
) -> None:
    scripts = {
        "team-lead": [
            Turn.tool(
                "Agent",
                {
                    "description": "backend developer",
                    "name": "alice",
                    "prompt": "Create schema.sql with a users table, then tell me.",
                    "mode": "acceptEdits",
                },
            ),
            Turn.text("Alice is on it."),
            Turn.text("Alice wrote schema.sql."),
        ],
        "alice": [
            Turn.tool(
                "Write",
                {
                    "file_path": "schema.sql",
                    "content": "CREATE TABLE users (id INTEGER PRIMARY KEY);\n",
                },
            ),
            Turn.tool(
                "SendMessage",
                {
                    "to": "team-lead",
                    "message": "schema.sql has a users table",
                    "summary": "schema done",
                },
            ),
            Turn.text("Done."),
        ],
    }
    with MessagesAPI(by_agent(scripts)) as api:
        lead = LeadSession(api, workdir, "--backend", "subprocess", "--teammate-model", "sonnet")
        sessions.append(lead)
        lead.expect("leading team 't'")
        lead.type(
            "Spawn alice as a backend developer. Ask her to create schema.sql with a users table."
        )
        lead.expect("schema.sql has a users table", "alice's message in the console")
        lead.expect("lead: Alice wrote schema.sql.", "the lead agent's answer to her message")
        assert lead.quit() == 0
    assert (workdir / "schema.sql").read_text().startswith("CREATE TABLE users")
    member = TeamFile(paths).load().member("alice")
    assert member is not None and member.agentType == "general-purpose"
    lead_requests = [r for r in api.requests if "You are the team lead" in str(r["system"])]
    spawned = lead_requests[1]["messages"][-1]["content"][0]["content"]
    assert spawned.startswith("Spawned successfully.\nagent_id: alice@t\nname: alice\nteam_name: t")
    heard = str(lead_requests[2]["messages"][-1])
    assert (
        '<teammate-message teammate_id="alice"' in heard and "schema.sql has a users table" in heard
    )


def test_without_a_key_the_lead_is_a_console_for_people(
    workdir: Path, sessions: list[LeadSession], team: TeamFile
) -> None:
    lead = LeadSession(None, workdir)
    sessions.append(lead)
    lead.expect("the lead agent is off: ANTHROPIC_API_KEY is not set")
    lead.type("/task write the docs")
    lead.expect("task #1 created: write the docs")
    lead.type("/send bob hello bob")
    lead.expect("sent to bob")
    lead.type("hello?")
    lead.expect("the lead agent is off")
    lead.type("/frobnicate")
    lead.expect("unknown command /frobnicate")
    Mailbox(team.paths).send("team-lead", "hi lead", sender="alice", color="blue")
    lead.expect("alice: hi lead", "alice's message")
    assert [e.text for e in Mailbox(team.paths).read_all("bob")] == ["hello bob"]
    # a huge message is cut on the console; the inbox keeps all of it
    huge = "\n".join(f"line {i}" for i in range(5000))
    Mailbox(team.paths).send("team-lead", huge, sender="alice")
    lead.expect("more lines (`swarm inbox` shows it whole)", "the cut huge message")
    assert "line 4999" not in lead.output and "line 29" in lead.output
    # a task with a command, and a shell worker started from the console, which does it
    lead.type("/task compute it --command 'echo \"$((6*7))\" > answer.txt' --blocked-by ''")
    lead.expect("task #2 created: compute it")
    lead.type("/task no such --frob x")
    lead.expect("unknown option '--frob'")
    lead.type("/spawn bad$name --backend subprocess hi")
    lead.expect("error:", "a refused name")
    lead.type("/spawn worker --backend subprocess work the board")
    lead.expect("spawned worker (shell) in a subprocess")
    board = TaskBoard(team.paths)
    wait_for(lambda: board.get("2").status == "completed", "the worker to do task #2", 60)
    assert (workdir / "answer.txt").read_text().strip() == "42"
    assert lead.quit() == 0
    assert "Traceback" not in lead.output


def test_a_teammate_whose_process_dies_is_reaped_and_its_tasks_return(
    workdir: Path, sessions: list[LeadSession], team: TeamFile
) -> None:
    worker = subprocess.Popen(teammate_argv("alice"), cwd=workdir)
    try:
        board = TaskBoard(team.paths)
        wait_for(
            lambda: team.load().member("alice").model_extra.get("pid") == worker.pid,
            "alice to start",
        )
        board_task = board.create("long", metadata={"command": "sleep 60"})
        wait_for(lambda: board.require(board_task.id).owner == "alice", "alice to claim the task")
        lead = LeadSession(None, workdir)
        sessions.append(lead)
        lead.expect("leading team 't'")
        worker.kill()
        worker.wait(10)
        lead.expect("alice has stopped", "the reaped teammate in the console")
        assert team.load().member("alice") is None
        again = board.require(board_task.id)
        assert again.status == "pending" and again.owner is None
        assert lead.quit() == 0
    finally:
        if worker.poll() is None:
            worker.kill()


def test_the_team_files_auto_approval_rules_answer_matching_requests(
    workdir: Path, sessions: list[LeadSession], team: TeamFile
) -> None:
    (team.paths.team_dir / "swarm-lead.json").write_text(
        json.dumps({"autoApprove": ["Bash(ls:*)"], "autoDeny": ["Bash(rm:*)"]})
    )
    lead = LeadSession(None, workdir)
    sessions.append(lead)
    lead.expect("leading team 't'")
    mailbox = Mailbox(team.paths)
    for command in ("ls -la", "rm -rf build", "make"):
        request_permission(
            mailbox,
            worker="alice",
            tool_name="Bash",
            tool_use_id="toolu_1",
            description=f"Run: {command}",
            input={"command": command},
            color="blue",
        )
    lead.expect("approved by the team's rules: Bash: ls -la")
    lead.expect("denied by the team's rules: Bash: rm -rf build")
    lead.expect("asks: Bash: make [perm-")
    answers = [m for m in (e.structured() for e in mailbox.read_all("alice")) if m is not None]
    assert [a.approved for a in answers] == [True, False]
    assert [p.description for p in pending_requests(team.paths)] == ["Run: make"]
    assert lead.quit() == 0


def test_the_lead_agent_runs_sub_agents_and_a_background_one_wakes_it_when_done(
    workdir: Path, sessions: list[LeadSession]
) -> None:
    """`swarm lead`'s agent runs an Explore sub-agent while it waits, and a background one
    whose notification starts a lead turn by itself once the lead is idle at the console."""
    (workdir / "notes.txt").write_text("the answer is 42\n")
    lead: list[dict[str, Any]] = []
    released = threading.Event()

    def play(body: dict[str, Any]) -> Turn:
        system = json.dumps(body.get("system"))
        asked = json.dumps(body["messages"][0])
        if "You are a sub-agent" in system:
            if "BACKGROUND" in asked:  # ends once the lead's turn has ended: it must wake it
                released.wait(30)
                return Turn.text("background found: nothing else")
            if len(body["messages"]) == 1:
                return Turn.tool("Read", {"file_path": "notes.txt"})
            return Turn.text("notes.txt says 42")
        lead.append(body)
        last = json.dumps(body["messages"][-1])
        if len(lead) == 1:
            calls = [
                ("Agent", {"description": "read notes", "prompt": "Read notes.txt", "subagent_type": "Explore"}),
                ("Agent", {"description": "look further", "prompt": "BACKGROUND", "run_in_background": True}),
            ]  # fmt: skip
            return Turn.tools(calls)
        if "<task-notification>" in last and "background found" in last:
            return Turn.text("The background look found nothing else.")
        if "notes.txt says 42" in last:
            released.set()
            return Turn.text("The notes say 42.")
        return Turn.text("ok")

    with MessagesAPI(play, concurrent=True) as api:
        session = LeadSession(api, workdir, "--backend", "subprocess")
        sessions.append(session)
        session.expect("leading team 't'")
        session.type("What do the notes say? Look further in the background too.")
        session.expect("lead: The notes say 42.", "the sync sub-agent's answer, used")
        session.expect("lead: The background look found nothing else.", "the notification's turn")
        assert session.quit() == 0
    explore = [b for b in api.requests if "You are a sub-agent" in json.dumps(b.get("system"))]
    assert any(b["model"] == "claude-haiku-5-5" for b in explore)  # Explore's model
    tools = {t["name"] for b in explore for t in b["tools"]}
    # the lead's sub-agents read and search only (MCP resources and deferred tools included)
    assert tools <= {"Read", "Glob", "Grep", "ToolSearch", "ListMcpResources", "ReadMcpResource"}


def test_a_person_runs_a_skill_at_the_lead_console_with_slash_name(
    workdir: Path, sessions: list[LeadSession]
) -> None:
    """`/standup today's goals` typed at `swarm lead` gives the lead agent the skill's
    instructions with the arguments; a `context: fork` skill runs in a sub-agent whose answer
    reaches the lead agent as a notification; an unknown /name is still an error."""
    skills = workdir / ".claude" / "skills"
    (skills / "standup").mkdir(parents=True)
    (skills / "standup" / "SKILL.md").write_text(
        "---\nname: standup\ndescription: Run a stand-up\n---\nAsk each teammate about $ARGUMENTS.\n"
    )
    (skills / "survey").mkdir(parents=True)
    (skills / "survey" / "SKILL.md").write_text(
        "---\nname: survey\ndescription: Survey the repo\ncontext: fork\n---\nList the files.\n"
    )

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in json.dumps(body.get("system")):
            return Turn.text("survey: 3 files")
        last = json.dumps(body["messages"][-1], ensure_ascii=False)
        if "Ask each teammate about today's goals «ok»." in last and "/standup" in last:
            return Turn.text("Stand-up skill received.")
        if "<task-notification>" in last and "survey: 3 files" in last:
            return Turn.text("The survey says 3 files.")
        return Turn.text("ok")

    with MessagesAPI(play, concurrent=True) as api:
        session = LeadSession(api, workdir, "--backend", "subprocess")
        sessions.append(session)
        session.expect("leading team 't'")
        session.type("/standup today's goals «ok»")
        session.expect("lead: Stand-up skill received.", "the skill's body as the lead's turn")
        session.type("/survey")
        session.expect("lead: The survey says 3 files.", "the fork skill's notification")
        session.type("/nosuchskill")
        session.expect("unknown command /nosuchskill", "an unknown name is an error")
        assert session.quit() == 0
    first = api.requests[0]
    assert "- standup: Run a stand-up" in json.dumps(first["system"])


def test_the_lead_agent_uses_the_projects_mcp_servers(
    workdir: Path, sessions: list[LeadSession], paths: TeamPaths
) -> None:
    """`swarm lead`'s agent connects to the servers of the project's .mcp.json, calls a
    read-only tool without asking, and stops the server when it quits."""
    server = Path(__file__).resolve().parent.parent / "mcp_server.py"
    config = {"mcpServers": {"tools": {"command": sys.executable, "args": [str(server)]}}}
    (workdir / ".mcp.json").write_text(json.dumps(config))

    def play(body: dict[str, Any]) -> Turn:
        last = json.dumps(body["messages"][-1])
        if "echo: via the lead" in last:
            return Turn.text(f"The server said: {last.split('echo: ')[1].split(')')[0]})")
        return Turn.tool("mcp__tools__echo", {"text": "via the lead"})

    def connected() -> bool:
        status = read_status(paths, "team-lead")
        return status is not None and [s.state for s in status.mcpServers] == ["connected"]

    with MessagesAPI(play) as api:
        lead = LeadSession(api, workdir, "--backend", "subprocess")
        sessions.append(lead)
        lead.expect("leading team 't'")
        wait_for(connected, "the lead's MCP server to connect")
        lead.type("Echo something through MCP.")
        lead.expect("lead: The server said: via the lead", "the tool's answer, used")
        assert lead.quit() == 0
    # deferred behind ToolSearch, as Claude Code: named in the first request, schema not sent
    first = api.requests[0]
    assert "mcp__tools__echo" not in [t["name"] for t in first["tools"]]
    assert "ToolSearch" in [t["name"] for t in first["tools"]]
    assert "mcp__tools__echo" in json.dumps(first["messages"]) + json.dumps(first.get("system"))
    said = json.dumps(api.requests[1]["messages"][-1])
    pid = int(said.split("(pid ")[1].split(")")[0])
    wait_for(lambda: not pid_alive(pid), "the lead's MCP server to stop")


def test_earlier_messages_keep_their_time_and_a_second_lead_only_watches(
    workdir: Path, sessions: list[LeadSession], team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages waiting when `swarm lead` starts come under an "earlier" line, each stamped
    with when it was sent (with its date when not today). A second `swarm lead` on the team
    only watches: it names the first's pid, shows what arrives, marks nothing read, answers
    nothing. kill -9 of the first leaves the team unlocked: a third one leads, and shows the
    message the watcher saw as an earlier one, still unread. /status fits $COLUMNS."""
    mailbox = Mailbox(team.paths)
    sent_ms = now_ms() - 86_400_000 - 3_723_000  # a day and 1h02m03s ago
    old = new_item("from yesterday", "alice")
    old["timestamp"] = iso_from_ms(sent_ms)
    mailbox.inbox("team-lead").deliver(old, mailbox.compact_after)
    when = datetime.fromtimestamp(sent_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")

    first = LeadSession(None, workdir)
    sessions.append(first)
    first.expect(f"[{when}] alice: from yesterday", "the earlier message, at its own time")
    first.expect("-- from now on, as they arrive --", "the line after the earlier ones")
    lines = first.output.splitlines()
    earlier = lines.index("-- earlier: 1 from before this console started --")
    assert lines[earlier + 1].startswith(f"[{when}]") and "as they arrive" in lines[earlier + 2]

    second = LeadSession(None, workdir)
    sessions.append(second)
    second.expect(f"read-only: `swarm lead` pid {first.proc.pid} leads team 't'")
    second.expect(f"[{when}] alice: from yesterday", "the history, shown to the watcher too")
    request_permission(
        mailbox,
        worker="bob",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description="Run: make",
        input={"command": "make"},
    )
    first.expect("bob: asks: Bash: make [perm-")
    second.expect("bob: asks: Bash: make [perm-")
    second.expect("the leading console answers it")
    for refused in ("y", "/approve", "/send bob hi", "tell bob to stop"):
        second.type(refused)
    wait_for(lambda: second.output.count("error: read-only (") == 4, "four refusals")
    assert [p.description for p in pending_requests(team.paths)] == ["Run: make"]

    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait(10)
    second.expect(f"the leading `swarm lead` (pid {first.proc.pid}) has quit")
    mailbox.send("team-lead", "while nobody leads", sender="carol")
    second.expect("carol: while nobody leads")
    unread = [e.text for e in mailbox.read_unread("team-lead")]
    assert unread == ["while nobody leads"], unread  # the watcher marked nothing read
    assert second.quit() == 0

    monkeypatch.setenv("COLUMNS", "70")
    third = LeadSession(None, workdir)
    sessions.append(third)
    third.expect("leading team 't'", "a lead: kill -9 left nothing locked")
    third.expect("carol: while nobody leads")
    wait_for(lambda: not mailbox.read_unread("team-lead"), "the third lead to read it")
    third.type("/status")
    third.expect("waiting for you (1)")
    status = third.output[third.output.index("team t · ") :].splitlines()
    assert all(len(line) <= 70 for line in status), status
    assert third.quit() == 0
