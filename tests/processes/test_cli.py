"""The `swarm` command line, run as a real subprocess: team, task, message and request commands,
their --json output, and clear errors with a non-zero exit that change no file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import swarm

from protocols.clock import now_iso
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import PermissionStore
from protocols.messages.models import (
    IdleNotification,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
)
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".swarm-locks" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_team_lifecycle(config_root: Path) -> None:
    assert swarm("team", "create", "demo", "--description", "a demo", team=None).returncode == 0
    listed = json.loads(swarm("team", "list", "--json", team=None).stdout)
    (row,) = listed
    assert (row["name"], row["description"], row["members"]) == ("demo", "a demo", 1)
    assert (row["kind"], row["lead_pid"], row["lead_alive"]) == ("named", None, None)
    shown = json.loads(swarm("team", "show", "demo", "--json", team=None).stdout)
    assert shown["leadAgentId"] == "team-lead@demo"
    again = swarm("team", "create", "demo", team=None)
    assert again.returncode == 1 and "already exists" in again.stderr
    assert swarm("team", "delete", "demo", team=None).returncode == 0
    assert not (config_root / "teams" / "demo").exists()
    assert not (config_root / "tasks" / "demo").exists()


def test_tasks_from_the_command_line(team: TeamFile) -> None:
    assert swarm("task", "add", "first", "--command", "echo 1").stdout.strip() == "1"
    assert swarm("task", "add", "second", "--blocked-by", "1").stdout.strip() == "2"
    assert swarm("task", "list").stdout.splitlines() == [
        "#1 [pending] first",
        "#2 [pending] second [blocked by #1]",
    ]
    blocked = swarm("task", "claim", "2", "--as", "alice")
    assert blocked.returncode == 1 and blocked.stderr.strip() == "blocked"
    missing = swarm("task", "claim", "9", "--as", "alice")
    assert missing.returncode == 1 and missing.stderr.strip() == "task_not_found"
    assert swarm("task", "claim", "1", "--as", "alice").returncode == 0
    assert swarm("task", "update", "1", "--status", "completed").returncode == 0
    shown = json.loads(swarm("task", "show", "1", "--json").stdout)
    assert shown["status"] == "completed" and shown["owner"] == "alice"
    # the command, and where `swarm task add` was typed: the command runs there
    assert shown["metadata"] == {"command": "echo 1", "cwd": os.getcwd()}
    assert shown["state"] == "completed"
    assert swarm("task", "update", "2", "--owner", "bob").returncode == 0
    (assignment,) = Mailbox(team.paths).read_unread("bob")
    assert json.loads(assignment.text)["type"] == "task_assignment"


def test_messages_and_inbox_json(team: TeamFile) -> None:
    tricky = 'hi $(touch /tmp/swarm-pwned) "quoted" `id`\nsecond line ✓'
    assert swarm("send", "alice", tricky, "--summary", "greeting").returncode == 0
    assert swarm("send", "*", "all hands", "--from", "bob").returncode == 0
    rows = json.loads(swarm("inbox", "alice", "--json").stdout)
    assert [(r["from"], r["text"], r["type"]) for r in rows] == [
        ("team-lead", tricky, "message"),
        ("bob", "all hands", "message"),
    ]
    assert not Path("/tmp/swarm-pwned").exists()
    Mailbox(team.paths).send(
        "team-lead", PermissionResponse(request_id="r", subtype="error", error="x"), sender="alice"
    )
    Mailbox(team.paths).send(
        "team-lead",
        IdleNotification(
            from_="alice", timestamp=now_iso(), completedTaskId="3", completedStatus="resolved"
        ),
        sender="alice",
    )
    shown = swarm("inbox", "team-lead", "--unread").stdout
    # protocol messages read as `swarm status` shows them, not as the JSON their sender wrote
    assert "[permission_response] denied: x" in shown
    assert "[idle_notification] completed #3" in shown
    assert '{"type"' not in shown
    lead = json.loads(swarm("inbox", "team-lead", "--unread", "--mark-read", "--json").stdout)
    assert [r["type"] for r in lead] == ["message", "permission_response", "idle_notification"]
    assert json.loads(swarm("inbox", "team-lead", "--unread", "--json").stdout) == []


def test_permission_and_plan_requests_are_listed_and_answered(team: TeamFile) -> None:
    mailbox = Mailbox(team.paths)
    ask = PermissionRequest(
        request_id="perm-1-aaaaaaa",
        agent_id="alice",
        tool_name="Bash",
        tool_use_id="t1",
        description="run tests",
        input={"command": "pytest"},
    )
    plan = PlanApprovalRequest(
        from_="bob",
        timestamp=now_iso(),
        planFilePath="/p.md",
        planContent="1. do it",
        requestId="plan_approval-1@bob@t",
    )
    mailbox.send("team-lead", ask, sender="alice")
    mailbox.send("team-lead", plan, sender="bob")
    PermissionStore(team.paths).new_request(
        worker_name="carol",
        tool_name="Write",
        tool_use_id="t2",
        description="write a file",
        input={"file_path": "x"},
    )
    listed = json.loads(swarm("permissions", "--json").stdout)
    assert [(p["kind"], p["teammate"], p["tool"]) for p in listed] == [
        ("permission_request", "alice", "Bash"),
        ("plan_approval_request", "bob", "ExitPlanMode"),
        ("file", "carol", "Write"),
    ]
    assert swarm("approve", "perm-1-aaaaaaa", "--input", '{"command": "pytest -x"}').returncode == 0
    assert swarm("deny", "plan_approval-1@bob@t", "--reason", "add tests").returncode == 0
    assert swarm("approve", listed[2]["id"]).returncode == 0
    assert json.loads(swarm("permissions", "--json").stdout) == []
    (response,) = [e.structured() for e in mailbox.read_unread("alice")]
    assert isinstance(response, PermissionResponse) and response.response.updated_input == {
        "command": "pytest -x"
    }
    (answer,) = [e.structured() for e in mailbox.read_unread("bob")]
    assert (
        isinstance(answer, PlanApprovalResponse)
        and not answer.approved
        and answer.feedback == "add tests"
    )
    assert PermissionStore(team.paths).poll(listed[2]["id"]).status == "approved"
    again = swarm("approve", "perm-1-aaaaaaa")
    assert again.returncode == 1
    assert "perm-1-aaaaaaa was already answered (approved by swarm approve" in again.stderr
    unknown = swarm("approve", "perm-2-nothing")
    assert unknown.returncode == 1 and "no pending request" in unknown.stderr


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("send", "alcie", "hi"), "no member named 'alcie' in team 't'; did you mean 'alice'?"),
        (("send", "../etc", "hi"), "recipient"),
        (("inbox", "nobody"), "no member named 'nobody'"),
        (("status", "--team", "tt"), "team 'tt' not found"),
        (("status", "--team", "tx"), "did you mean 't'?"),
        (("task", "show", "42"), "task #42 not found"),
        (("task", "update", "1", "--owner", "zed"), "no member named 'zed'"),
        (("task", "update", "1"), "nothing to change"),
        (("approve", "perm-0-zzzzzzz"), "no pending request"),
        (("team", "create", "Bad Name"), "invalid team name"),
        (("team", "create", "$(touch x)"), "invalid team name"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    team: TeamFile, config_root: Path, args: tuple[str, ...], complaint: str
) -> None:
    swarm("task", "add", "one")
    before = tree_digest(config_root)
    result = swarm(*args)
    assert result.returncode != 0
    assert complaint in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_digest(config_root) == before


def test_an_unknown_team_is_named_in_the_error(config_root: Path) -> None:
    result = swarm("status", team="nope")
    assert result.returncode == 1 and "team 'nope' not found" in result.stderr
    missing = swarm("status", team=None)
    assert missing.returncode == 2 and "--team" in missing.stderr


def test_status_and_reap_of_a_dead_member(team: TeamFile) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    team.update_member("alice", pid=dead.pid, isActive=True)
    swarm("task", "add", "held")
    swarm("task", "claim", "1", "--as", "alice")
    report = json.loads(swarm("status", "--json").stdout)
    states = {m["name"]: m["state"] for m in report["members"]}
    assert states["alice"] == "dead" and states["bob"] == "starting"
    assert {k: len(v) for k, v in report["tasks"].items()} == {
        "pending": 0,
        "in_progress": 1,
        "completed": 0,
    }
    assert "reaped alice" in swarm("reap").stdout
    assert "alice" not in TeamFile(team.paths).load().member_names()
    task = json.loads(swarm("task", "show", "1", "--json").stdout)
    assert task["status"] == "pending" and "owner" not in task
    notes = [
        e.structured() for e in Mailbox(TeamPaths(team.paths.root, "t")).read_unread("team-lead")
    ]
    assert any(n is not None and n.type == "teammate_terminated" for n in notes)


def test_send_reads_a_big_message_from_stdin_or_a_file(team: TeamFile, tmp_path: Path) -> None:
    """A 5 MB message cannot go through argv; `-` and --file carry it."""
    big = "ünïcode $(id) " * 400_000  # about 5.6 MB
    piped = subprocess.run(
        [sys.executable, "-m", "swarm", "send", "alice", "-", "--json", "--team", "t"],
        input=big,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == {"sent_to": ["alice"], "skipped": []}
    body = tmp_path / "body.md"
    body.write_text("from a file\nsecond line", encoding="utf-8")
    assert swarm("send", "alice", "--file", str(body)).returncode == 0
    neither = swarm("send", "alice")
    assert neither.returncode == 2 and "give the message as TEXT" in neither.stderr
    texts = [e.text for e in Mailbox(team.paths).read_all("alice")]
    assert texts == [big, "from a file\nsecond line"]


def test_version() -> None:
    shown = swarm("--version", team=None)
    assert shown.returncode == 0 and shown.stdout.startswith("swarm 0."), shown.stdout


def test_task_add_for_an_owner_tells_it(team: TeamFile) -> None:
    added = swarm("task", "add", "write the docs", "--owner", "alice", "--json")
    assert added.returncode == 0, added.stderr
    task = json.loads(added.stdout)
    assert (task["owner"], task["status"]) == ("alice", "pending")
    (entry,) = Mailbox(team.paths).read_unread("alice")
    assert json.loads(entry.text)["type"] == "task_assignment"
    typo = swarm("task", "add", "nothing", "--owner", "alcie")
    assert typo.returncode == 1 and "did you mean 'alice'?" in typo.stderr
    assert len(json.loads(swarm("task", "list", "--json").stdout)) == 1  # the typo made none
