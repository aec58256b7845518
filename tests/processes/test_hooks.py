"""Hooks in real processes: a Claude teammate (the real SDK against the test suite's Messages
API server) whose project settings hold PreToolUse hooks (one blocks ``rm`` by exit 2, one
denies Write by JSON, one allows the rest, which never overrides a deny rule), a PostToolUse
hook recording every call, a hook command that does not exist, a Stop hook that sends it back
to work once, a sub-agent whose definition's hooks apply to it alone, and ``swarm task``
running TaskCreated and TaskCompleted hooks; ``swarm hooks`` lists them with their files."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, Processes, swarm, teammate_argv, wait_for
from helpers import stop_alice as stop
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import IdleNotification, PermissionRequest
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

Start = Callable[..., subprocess.Popen[str]]

PRE_BASH = """
import json, sys
call = json.load(sys.stdin)
command = call["tool_input"].get("command", "")
if command.startswith("rm "):
    print("rm is not allowed here: move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                         "permissionDecision": "allow"}}))
"""
PRE_WRITE = """
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
    "permissionDecision": "deny", "permissionDecisionReason": "writes go through review"}}))
"""
RECORD = """
import sys
with open(sys.argv[1], "ab") as out:
    out.write(sys.stdin.buffer.read() + b"\\n")
"""
STOP_ONCE = """
import json, sys
if not json.load(sys.stdin)["stop_hook_active"]:
    print("Also write NOTES.md before you stop.", file=sys.stderr)
    sys.exit(2)
"""


def script(directory: Path, name: str, body: str, *args: str) -> str:
    """A hook command that runs `body` with this Python."""
    path = directory / f"{name}.py"
    path.write_text(body)
    return " ".join(shlex.quote(a) for a in (sys.executable, str(path), *args))


def write_settings(project: Path, value: dict[str, Any]) -> Path:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(value))
    return path


def group(command: str, matcher: str = "", timeout: float = 30) -> dict[str, Any]:
    return {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": command, "timeout": timeout}],
    }


def results_of(body: dict[str, Any]) -> list[str]:
    content = body["messages"][-1]["content"]
    return [
        b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def idle_count(team: TeamFile) -> int:
    entries = Mailbox(team.paths).read_all("team-lead")
    return sum(isinstance(e.structured(), IdleNotification) for e in entries)


def transcript_events(team: TeamFile, kind: str) -> list[dict[str, Any]]:
    path = team.paths.transcript("alice")
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in events if e.get("kind") == kind]


HOSTILE_ECHO = "echo '$(touch pwned) \"quoted\" é ✓ 日本'"


def test_pre_and_post_tool_use_hooks_block_deny_allow_and_record_every_call(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "keep.txt").write_text("precious\n")
    calls = tmp_path / "calls.jsonl"
    settings = write_settings(
        workdir,
        {
            "permissions": {"deny": ["Bash(echo forbidden:*)"]},
            "hooks": {
                "PreToolUse": [
                    group(script(tmp_path, "pre_bash", PRE_BASH), "Bash"),
                    group(script(tmp_path, "pre_write", PRE_WRITE), "Write|Edit"),
                    group(str(tmp_path / "no-such-hook.sh"), "Read"),
                ],
                "PostToolUse": [group(script(tmp_path, "record", RECORD, str(calls)))],
            },
        },
    )
    steps = [
        ("Bash", {"command": "rm keep.txt"}),
        ("Write", {"file_path": "new.txt", "content": "x"}),
        ("Bash", {"command": "echo forbidden thing"}),
        ("Bash", {"command": HOSTILE_ECHO}),
        ("Read", {"file_path": "keep.txt"}),
    ]
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if done < len(steps):
            return Turn.tool(*steps[done])
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api)  # default mode: rm, Write and echo would all ask the lead
        Mailbox(team.paths).send("alice", "Tidy up.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)

    answers = [results_of(body)[0] for body in seen[1:]]
    assert "rm is not allowed here: move files to trash/ instead" in answers[0]
    assert (workdir / "keep.txt").read_text() == "precious\n"  # the call did not run
    assert "writes go through review" in answers[1] and not (workdir / "new.txt").exists()
    assert "denied" in answers[2]  # the hook allowed it, the deny rule still wins
    assert "$(touch pwned)" in answers[3] and not list(workdir.glob("pwned*"))
    assert "precious" in answers[4]  # a missing hook command does not stop the call
    lead = Mailbox(team.paths).read_all("team-lead")
    assert not [e for e in lead if isinstance(e.structured(), PermissionRequest)]  # none asked
    recorded = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(r["tool_name"], r["hook_event_name"]) for r in recorded] == [
        ("Bash", "PostToolUse"),
        ("Read", "PostToolUse"),
    ]
    assert recorded[0]["tool_input"]["command"] == HOSTILE_ECHO  # byte for byte, as JSON
    assert "quoted" in recorded[0]["tool_response"]
    assert recorded[0]["cwd"] == str(workdir) and recorded[0]["session_id"]
    assert recorded[0]["transcript_path"] == str(team.paths.transcript("alice"))
    errors = transcript_events(team, "hook_error")
    assert len(errors) == 1 and "no-such-hook.sh" in errors[0]["error"]
    assert "command not found" in errors[0]["error"]

    team.update_member("alice", cwd=str(workdir))  # where alice runs: her hooks are those
    listed = swarm("hooks", "alice", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {(h["event"], h["matcher"], h["source"]) for h in json.loads(listed.stdout)} == {
        ("PreToolUse", "Bash", str(settings)),
        ("PreToolUse", "Write|Edit", str(settings)),
        ("PreToolUse", "Read", str(settings)),
        ("PostToolUse", "", str(settings)),
    }


def test_a_stop_hook_sends_the_teammate_back_to_work_once(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    hooks = {
        "Stop": [group(script(tmp_path, "stop", STOP_ONCE))],
        "SessionStart": [group("echo 'The build is red since Monday.'")],
    }
    write_settings(workdir, {"hooks": hooks})
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        last = json.dumps(body["messages"][-1]["content"])
        if "Also write NOTES.md" in last:
            return Turn.text("NOTES.md written too.")
        return Turn.text("All done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Finish up.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)
    assert len(seen) == 2  # sent back once; the second Stop had stop_hook_active and let it go
    assert "Also write NOTES.md before you stop." in json.dumps(seen[1]["messages"][-1])
    first = json.dumps(seen[0]["messages"][0])  # SessionStart's stdout, with the first prompt
    assert "The build is red since Monday." in first and "Finish up." in first


def test_a_sub_agent_s_definition_hooks_apply_to_it_alone(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    blocker = "echo 'reviewers do not read notes' >&2; exit 2"
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews\ntools: Read\nhooks:\n  PreToolUse:\n"
        f"    - matcher: Read\n      hooks:\n        - type: command\n"
        f"          command: {json.dumps(blocker)}\n---\nYou review.\n"
    )
    events = workdir / "events.jsonl"  # in its directory: acceptEdits sandboxes its hooks
    record = script(tmp_path, "record", RECORD, str(events))
    write_settings(
        workdir,
        {
            "hooks": {
                name: [group(record, matcher)]
                for name, matcher in [
                    ("SessionStart", ""),
                    ("SubagentStart", "review.*"),
                    ("SubagentStop", "reviewer"),
                    ("SessionEnd", ""),
                ]
            }
        },
    )
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        sub = "You review." in json.dumps(body.get("system"))
        done = results_of(body)
        if sub:
            return Turn.tool("Read", {"file_path": "notes.txt"}) if not done else Turn.text("no")
        if len(body["messages"]) == 1:
            call = {
                "description": "review",
                "prompt": "Read notes.txt",
                "subagent_type": "reviewer",
            }
            return Turn.tool("Agent", call)
        if len(body["messages"]) == 3:
            return Turn.tool("Read", {"file_path": "notes.txt"})
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Review.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)
    sub_results = [
        r for b in seen if "You review." in json.dumps(b.get("system")) for r in results_of(b)
    ]
    assert sub_results and "reviewers do not read notes" in sub_results[0]
    own = [results_of(b) for b in seen if "You review." not in json.dumps(b.get("system"))]
    assert "the answer is 42" in own[-1][0]  # the teammate's own Read is not hooked
    fired = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["hook_event_name"] for e in fired] == [
        "SessionStart",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
    ]
    assert fired[0]["source"] == "startup"
    assert fired[1]["agent_type"] == fired[2]["agent_type"] == "reviewer"
    assert fired[1]["agent_id"] == fired[2]["agent_id"]
    assert fired[2]["stop_hook_active"] is False


def test_swarm_task_runs_task_created_and_task_completed_hooks(
    team: TeamFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    created = tmp_path / "created.jsonl"
    gate = tmp_path / "tests-pass"
    completed = (
        f"cat > /dev/null; test -e {shlex.quote(str(gate))} && exit 0; "
        "echo 'run the tests first' >&2; exit 2"
    )
    write_settings(
        project,
        {
            "hooks": {
                "TaskCreated": [group(script(tmp_path, "record", RECORD, str(created)))],
                "TaskCompleted": [group(completed)],
            }
        },
    )
    monkeypatch.chdir(project)
    added = swarm("task", "add", "ship it", "-d", "all of it")
    assert added.returncode == 0, added.stderr
    task_id = added.stdout.strip()
    (record,) = [json.loads(line) for line in created.read_text().splitlines()]
    assert (record["hook_event_name"], record["task_subject"]) == ("TaskCreated", "ship it")
    assert record["task_description"] == "all of it" and record["team_name"] == "t"
    assert swarm("task", "update", task_id, "--status", "in_progress").returncode == 0

    refused = swarm("task", "update", task_id, "--status", "completed")
    assert refused.returncode == 1 and "run the tests first" in refused.stderr
    task = TaskBoard(team.paths).get(task_id)
    assert task is not None and task.status == "in_progress"  # it stays in progress

    gate.touch()
    assert swarm("task", "update", task_id, "--status", "completed").returncode == 0
    task = TaskBoard(team.paths).get(task_id)
    assert task is not None and task.status == "completed"
    listed = swarm("hooks")
    assert "TaskCompleted" in listed.stdout and "TaskCreated" in listed.stdout


def test_a_teammate_idle_hook_sends_it_back_once_and_a_hanging_hook_is_killed(
    team: TeamFile, start: Start, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    marker = workdir / "idle-once"  # where its sandboxed hooks (acceptEdits) may write
    idle = (
        f"cat > /dev/null; test -e {shlex.quote(str(marker))} && exit 0; "
        f"touch {shlex.quote(str(marker))}; echo 'Check TaskList before you idle.' >&2; exit 2"
    )
    hang = "sleep 313 & wait"  # its child is found by its command line: a sandboxed (acceptEdits)
    # hook's $! is a pid of the sandbox's own pid namespace
    write_settings(
        workdir,
        {
            "hooks": {
                "TeammateIdle": [group(idle)],
                "PreToolUse": [group(hang, "Read", timeout=1)],
            }
        },
    )
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        last = json.dumps(body["messages"][-1]["content"])
        if "Check TaskList before you idle." in last:
            return Turn.text("Checked: nothing left.")
        if not results_of(body):
            return Turn.tool("Read", {"file_path": "notes.txt"})
        return Turn.text("Read it.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Read notes.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)
    assert "the answer is 42" in results_of(seen[1])[0]  # the hook timed out; the call went on
    assert "Check TaskList before you idle." in json.dumps(seen[-1]["messages"][-1])
    assert len(seen) == 3 and idle_count(team) == 1  # sent back once, then idle once
    (error,) = transcript_events(team, "hook_error")
    assert "timed out after 1 s" in error["error"]
    wait_for(lambda: not _sleeping("313"), "the hook's child to be killed")


def _sleeping(seconds: str) -> list[int]:
    """The live (not zombie) processes running ``sleep SECONDS``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")[:2]
            state = (entry / "stat").read_text().split(") ")[1][:1]
        except (OSError, IndexError):
            continue
        if argv == [b"sleep", seconds.encode()] and state != "Z":
            found.append(int(entry.name))
    return found


def test_the_lead_agent_s_task_tools_run_the_task_hooks_of_its_directory(
    workdir: Path, tmp_path: Path, config_root: Path
) -> None:
    created = tmp_path / "created.jsonl"
    refuse_secret = """
import json, sys
task = json.load(sys.stdin)
if "secret" in task["task_subject"]:
    print("no secret tasks", file=sys.stderr)
    sys.exit(2)
"""
    write_settings(
        workdir,
        {
            "hooks": {
                "TaskCreated": [
                    group(script(tmp_path, "refuse", refuse_secret)),
                    group(script(tmp_path, "record", RECORD, str(created))),
                ],
                "TaskCompleted": [group("echo 'not reviewed yet' >&2; exit 2")],
            }
        },
    )
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        if len(body["messages"]) == 1:
            return Turn.tools(
                [
                    ("TaskCreate", {"subject": "secret plan", "description": "hush"}),
                    ("TaskCreate", {"subject": "open plan", "description": "say it"}),
                    ("TaskUpdate", {"taskId": "1", "status": "completed"}),
                ]
            )
        return Turn.text("One task is on the board.")

    with MessagesAPI(play) as api:
        lead = LeadSession(api, workdir, "--backend", "subprocess")
        try:
            lead.expect("leading team 't'")
            lead.type("Make two tasks.")
            lead.expect("lead: One task is on the board.")
            assert lead.quit() == 0
        finally:
            lead.close()
    refused, made, not_done = results_of(seen[1])
    assert "no secret tasks" in refused and "Task #1 created" in made
    assert "not marked completed" in not_done and "not reviewed yet" in not_done
    tasks = TaskBoard(TeamFile(TeamPaths(config_root, "t")).paths).list()
    assert [(t.subject, t.status) for t in tasks] == [("open plan", "pending")]
    # every matching hook runs (as in Claude Code, which runs them side by side)
    records = [json.loads(line) for line in created.read_text().splitlines()]
    assert [r["task_subject"] for r in records] == ["secret plan", "open plan"]
    assert {r["teammate_name"] for r in records} == {"team-lead"}


def test_a_shell_worker_honours_pre_tool_use_and_task_completed_hooks(
    team: TeamFile, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "keep.txt").write_text("precious\n")
    done_gate = "cat > /dev/null; echo 'attach the build log first' >&2; exit 2"
    write_settings(
        workdir,
        {
            "hooks": {
                "PreToolUse": [group(script(tmp_path, "pre_bash", PRE_BASH), "Bash")],
                "TaskCompleted": [group(done_gate)],
            }
        },
    )
    board = TaskBoard(team.paths, Mailbox(team.paths))
    board.create("clean", metadata={"command": "rm keep.txt"})
    board.create("build", metadata={"command": "echo built > built.txt"})
    processes = Processes(workdir)
    try:
        proc = processes.start(teammate_argv("alice"))
        Mailbox(team.paths).send("alice", "Work the board.", sender="team-lead")

        def failures() -> list[str]:
            failed = [t.failure for t in board.list() if t.failed]
            return [str(f) for f in failed] if len(failed) == 2 else []

        clean, build = wait_for(failures, "both tasks to be stopped by hooks")
        statuses = [t.status for t in board.list()]
        stop(team, proc)  # (its shutdown releases them)
    finally:
        processes.close()
    assert "rm is not allowed here" in clean and (workdir / "keep.txt").exists()
    assert "attach the build log first" in build and (workdir / "built.txt").exists()
    assert statuses == ["in_progress", "in_progress"]  # neither completed
    lead = Mailbox(team.paths).read_all("team-lead")
    assert not [e for e in lead if isinstance(e.structured(), PermissionRequest)]


def test_swarm_hooks_lists_a_member_s_agent_type_hooks_with_its_settings(
    team: TeamFile, workdir: Path, config_root: Path
) -> None:
    user = write_settings(config_root, {"hooks": {"Stop": [group("true")]}})
    user.rename(config_root / "settings.json")  # the user's settings file
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    reviewer = agents / "reviewer.md"
    reviewer.write_text(
        "---\nname: reviewer\ndescription: Reviews\nhooks:\n  PostToolUse:\n"
        "    - matcher: Edit\n      hooks:\n        - {type: command, command: ./lint.sh, "
        "timeout: 5}\n---\nYou review.\n"
    )
    team.add_member("dana", agent_type="reviewer", cwd=workdir)
    listed = swarm("hooks", "dana", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [
        {
            "event": "PostToolUse",
            "matcher": "Edit",
            "command": "./lint.sh",
            "timeout": 5.0,
            "source": f"agent reviewer ({reviewer})",
        },
        {
            "event": "Stop",
            "matcher": "",
            "command": "true",
            "timeout": 30.0,
            "source": str(config_root / "settings.json"),
        },
    ]
    text = swarm("hooks", "dana").stdout
    assert "PostToolUse" in text and "./lint.sh" in text and "agent reviewer" in text
    assert "no member named" in swarm("hooks", "nobody").stderr


def test_a_teammate_started_with_an_agent_type_runs_that_definition_s_hooks(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "guarded.md").write_text(
        "---\nname: guarded\ndescription: Guarded\nhooks:\n  PreToolUse:\n"
        "    - matcher: Read\n      hooks:\n"
        "        - {type: command, command: \"echo 'guarded agents ask first' >&2; exit 2\"}\n"
        "---\nYou are guarded.\n"
    )
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        if not results_of(body):
            return Turn.tool("Read", {"file_path": "notes.txt"})
        return Turn.text("Blocked, as expected.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--agent-type", "guarded", "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Read notes.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)
    assert "You are guarded." in json.dumps(seen[0]["system"])
    assert "guarded agents ask first" in results_of(seen[1])[0]
