"""The teammate process (`python -m teammate`) with the shell brain, run as a real subprocess
against real files: prompt, auto-claim in dependency order, failure, permission requests, the
shutdown protocol (stale requests ignored), one process per name, and bad command lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, Processes, teammate_argv, wait_for

from protocols.clock import iso_from_ms, now_iso
from protocols.errors import StoreUnavailable
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import permission_response
from protocols.member.status import read_status
from protocols.messages.models import (
    IdleNotification,
    PermissionRequest,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
)
from protocols.paths import TeamPaths
from protocols.tasks.board import NewTask, TaskBoard
from protocols.team.file import TeamFile
from protocols.watch.wakeup import InboxWatcher
from teammate.brains.shell import ShellBrain
from teammate.options import UsageError, parse
from teammate.reporter import StatusReporter
from teammate.runtime import Teammate


@pytest.fixture
def start(team: TeamFile, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    processes = Processes(tmp_path)

    def launch(name: str, *extra: str) -> subprocess.Popen[str]:
        return processes.start(teammate_argv(name, *extra))

    yield launch
    processes.close()


def lead_messages(mailbox: Mailbox) -> list[Any]:
    return [(e, e.structured()) for e in mailbox.read_all("team-lead")]


def shutdown(mailbox: Mailbox, name: str) -> ShutdownRequest:
    request = ShutdownRequest(
        requestId=f"shutdown-{time.time_ns()}@{name}", from_="team-lead", timestamp=now_iso()
    )
    mailbox.send(name, request, sender="team-lead")
    return request


def test_workers_complete_a_dependency_graph_then_shut_down(
    team: TeamFile, start: Callable[..., Any], tmp_path: Path
) -> None:
    mailbox = Mailbox(team.paths)
    board = TaskBoard(team.paths, mailbox)
    first = board.create("first", metadata={"command": "echo one >> order.txt"})
    second = board.create("second", metadata={"command": "echo two >> order.txt"})
    third = board.create("third", metadata={"command": "echo three >> order.txt"})
    board.update(second.id, addBlockedBy=[first.id])
    board.update(third.id, addBlockedBy=[second.id])
    for name in ("alice", "bob"):
        mailbox.send(name, "Work the board.", sender="team-lead")
    alice, bob = start("alice"), start("bob")
    wait_for(lambda: all(t.status == "completed" for t in board.list()), "all tasks completed")
    assert (tmp_path / "order.txt").read_text().split() == ["one", "two", "three"]

    def completion_reports() -> list[IdleNotification]:
        return [
            m
            for _, m in lead_messages(mailbox)
            if isinstance(m, IdleNotification) and m.completedTaskId
        ]

    # a worker marks the task completed, then reports it: wait for the reports too
    done = wait_for(lambda: len(r := completion_reports()) >= 3 and r, "three completion reports")
    assert sorted(m.completedTaskId for m in done) == ["1", "2", "3"]
    assert all(m.completedStatus == "resolved" for m in done)
    wait_for(
        lambda: (
            {
                e.from_
                for e, m in lead_messages(mailbox)
                if m is None and e.text.startswith("Received")
            }
            == {"alice", "bob"}
        ),
        "both prompts to be acknowledged",
    )

    requests = {name: shutdown(mailbox, name) for name in ("alice", "bob")}
    assert alice.wait(DEADLINE_S) == 0 and bob.wait(DEADLINE_S) == 0
    approved = {m.requestId for _, m in lead_messages(mailbox) if isinstance(m, ShutdownApproved)}
    assert approved == {r.requestId for r in requests.values()}
    assert team.load().member("alice").isActive is False
    assert team.load().member("alice").model_extra["pid"] == alice.pid


def test_a_quick_answer_and_the_idle_notification_are_written_before_the_message_is_read(
    team: TeamFile, start: Callable[..., Any]
) -> None:
    """A shell worker's turn: its answer and its idle notification go to the lead as two
    entries, in that order, in one write, before the message it answers is marked read; its
    status file ends the turn "idle" and config.json inactive. (Whether such a turn is marked
    active at all depends on how long it took: a loaded machine can stretch it past
    `ACTIVE_AFTER_S`, and its end then writes ``isActive: false`` just after the read mark;
    `tests/unit/test_activity.py` holds that rule.)"""
    mailbox = Mailbox(team.paths)
    start("alice")
    for n in range(3):
        mailbox.send("alice", f"note {n}", sender="team-lead")
        wait_for(lambda: not mailbox.read_unread("alice"), f"note {n} read")
        from_alice = [(e, m) for e, m in lead_messages(mailbox) if e.from_ == "alice"]
        assert len(from_alice) == 2 * (n + 1), from_alice  # both, once it is read
        (answer, plain), (idle, note) = from_alice[-2:]
        assert plain is None and answer.text.startswith(f"Received: 'note {n}'")
        assert isinstance(note, IdleNotification) and note.idleReason == "available"
        assert answer.timestamp <= idle.timestamp and answer.identity != idle.identity
    wait_for(
        lambda: (status := read_status(team.paths, "alice")) is not None and status.state == "idle",
        "alice's status file says idle",
    )
    wait_for(lambda: team.load().member("alice").isActive is False, "alice inactive again")


def test_a_failing_command_leaves_the_task_in_progress_with_its_exit_code(
    team: TeamFile, start: Callable[..., Any]
) -> None:
    mailbox = Mailbox(team.paths)
    board = TaskBoard(team.paths, mailbox)
    task = board.create("breaks", metadata={"command": "echo to stdout; echo oops >&2; exit 3"})
    proc = start("alice")
    note = wait_for(
        lambda: next(
            (
                m
                for _, m in lead_messages(mailbox)
                if isinstance(m, IdleNotification) and m.completedTaskId
            ),
            None,
        ),
        "a completion report",
    )
    assert note.completedStatus == "failed" and "exit code 3" in note.failureReason
    failed = board.require(task.id)
    assert failed.status == "in_progress" and failed.owner == "alice" and failed.failed
    assert failed.metadata["exitCode"] == 3
    assert "to stdout" in failed.metadata["outputTail"] and "oops" in failed.metadata["outputTail"]
    shutdown(mailbox, "alice")
    assert proc.wait(DEADLINE_S) == 0
    assert board.require(task.id).status == "pending" and board.require(task.id).owner is None


@pytest.mark.parametrize("approve", [True, False])
def test_a_destructive_command_waits_for_the_leads_decision(
    team: TeamFile, start: Callable[..., Any], tmp_path: Path, approve: bool
) -> None:
    mailbox = Mailbox(team.paths)
    board = TaskBoard(team.paths, mailbox)
    (tmp_path / "junk").mkdir()
    task = board.create("clean up", metadata={"command": "rm -r junk"})
    start("alice")
    request = wait_for(
        lambda: next(
            (m for _, m in lead_messages(mailbox) if isinstance(m, PermissionRequest)), None
        ),
        "a permission request",
    )
    assert request.agent_id == "alice" and request.tool_name == "Bash"
    assert request.input == {"command": "rm -r junk"}
    assert (tmp_path / "junk").exists()  # nothing runs before the answer
    answer = permission_response(request.request_id, approved=approve, error="not today")
    mailbox.send("alice", answer, sender="team-lead")
    note = wait_for(
        lambda: next(
            (
                m
                for _, m in lead_messages(mailbox)
                if isinstance(m, IdleNotification) and m.completedTaskId
            ),
            None,
        ),
        "a completion report",
    )
    if approve:
        assert note.completedStatus == "resolved" and not (tmp_path / "junk").exists()
        assert board.require(task.id).status == "completed"
    else:
        assert note.completedStatus == "failed" and "not today" in note.failureReason
        assert (tmp_path / "junk").exists()
        assert board.require(task.id).metadata["denied"] == "not today"


def test_bypass_permissions_asks_nothing(
    team: TeamFile, start: Callable[..., Any], tmp_path: Path
) -> None:
    mailbox = Mailbox(team.paths)
    board = TaskBoard(team.paths, mailbox)
    (tmp_path / "junk").mkdir()
    board.create("clean up", metadata={"command": "rm -r junk"})
    start("alice", "--dangerously-skip-permissions")
    wait_for(lambda: board.require("1").status == "completed", "the task to complete")
    assert not any(isinstance(m, PermissionRequest) for _, m in lead_messages(mailbox))


def test_a_stale_shutdown_request_does_not_stop_a_respawned_teammate(
    team: TeamFile, start: Callable[..., Any]
) -> None:
    mailbox = Mailbox(team.paths)
    joined = team.load().member("alice").joinedAt
    old = ShutdownRequest(
        requestId=f"shutdown-{joined - 60_000}@alice",
        from_="team-lead",
        timestamp=iso_from_ms(joined - 60_000),
    )
    mailbox.send("alice", old, sender="team-lead")
    proc = start("alice")
    wait_for(
        lambda: any(
            m is None and "Ignored shutdown request" in e.text for e, m in lead_messages(mailbox)
        ),
        "the stale request to be reported",
    )
    board = TaskBoard(team.paths, mailbox)
    board.create("still working", metadata={"command": "true"})
    wait_for(lambda: board.require("1").status == "completed", "a task after the stale request")
    assert proc.poll() is None
    assert not any(isinstance(m, ShutdownApproved) for _, m in lead_messages(mailbox))


def test_only_one_process_may_run_under_a_name(team: TeamFile, start: Callable[..., Any]) -> None:
    first = start("alice")
    wait_for(
        lambda: team.load().member("alice").model_extra.get("pid") == first.pid,
        "the first to register",
    )
    second = start("alice")
    assert second.wait(DEADLINE_S) == 1
    assert f"already running in team 't' (pid {first.pid})" in second.stdout.read()
    assert first.poll() is None


def test_sigterm_releases_the_task_and_exits(team: TeamFile, start: Callable[..., Any]) -> None:
    board = TaskBoard(team.paths)
    board.create("long", metadata={"command": "sleep 30"})
    proc = start("alice")
    wait_for(lambda: board.require("1").owner == "alice", "the task to be claimed")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(DEADLINE_S) == 0
    assert board.require("1").owner is None and board.require("1").status == "pending"


def test_a_claude_model_without_an_api_key_fails_clearly_and_tells_the_lead(
    team: TeamFile, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    result = subprocess.run(
        [*teammate_argv("alice")[:-2], "--model", "sonnet"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 1
    assert "needs an API key: set ANTHROPIC_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr
    (note,) = [m for _, m in lead_messages(Mailbox(team.paths)) if isinstance(m, IdleNotification)]
    assert note.idleReason == "failed" and "ANTHROPIC_API_KEY" in note.failureReason


def test_a_process_that_is_not_a_member_refuses_to_run(team: TeamFile, tmp_path: Path) -> None:
    result = subprocess.run(
        teammate_argv("zed"), capture_output=True, text=True, timeout=DEADLINE_S, cwd=tmp_path
    )
    assert result.returncode == 1
    assert "'zed' is not a member of team 't'" in result.stderr
    assert not TeamPaths(team.paths.root, "t").inbox("zed").exists()


def test_claude_codes_command_line_is_accepted_and_unknown_flags_ignored() -> None:
    options = parse(
        [
            "--agent-id",
            "alice@t",
            "--agent-name",
            "alice",
            "--team-name",
            "t",
            "--agent-color",
            "blue",
            "--parent-session-id",
            "3b22f6a2",
            "--plan-mode-required",
            "--agent-type",
            "general-purpose",
            "--permission-mode",
            "acceptEdits",
            "--settings",
            "/x.json",
            "--plugin-dir",
            "a",
            "--plugin-dir",
            "b",
            "--teammate-mode",
            "tmux",
            "--no-chrome",
            "--model",
            "shell",
            "--future-flag",
            "value",
        ]
    )
    assert (options.agent_name, options.team_name, options.color) == ("alice", "t", "blue")
    assert options.spec.plan_mode_required and options.spec.permission_mode == "acceptEdits"
    assert options.ignored == ("--future-flag", "value")
    bypass = parse(
        [
            "--agent-id",
            "a@t",
            "--agent-name",
            "a",
            "--team-name",
            "t",
            "--dangerously-skip-permissions",
        ]
    )
    assert bypass.spec.permission_mode == "bypassPermissions"


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--agent-id", "bob@t", "--agent-name", "alice", "--team-name", "t"], "does not match"),
        (
            ["--agent-id", "../x@t", "--agent-name", "../x", "--team-name", "t"],
            "single path component",
        ),
        (
            ["--agent-id", "a@t", "--agent-name", "a", "--team-name", "t", "--task-timeout", "0"],
            "positive",
        ),
    ],
)
def test_bad_command_lines_are_refused(argv: list[str], complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        parse(argv)


def test_a_bad_command_line_exits_2_with_the_reason(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "teammate",
            "--agent-id",
            "x@t",
            "--agent-name",
            "alice",
            "--team-name",
            "t",
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert result.returncode == 2 and "does not match" in result.stderr


@pytest.mark.parametrize(
    ("command", "asks"),
    [
        ("rm -r build", True),
        ("rm -rf /", True),
        ("make && rm -fr dist", True),
        ("echo $(sudo reboot)", True),
        ("git push origin main", True),
        ("sudo apt-get install x", True),
        ("rm notes.txt", False),
        ("git status", False),
        ("echo 'rm -r is dangerous'", False),
        ("pytest -q", False),
    ],
)
def test_default_ask_rules(command: str, asks: bool) -> None:
    assert (ShellBrain(Path("/")).decide(command).behavior == "ask") is asks


class RefusingBrain(ShellBrain):
    def accept_shutdown(self, request: ShutdownRequest) -> tuple[bool, str]:
        return False, "still refactoring auth.py"


def test_a_brain_may_refuse_a_shutdown(team: TeamFile, tmp_path: Path) -> None:
    options = parse(["--agent-id", "alice@t", "--agent-name", "alice", "--team-name", "t"])
    said: list[str] = []
    teammate = Teammate(options, RefusingBrain(tmp_path), team.paths, say=said.append)
    teammate.member = team.load().member("alice")
    mailbox = Mailbox(team.paths)
    request = shutdown(mailbox, "alice")
    teammate.step()
    assert not teammate.stopped
    (entry,) = [e for e in mailbox.read_all("team-lead")]
    refusal = entry.structured()
    assert isinstance(refusal, ShutdownRejected)
    assert (refusal.requestId, refusal.reason) == (request.requestId, "still refactoring auth.py")
    assert mailbox.read_unread("alice") == []


def test_quick_answers_do_not_read_the_roster_again_after_it_changes(
    team: TeamFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its mailbox's member check and its own ``isActive`` share one reader of config.json:
    after a roster change it parses the file once a message, not once per reader (a broadcast
    after the team grew made every member parse the team twice, 200 members at a time)."""
    options = parse(["--agent-id", "alice@t", "--agent-name", "alice", "--team-name", "t"])
    teammate = Teammate(options, ShellBrain(tmp_path), team.paths, say=lambda _: None)
    teammate.member = team.load().member("alice")
    assert teammate.team is teammate.mailbox.team
    lead = Mailbox(team.paths)
    lead.send("alice", "first", sender="team-lead")
    teammate.step()  # the first turn's end finds isActive true (set as it joined) and writes it
    assert team.load().member("alice").isActive is False
    reads: list[int] = []
    original = TeamFile._read_raw

    def counted(self: TeamFile) -> Any:
        if self is not team and self is not lead.team:  # the test's own readers do not count
            reads.append(1)
        return original(self)

    monkeypatch.setattr(TeamFile, "_read_raw", counted)
    for n in range(3):
        team.add_member(f"new-{n}", cwd=tmp_path)  # the roster changes before each message
        lead.send("alice", f"note {n}", sender="team-lead")
        teammate.step()
    assert len(reads) == 3  # once a message, not once for the recipient check and again for
    # its own flag
    answers = [e.text for e in lead.read_all("team-lead") if e.text.startswith("Received")]
    assert len(answers) == 4
    assert team.load().member("alice").isActive is False


def test_a_status_that_did_not_change_is_not_written_again(team: TeamFile, tmp_path: Path) -> None:
    """Idle before a quick answer and idle after it: the status file is left as it was (it
    says since when the teammate has been idle); a change is written at once."""
    options = parse(["--agent-id", "alice@t", "--agent-name", "alice", "--team-name", "t"])
    reporter = StatusReporter(team.paths, "alice", "shell")
    teammate = Teammate(
        options, ShellBrain(tmp_path), team.paths, say=lambda _: None, reporter=reporter
    )
    teammate.member = team.load().member("alice")
    lead = Mailbox(team.paths)
    status_path = team.paths.agent_status("alice")
    lead.send("alice", "first", sender="team-lead")
    teammate.step()
    written = status_path.stat()
    assert read_status(team.paths, "alice").state == "idle"  # type: ignore[union-attr]
    for n in range(3):
        lead.send("alice", f"note {n}", sender="team-lead")
        teammate.step()
        assert not lead.read_unread("alice")
    again = status_path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    board = TaskBoard(team.paths)
    board.create("work", metadata={"command": "true"})
    teammate.step()  # a task: its activity changes, and the file says so
    assert status_path.stat().st_ino != written.st_ino
    assert "#1" in read_status(team.paths, "alice").activity  # type: ignore[union-attr]


def test_a_worker_given_two_tasks_by_the_lead_does_both(
    team: TeamFile, start: Callable[..., Any]
) -> None:
    board = TaskBoard(team.paths)
    first = board.create("one", metadata={"command": "echo one"})
    second = board.create("two", metadata={"command": "echo two"})
    board.update(first.id, owner="alice")
    board.update(second.id, owner="alice")
    start("alice")
    wait_for(
        lambda: all(board.require(t.id).status == "completed" for t in (first, second)),
        "both assigned tasks to be done",
    )


def test_an_idle_teammate_looks_at_the_board_only_when_it_changes(
    team: TeamFile, tmp_path: Path
) -> None:
    """Idling costs the same whatever the board holds: with 300 completed tasks on the board,
    fifty seconds of idle passes list it not once; a new task is seen at the next pass."""
    board = TaskBoard(team.paths)
    for task in board.create_many([NewTask(f"done {n}") for n in range(300)]):
        board.update(task.id, status="completed")
    now = [1000.0]
    options = parse(["--agent-id", "alice@t", "--agent-name", "alice", "--team-name", "t"])
    teammate = Teammate(
        options, ShellBrain(tmp_path), team.paths, say=lambda _: None, clock=lambda: now[0]
    )
    teammate.member = team.load().member("alice")
    listings: list[int] = []
    listing = teammate.board.list
    teammate.board.list = lambda *a, **k: listings.append(1) or listing(*a, **k)  # type: ignore[method-assign]
    with InboxWatcher(team.paths.inbox("alice"), directories=(team.paths.tasks_dir,)) as watcher:
        teammate._watcher = watcher
        teammate.step()  # the first pass looks
        listings.clear()
        for _ in range(5):
            now[0] += 10.0  # ten idle seconds a pass: fifty in all
            assert teammate.step() is False
        assert listings == []
        watcher.clear()
        board.create("new", metadata={"command": "echo new > new.txt"})
        wait_for(watcher.changed.is_set, "inotify to report the new task")
        assert teammate.step() is True
    assert (tmp_path / "new.txt").read_text() == "new\n"


def test_a_shell_worker_obeys_the_same_rules_as_a_claude_teammate(
    team: TeamFile, tmp_path: Path, start: Callable[..., subprocess.Popen[str]]
) -> None:
    """One permission engine: a settings file's deny rule refuses a shell worker's command (in
    bypassPermissions mode too, and inside a compound command); a command it allows runs."""
    settings = tmp_path / "rules.json"
    settings.write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(touch:*)"]}})
    )
    (tmp_path / "keep.txt").write_text("precious")
    board = TaskBoard(team.paths)
    removal = board.create("remove it", metadata={"command": "true && rm keep.txt"})
    board.update(removal.id, owner="alice")
    touch = board.create("touch it", metadata={"command": "touch made.txt"})
    board.update(touch.id, owner="bob")
    start("alice", "--settings", str(settings), "--permission-mode", "bypassPermissions")
    start("bob", "--settings", str(settings))
    wait_for(lambda: board.require(removal.id).failed, "the denied task to fail")
    assert "denied by the deny rule Bash(rm:*)" in (board.require(removal.id).failure or "")
    assert (tmp_path / "keep.txt").read_text() == "precious"
    wait_for(lambda: board.require(touch.id).status == "completed", "the allowed task")
    assert (tmp_path / "made.txt").exists()


def test_a_store_out_of_reach_as_it_starts_watching_is_waited_out_not_died_of(
    team: TeamFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its network goes down just as it joined (seen with PostgreSQL under load): starting its
    lease and its watcher fails; it reports the problem, tries again, and runs once they start."""
    monkeypatch.setattr("teammate.trouble.FIRST_DELAY_S", 0.01)
    options = parse(["--agent-id", "alice@t", "--agent-name", "alice", "--team-name", "t"])
    said: list[str] = []
    teammate = Teammate(options, ShellBrain(tmp_path), team.paths, say=said.append)
    keep_alive, tries = teammate.store.keep_alive, []

    def out_of_reach_twice(*args: Any, **kwargs: Any) -> Any:
        tries.append(1)
        if len(tries) <= 2:
            raise StoreUnavailable("heartbeat: the PostgreSQL store did not answer for 30 s")
        return keep_alive(*args, **kwargs)

    monkeypatch.setattr(teammate.store, "keep_alive", out_of_reach_twice)
    lead = Mailbox(team.paths)
    shutdown(lead, "alice")  # its first pass, once it watches, ends it
    assert teammate.run() == 0
    lines = [line.split("] ", 1)[-1] for line in said]  # without the time
    problems = [n for n, line in enumerate(lines) if line.startswith("problem: StoreUnavailable")]
    assert len(problems) == 2 and len(tries) == 3, said
    assert lines.index("working again") > problems[-1], said
    told = [e.text for e in lead.read_all("team-lead") if "hit a problem" in e.text]
    assert len(told) == 1 and "did not answer" in told[0], told  # once, not at every try
    assert any(line.startswith("shutting down") for line in lines), said
