"""The Claude brain as a real teammate process talking to the test suite's Messages API server
through the real `anthropic` SDK: the tool loop, permissions asked of a second process acting
as lead (the `swarm` CLI), plan approval, retries, tool errors, max turns, unknown recipients,
usage totals, transcripts, and an idle teammate that makes no model calls."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, Processes, swarm, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import permission_response
from protocols.member.status import read_status
from protocols.messages.models import (
    IdleNotification,
    ModeSetRequest,
    PermissionRequest,
    PlanApprovalRequest,
    ShutdownApproved,
    ShutdownRequest,
    TeamPermissionUpdate,
)
from protocols.tasks.board import NewTask, TaskBoard
from protocols.team.file import TeamFile
from teammate.agent.transcript import read_transcript

Start = Callable[..., subprocess.Popen[str]]


@pytest.fixture
def start(team: TeamFile, workdir: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start teammate NAME with the Claude brain against `api` (extra flags after it)."""
    processes = Processes(workdir)

    def launch(name: str, api: MessagesAPI, *extra: str) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        return processes.start(teammate_argv(name, *extra, model="sonnet"), env)

    yield launch
    processes.close()


def lead_inbox(team: TeamFile) -> list[tuple[Any, Any]]:
    return [(e, e.structured()) for e in Mailbox(team.paths).read_all("team-lead")]


def idle_notes(team: TeamFile) -> list[IdleNotification]:
    return [m for _, m in lead_inbox(team) if isinstance(m, IdleNotification)]


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request's last message."""
    content = request["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def prompt(team: TeamFile, name: str, text: str) -> None:
    Mailbox(team.paths).send(name, text, sender="team-lead", summary="your job")


def stop(team: TeamFile, proc: subprocess.Popen[str], name: str = "alice") -> str:
    """Ask `name` to shut down; return its output."""
    request = ShutdownRequest(
        requestId=f"shutdown-1@{name}", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send(name, request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output
    return output


def test_a_tool_loop_writes_a_file_messages_the_lead_and_counts_usage(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    content = "quotes \" ' $(rm -rf /) `x`\nünïcödé ✓\n"
    script = [
        Turn.tool("Write", {"file_path": "notes/out.txt", "content": content}),
        Turn.tool("Read", {"file_path": "notes/out.txt"}),
        Turn.tool(
            "SendMessage",
            {"to": "team-lead", "message": "wrote notes/out.txt", "summary": "wrote it"},
        ),
        Turn.text("All done."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        prompt(team, "alice", "Write notes/out.txt, then tell me.")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        output = stop(team, proc)
    assert (workdir / "notes" / "out.txt").read_text(encoding="utf-8") == content
    first, second, third, fourth = api.requests
    text = first["messages"][0]["content"][0]["text"]
    assert text.startswith('<teammate-message teammate_id="team-lead" summary="your job">\n')
    assert "Write notes/out.txt, then tell me.\n</teammate-message>" in text
    assert "Agent Teammate Communication" in json.dumps(first["system"])
    assert tool_results(second)[0]["content"].startswith("File created successfully at:")
    assert "ünïcödé ✓" in tool_results(third)[0]["content"]
    assert "Message sent to team-lead's inbox" in tool_results(fourth)[0]["content"]
    texts = [e.text for e, m in lead_inbox(team) if m is None]
    assert texts == ["wrote notes/out.txt"]
    (note,) = idle_notes(team)
    assert note.idleReason == "available"
    status = read_status(team.paths, "alice")
    assert status is not None and status.requests == 4 and status.turns == 4
    assert status.usage["input_tokens"] == 40 and status.usage["output_tokens"] == 20
    events = read_transcript(team.paths.transcript("alice"))
    kinds = [e["kind"] for e in events]
    assert kinds.count("request") == 4 and kinds.count("tool_call") == 3
    assert all("ts" in e for e in events)
    assert "All done." in output


def test_permission_asks_are_answered_by_a_second_process_acting_as_lead(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [
        Turn.tool("Bash", {"command": "echo yes > approved.txt", "description": "Write a file"}),
        Turn.tool("Bash", {"command": "echo no > denied.txt"}),
        Turn.text("Finished."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api)  # default mode: Bash asks the lead
        prompt(team, "alice", "Make two files.")
        answered: set[str] = set()
        for verdict in ("approve", "deny"):

            def pending() -> list[PermissionRequest]:
                return [
                    m
                    for _, m in lead_inbox(team)
                    if isinstance(m, PermissionRequest) and m.request_id not in answered
                ]

            (request,) = wait_for(pending, f"a permission request to {verdict}")
            assert request.agent_id == "alice" and request.tool_name == "Bash"
            assert request.tool_use_id.startswith("toolu_")  # the model's own tool_use id
            args = ["--reason", "not that one"] if verdict == "deny" else []
            result = swarm(verdict, request.request_id, *args)
            assert result.returncode == 0, result.stderr
            answered.add(request.request_id)
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert (workdir / "approved.txt").read_text() == "yes\n"
    assert not (workdir / "denied.txt").exists()
    denial = tool_results(api.requests[2])[0]
    assert denial["is_error"] is True and "not that one" in denial["content"]


def test_a_plan_is_rejected_then_approved_and_only_then_edits_are_allowed(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [
        Turn.tool("Write", {"file_path": "early.txt", "content": "too soon"}),
        Turn.tool("ExitPlanMode", {"plan": "1. write plan.txt"}),
        Turn.tool("ExitPlanMode", {"plan": "1. write plan.txt\n2. tell the lead"}),
        Turn.tool("Write", {"file_path": "plan.txt", "content": "done"}),
        Turn.text("Implemented."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--plan-mode-required")
        prompt(team, "alice", "Plan, then write plan.txt.")
        seen: set[str] = set()
        for verdict in ("deny", "approve"):

            def plan_requests() -> list[PlanApprovalRequest]:
                return [
                    m
                    for _, m in lead_inbox(team)
                    if isinstance(m, PlanApprovalRequest) and m.requestId not in seen
                ]

            (request,) = wait_for(plan_requests, f"a plan to {verdict}")
            assert Path(request.planFilePath).read_text() == request.planContent
            args = (
                ["--reason", "add a step to tell me"]
                if verdict == "deny"
                else ["--mode", "acceptEdits"]
            )
            assert swarm(verdict, request.requestId, *args).returncode == 0
            seen.add(request.requestId)
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert not (workdir / "early.txt").exists()
    assert (workdir / "plan.txt").read_text() == "done"
    refused = tool_results(api.requests[1])[0]
    assert refused["is_error"] and "plan mode" in refused["content"]
    rejected = tool_results(api.requests[2])[0]["content"]
    assert "rejected" in rejected and "add a step to tell me" in rejected
    assert "approved" in tool_results(api.requests[3])[0]["content"]


def test_overloaded_then_success_is_retried_and_a_raising_tool_is_an_error_result(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [
        Turn.failure(529),
        # a name longer than the file system allows: the tool raises OSError
        Turn.tool("Write", {"file_path": "n" * 300, "content": "x"}),
        Turn.tool("Glob", {"pattern": "*", "path": "/no/such/dir"}),
        Turn.text("Recovered."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        prompt(team, "alice", "Try things.")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert len(api.requests) == 4  # the 529 was retried by the SDK
    crashed = tool_results(api.requests[2])[0]
    assert crashed["is_error"] is True and "Write failed: OSError" in crashed["content"]
    missing = tool_results(api.requests[3])[0]
    assert missing["is_error"] is True
    (note,) = idle_notes(team)
    assert note.idleReason == "available"


def test_max_turns_stops_the_loop_and_tells_the_lead(team: TeamFile, start: Start) -> None:
    script = [Turn.tool("TaskList", {}) for _ in range(5)]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--max-turns", "2")
        prompt(team, "alice", "Loop forever.")
        (note,) = wait_for(lambda: idle_notes(team), "alice to report")
        stop(team, proc)
    assert len(api.requests) == 2
    assert note.idleReason == "failed" and "max turns" in (note.failureReason or "")


def test_an_unknown_recipient_is_an_error_for_the_model_and_no_orphan_inbox(
    team: TeamFile, start: Start
) -> None:
    script = [
        Turn.tool("SendMessage", {"to": "bobby", "message": "hi", "summary": "hi"}),
        Turn.tool("SendMessage", {"to": "bob@t", "message": "hi", "summary": "hi"}),
        Turn.text("Oops."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api)
        prompt(team, "alice", "Say hi to bobby.")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    unknown = tool_results(api.requests[1])[0]
    assert unknown["is_error"] and "bobby" in unknown["content"] and "bob" in unknown["content"]
    assert not team.paths.inbox("bobby").exists()
    at_sign = tool_results(api.requests[2])[0]
    assert at_sign["is_error"] and "bare teammate name" in at_sign["content"]


def test_a_claimed_task_is_completed_by_the_model_and_an_idle_teammate_calls_no_model(
    team: TeamFile, start: Start
) -> None:
    board = TaskBoard(team.paths)
    script = [
        Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"}),
        Turn.text("Task done."),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api)
        board.create("count files", "count the files in the work directory")
        wait_for(lambda: board.require("1").status == "completed", "the task to be completed")
        (note,) = wait_for(lambda: idle_notes(team), "alice to report")
        assert note.completedTaskId == "1" and note.completedStatus == "resolved"
        calls = len(api.requests)
        # idle: board changes that give it nothing to do, and time, make no model calls
        # bob's from the moment it exists: an idle alice could take it between create and assign
        (bobs,) = board.create_many([NewTask("bob's", "not for alice", owner="bob")])
        board.update(bobs.id, status="in_progress")
        with pytest.raises(AssertionError):
            wait_for(lambda: len(api.requests) > calls, "a model call while idle", timeout=3)
        stop(team, proc)
    assert "You have claimed task #1: count files" in json.dumps(api.requests[0])
    assert any(isinstance(m, ShutdownApproved) for _, m in lead_inbox(team))


def test_swarm_spawn_runs_a_scripted_teammate_from_a_yaml_file_offline(
    team: TeamFile, tmp_path: Path, workdir: Path
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text(
        "- tool: Write\n"
        '  input: {file_path: hello.txt, content: "hello from a script\\n"}\n'
        "- tools:\n"
        "    - {name: SendMessage, input: {to: team-lead, message: wrote hello.txt, summary: done}}\n"
        "- text: Finished.\n"
    )
    result = swarm(
        "spawn",
        "dave",
        "-p",
        "write hello.txt",
        "--script",
        str(script),
        "--permission-mode",
        "acceptEdits",
        "--backend",
        "subprocess",
        "--cwd",
        str(workdir),
    )
    assert result.returncode == 0, result.stderr
    wait_for(lambda: [m for m in idle_notes(team) if m.from_ == "dave"], "dave to go idle")
    assert (workdir / "hello.txt").read_text() == "hello from a script\n"
    assert [e.text for e, m in lead_inbox(team) if m is None] == ["wrote hello.txt"]
    status = read_status(team.paths, "dave")
    assert status is not None and status.model == "scripted" and status.turns == 3
    assert swarm("shutdown", "dave").returncode == 0


def test_swarm_spawn_refuses_a_claude_model_it_could_not_run(
    team: TeamFile, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [k for k in os.environ if k.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(name)
    no_key = swarm("spawn", "erin", "-p", "hi", "--model", "sonnet", "--cwd", str(workdir))
    assert no_key.returncode == 1 and "needs ANTHROPIC_API_KEY" in no_key.stderr
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    unknown = swarm(
        "spawn",
        "erin",
        "-p",
        "hi",
        "--model",
        "sonnet",
        "--agent-type",
        "nope",
        "--cwd",
        str(workdir),
    )
    assert unknown.returncode == 1 and "unknown agent type 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    assert team.load().member("erin") is None and not team.paths.inbox("erin").exists()


def test_an_agent_definition_chooses_the_tools_prompt_and_max_turns(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: reviews code\ntools: Read, Grep\nmaxTurns: 2\n---\n"
        "You review code and never change it.\n"
    )
    with MessagesAPI([Turn.tool("Grep", {"pattern": "x"})] * 3) as api:
        proc = start("alice", api, "--agent-type", "reviewer")
        prompt(team, "alice", "Review.")
        (note,) = wait_for(lambda: idle_notes(team), "alice to report")
        stop(team, proc)
    first = api.requests[0]
    names = [t["name"] for t in first["tools"]]
    assert "Read" in names and "Grep" in names and "SendMessage" in names
    assert "Bash" not in names and "Write" not in names and "Edit" not in names
    assert "You review code and never change it." in first["system"][0]["text"]
    assert len(api.requests) == 2 and "max turns" in (note.failureReason or "")


def test_the_lead_can_add_rules_and_change_the_mode_of_a_running_teammate(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    mailbox = Mailbox(team.paths)
    script = [
        Turn.tool("Bash", {"command": "echo one > one.txt"}),  # allowed by the new rule
        Turn.text("one done"),
        Turn.tool("Bash", {"command": "touch two.txt"}),  # allowed by bypassPermissions
        Turn.text("two done"),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api)
        update = TeamPermissionUpdate.model_validate(
            {
                "type": "team_permission_update",
                "permissionUpdate": {
                    "type": "addRules",
                    "rules": [{"toolName": "Bash", "ruleContent": "echo:*"}],
                    "behavior": "allow",
                    "destination": "session",
                },
                "directoryPath": str(workdir),
                "toolName": "Bash",
            }
        )
        mailbox.send("alice", update, sender="team-lead")
        wait_for(lambda: all(e.is_read for e in mailbox.read_all("alice")), "the update to be read")
        prompt(team, "alice", "Write one.txt.")
        wait_for(lambda: len(idle_notes(team)) == 1, "the first turn to end")
        mailbox.send(
            "alice", ModeSetRequest(mode="bypassPermissions", from_="team-lead"), sender="team-lead"
        )
        prompt(team, "alice", "Make two.txt.")
        wait_for(lambda: len(idle_notes(team)) == 2, "the second turn to end")
        stop(team, proc)
    assert (workdir / "one.txt").exists() and (workdir / "two.txt").exists()
    assert not [m for _, m in lead_inbox(team) if isinstance(m, PermissionRequest)]


def test_only_the_leads_answer_to_the_outstanding_request_counts(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    mailbox = Mailbox(team.paths)
    script = [Turn.tool("Bash", {"command": "echo ran > ran.txt"}), Turn.text("ok")]
    with MessagesAPI(script) as api:
        proc = start("alice", api)
        prompt(team, "alice", "Run it.")
        (request,) = wait_for(
            lambda: [m for _, m in lead_inbox(team) if isinstance(m, PermissionRequest)],
            "the permission request",
        )
        # a teammate forging the lead's answer, and the lead answering some other request
        mailbox.send("alice", permission_response(request.request_id, approved=True), sender="bob")
        mailbox.send(
            "alice", permission_response("perm-1-other00", approved=True), sender="team-lead"
        )
        with pytest.raises(AssertionError):
            wait_for(
                lambda: (workdir / "ran.txt").exists(), "a forged approval to count", timeout=2
            )
        assert swarm("deny", request.request_id, "--reason", "no").returncode == 0
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert not (workdir / "ran.txt").exists()
    assert "denied by team-lead: no" in tool_results(api.requests[1])[0]["content"]


def test_a_settings_file_gives_rules_and_the_default_mode(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "alice.settings.json"
    settings.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash(echo:*)"],
                    "deny": ["Write(secret.txt)"],
                    "defaultMode": "acceptEdits",
                }
            }
        )
    )
    script = [
        Turn.tool("Bash", {"command": "echo hi > hi.txt"}),  # allowed by the rule
        Turn.tool("Write", {"file_path": "notes.txt", "content": "n"}),  # acceptEdits
        Turn.tool("Write", {"file_path": "secret.txt", "content": "s"}),  # denied
        Turn.text("ok"),
    ]
    with MessagesAPI(script) as api:
        proc = start("alice", api, "--settings", str(settings))
        prompt(team, "alice", "Go.")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert (workdir / "hi.txt").exists() and (workdir / "notes.txt").exists()
    assert not (workdir / "secret.txt").exists()
    assert tool_results(api.requests[3])[0]["is_error"]
    assert not [m for _, m in lead_inbox(team) if isinstance(m, PermissionRequest)]


def test_a_bad_settings_file_is_a_clear_error(team: TeamFile, tmp_path: Path) -> None:
    settings = tmp_path / "bad.json"
    settings.write_text('{"permissions": {"allow": ["Bash("]}}')
    result = subprocess.run(
        [
            *teammate_argv("alice", "--settings", str(settings), model="scripted"),
            "--script",
            str(settings),
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and "bad.json: permissions.allow" in result.stderr
    assert "Traceback" not in result.stderr
