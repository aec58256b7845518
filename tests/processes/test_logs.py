"""`swarm logs NAME`: a member's transcript and messages as readable lines, raw, as JSON, its
process log, and following new lines as they are written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ctrl_c_obeyed, read_lines, swarm, wait_for

from protocols.clock import iso_from_ms, ms_from_iso
from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import IdleNotification, ShutdownApproved
from protocols.team.file import TeamFile

LONG_COMMAND = "echo " + "x" * 150


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Times print in local time: make that UTC, so HH:MM:SS is the ISO timestamp's."""
    monkeypatch.setenv("TZ", "UTC")


def at(base: str, seconds: float) -> str:
    ms = ms_from_iso(base)
    assert ms is not None
    return iso_from_ms(ms + int(seconds * 1000))


def hms(ts: str) -> str:
    return ts[11:19]


def append(path: Path, *events: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for event in events:
            out.write(json.dumps(event, ensure_ascii=False) + "\n")


def usage(fresh: int, out: int, cached: int = 0) -> dict[str, int]:
    return {"input_tokens": fresh, "output_tokens": out, "cache_read_input_tokens": cached}


def reply(seconds: float, content: list[dict[str, Any]], used: dict[str, int]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    event = {"ts": at(T0, seconds), "kind": "response", "content": content}
    return {**event, "stop_reason": stop, "usage": used}


def call(seconds: float, use_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    event = {"ts": at(T0, seconds), "kind": "tool_call", "id": use_id}
    return {**event, "name": name, "input": tool_input}


def result(seconds: float, use_id: str, content: str, error: bool = False) -> dict[str, Any]:
    event = {"ts": at(T0, seconds), "kind": "tool_result", "id": use_id}
    return {**event, "is_error": error, "content": content}


def deliver(
    team: TeamFile, to: str, sender: str, body: str | Any, ts: str, read: bool = False
) -> None:
    """Write a message into `to`'s inbox as Claude Code does: in place, with its own timestamp."""
    inbox = team.paths.inbox(to)
    items = json.loads(inbox.read_text()) if inbox.exists() else []
    text = body if isinstance(body, str) else body.encode()
    items.append({"from": sender, "text": text, "timestamp": ts, "read": read})
    inbox.write_text(json.dumps(items, indent=2))


T0 = "2026-03-01T10:00:00.000Z"


@pytest.fixture
def alice_log(team: TeamFile) -> list[str]:
    """Alice's messages and transcript; returns the lines `swarm logs alice` should print."""
    archived = {"from": "team-lead", "text": "hello", "timestamp": T0, "read": True}
    append(team.paths.inbox_archive("alice"), archived)
    deliver(team, "alice", "team-lead", "please list the files", at(T0, 1), read=True)
    bash = {"type": "tool_use", "id": "tu1", "name": "Bash", "input": {"command": "ls -la"}}
    crash = "Traceback (most recent call last):\n  ...\nRuntimeError: boom"
    append(
        team.paths.transcript("alice"),
        {"ts": at(T0, 2), "kind": "request", "messages": 1, "tokens": 900},
        reply(3, [{"type": "text", "text": "Let me look\naround."}, bash], usage(234, 56, 1000)),
        call(3, "tu1", "Bash", {"command": "ls -la"}),
        result(4, "tu1", "total 8\na.txt\n\nb.txt\n"),
        reply(
            5,
            [{"type": "tool_use", "id": "tu2"}, {"type": "tool_use", "id": "tu3"}],
            usage(40, 20, 1200),
        ),
        call(5, "tu2", "Write", {"file_path": "notes/out.txt", "content": "x" * 500}),
        result(6, "tu2", "Permission to use Write was denied: outside the project", error=True),
        call(6, "tu3", "Grep", {"pattern": "TODO", "path": "src"}),
        result(7, "tu3", ""),
        {"ts": at(T0, 9), "kind": "error", "error": "Overloaded", "status": 529},
        {"ts": at(T0, 10), "kind": "trimmed", "budget": 90000, "dropped": 4, "changed": True},
        call(12, "tu4", "Bash", {"command": LONG_COMMAND}),
        {"ts": at(T0, 14), "kind": "tool_crash", "id": "tu4", "traceback": crash},
        result(14, "tu4", "Bash failed: RuntimeError: boom", error=True),
        reply(20, [{"type": "text", "text": "All done."}], usage(1234, 5)),
    )
    deliver(team, "team-lead", "alice", "found 2 files", at(T0, 8))
    deliver(team, "alice", "bob", "also check\nthe docs", at(T0, 11))
    deliver(team, "carol", "bob", "not about alice", at(T0, 11))
    for name in ("bob", "carol", "team-lead"):
        deliver(team, name, "alice", "lunch?", at(T0, 13))
    idle = IdleNotification(from_="alice", timestamp=at(T0, 21), summary="listed the files")
    deliver(team, "team-lead", "alice", idle, at(T0, 21))
    return [
        "10:00:00  in  from team-lead: hello",
        "10:00:01  in  from team-lead: please list the files",
        "10:00:03  says: Let me look around. (1,234 in / 56 out, 1,000 cached)",
        "10:00:03  → Bash: ls -la",
        "10:00:04  ← Bash ok: total 8 (2 more lines)",
        "10:00:05  model: 2 tool calls (1,240 in / 20 out, 1,200 cached)",
        "10:00:05  → Write: notes/out.txt",
        "10:00:06  ← Write ✗: Permission to use Write was denied: outside the project",
        '10:00:06  → Grep: {"pattern":"TODO","path":"src"}',
        "10:00:07  ← Grep ok: (no output)",
        "10:00:08  out to team-lead: found 2 files",
        "10:00:09  model error (529): Overloaded",
        "10:00:10  trimmed the conversation to 90,000 tokens (4 messages dropped)",
        "10:00:11  in  from bob: also check the docs",
        f"10:00:12  → Bash: {LONG_COMMAND[:99]}…",
        "10:00:13  out to bob, carol, team-lead: lunch?",
        "10:00:14  ✗ Bash crashed: RuntimeError: boom",
        "10:00:14  ← Bash ✗: Bash failed: RuntimeError: boom",
        "10:00:20  says: All done. (1,234 in / 5 out)",
        "10:00:21  out to team-lead: [idle_notification] listed the files",
    ]


def test_logs_shows_tool_calls_results_tokens_and_messages_merged_by_time(
    alice_log: list[str],
) -> None:
    result = swarm("logs", "alice")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == alice_log
    assert result.stderr == ""


def test_logs_n_shows_only_the_last_lines(alice_log: list[str]) -> None:
    assert swarm("logs", "alice", "-n", "3").stdout.splitlines() == alice_log[-3:]
    assert swarm("logs", "alice", "-n", "0").stdout == ""


def test_logs_raw_prints_the_transcript_lines_as_they_are(
    team: TeamFile, alice_log: list[str]
) -> None:
    lines = team.paths.transcript("alice").read_text(encoding="utf-8").splitlines()
    assert swarm("logs", "alice", "--raw").stdout.splitlines() == lines
    assert swarm("logs", "alice", "--raw", "-n", "2").stdout.splitlines() == lines[-2:]
    conflict = swarm("logs", "alice", "--raw", "--json")
    assert conflict.returncode == 1 and "choose one of" in conflict.stderr


def test_logs_json_lists_the_readable_events(alice_log: list[str]) -> None:
    result = swarm("logs", "alice", "--json")
    events = json.loads(result.stdout)
    assert [e["text"] for e in events] == [line[10:] for line in alice_log]
    kinds = [e["kind"] for e in events]
    assert kinds[:7] == ["in", "in", "says", "tool_call", "tool_result", "usage", "tool_call"]
    assert events[3]["tool"] == "Bash" and events[2]["usage"]["cache_read_input_tokens"] == 1000
    assert events[7]["is_error"] is True and events[7]["tool"] == "Write"
    assert [e["to"] for e in events if e["kind"] == "out"][1] == ["bob", "carol", "team-lead"]
    assert all(e["ts"].startswith("2026-03-01T10:00:") for e in events)


def test_an_unknown_name_is_an_error_naming_the_members(team: TeamFile) -> None:
    result = swarm("logs", "zed")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "swarm: error: no transcript or log for zed in team 't'; "
        "members: team-lead, alice, bob, carol"
    )
    typo = swarm("logs", "alcie")
    assert typo.returncode == 1 and "did you mean 'alice'?" in typo.stderr


def test_a_member_without_a_transcript_shows_its_messages_and_process_log(
    team: TeamFile,
) -> None:
    mailbox = Mailbox(team.paths)
    (task,) = mailbox.send("bob", "run the tests", sender="team-lead")
    approved = ShutdownApproved(requestId="r1", from_="bob", timestamp=task.timestamp)
    (done,) = mailbox.send("team-lead", approved, sender="bob")
    log = team.paths.team_dir / "logs" / "bob.log"
    log.parent.mkdir(parents=True)
    log.write_text("bob: working on #1\nbob: done\n")
    result = swarm("logs", "bob")
    assert result.returncode == 0, result.stderr
    assert "bob has made no model calls" in result.stderr and str(log) in result.stderr
    assert result.stdout.splitlines() == [
        f"{hms(task.timestamp)}  in  from team-lead: run the tests",
        f"{hms(done.timestamp)}  out to team-lead: [shutdown_approved]",
        "log       bob: working on #1",
        "log       bob: done",
    ]


def test_process_prints_a_subprocess_teammates_log(team: TeamFile, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "turns.yaml"
    script.write_text(
        "- tool: Write\n"
        '  input: {file_path: hello.txt, content: "hello\\n"}\n'
        "- tools:\n"
        "    - {name: SendMessage, input: {to: team-lead, message: wrote hello.txt, summary: done}}\n"
        "- text: Finished.\n"
        "  usage: {input_tokens: 1200, output_tokens: 40}\n"
    )
    spawn = ["spawn", "dave", "-p", "write hello.txt", "--script", str(script)]
    spawned = swarm(
        *spawn, "--permission-mode", "acceptEdits", "--backend", "subprocess", "--cwd", str(work)
    )
    assert spawned.returncode == 0, spawned.stderr
    try:

        def finished() -> bool:  # its last words, then the idle notice it sends after them
            shown = swarm("logs", "dave").stdout
            return "says: Finished." in shown and "[idle_notification] available" in shown

        wait_for(finished, "dave to finish and go idle")
        texts = [line[10:] for line in swarm("logs", "dave").stdout.splitlines()]
        assert texts[0] == "in  from team-lead: write hello.txt"
        assert texts[1].startswith("started (pid ") and texts[1].endswith("), fresh")
        assert texts[2:4] == ["model: 1 tool call (10 in / 5 out)", "→ Write: hello.txt"]
        assert texts[4].startswith("← Write ok: File ")
        sent = '→ SendMessage: {"to":"team-lead","message":"wrote hello.txt","summary":"done"}'
        assert sent in texts and "out to team-lead: [idle_notification] available" in texts
        assert "out to team-lead: wrote hello.txt" in texts
        assert "says: Finished. (1,200 in / 40 out)" in texts
        log = team.paths.team_dir / "logs" / "dave.log"
        process = swarm("logs", "dave", "--process")
        assert process.returncode == 0 and process.stdout == log.read_text()
    finally:
        assert swarm("shutdown", "dave").returncode == 0


def test_process_for_a_tmux_teammate_says_where_its_pane_is(team: TeamFile) -> None:
    team.update_member("carol", tmuxPaneId="%7", backendType="tmux", tmuxSocket="swarm-x")
    result = swarm("logs", "carol", "--process")
    assert result.returncode == 1
    assert "carol has no process log: it runs in tmux pane %7 on socket swarm-x" in result.stderr


class Follower:
    """`swarm logs ... --follow` in a subprocess, its stdout collected by a thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "swarm", "logs", *args, "--follow", "--team", "t"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
            # Ctrl-C reaches it even when the suite itself runs in the background, where the
            # shell starts it (and so this child) with SIGINT ignored
            preexec_fn=ctrl_c_obeyed,
        )
        self.lines = read_lines(self.proc)

    def expect(self, text: str) -> None:
        wait_for(lambda: any(text in line for line in self.lines), repr(text))


def test_follow_prints_lines_written_after_it_started(team: TeamFile, alice_log: list[str]) -> None:
    follower = Follower("alice", "-n", "1")
    try:
        follower.expect("[idle_notification] listed the files")
        assert len(follower.lines) == 1
        transcript = team.paths.transcript("alice")
        append(transcript, call(60, "tu9", "Read", {"file_path": "late.txt"}))
        follower.expect("→ Read: late.txt")
        Mailbox(team.paths).send("alice", "one more thing", sender="carol")
        follower.expect("in  from carol: one more thing")
        append(transcript, result(61, "tu9", "late"))
        follower.expect("← Read ok: late")
        assert len(follower.lines) == 4
        follower.proc.send_signal(signal.SIGINT)
        try:
            follower.proc.wait(20)
        except subprocess.TimeoutExpired:  # where it hangs: faulthandler prints every thread
            follower.proc.send_signal(signal.SIGABRT)
            follower.proc.wait(10)
            stacks = follower.proc.stderr.read() if follower.proc.stderr else ""
            raise AssertionError(f"swarm logs --follow ignored Ctrl-C:\n{stacks}") from None
        assert follower.proc.stderr is not None and "Traceback" not in follower.proc.stderr.read()
    finally:
        if follower.proc.poll() is None:
            follower.proc.kill()
        follower.proc.wait(10)


def test_follow_raw_prints_appended_transcript_lines(team: TeamFile, alice_log: list[str]) -> None:
    transcript = team.paths.transcript("alice")
    follower = Follower("alice", "--raw", "-n", "1")
    try:
        follower.expect('"text": "All done."')
        line = {"ts": at(T0, 30), "kind": "trimmed", "budget": 1, "dropped": 0}
        append(transcript, line)
        follower.expect(json.dumps(line))
        assert follower.lines == transcript.read_text(encoding="utf-8").splitlines()[-2:]
    finally:
        follower.proc.terminate()
        follower.proc.wait(10)


# a sub-agent's sidechain: swarm logs NAME --agent ID

SUB_ID = "a0123456789abcdef"
OTHER_ID = "afedcba9876543210"


@pytest.fixture
def sidechain(team: TeamFile) -> Path:
    """alice's sub-agent SUB_ID read a file and answered; OTHER_ID has a transcript too, and
    alice's status file maps the name "reviewer" to SUB_ID."""
    from protocols.member.status import AgentStatus, SubAgentStatus, write_status

    path = team.paths.subagent_transcript("alice", SUB_ID)
    append(
        path,
        {"ts": at(T0, 1), "kind": "request", "messages": 1, "tokens": 90},
        reply(2, [{"type": "tool_use", "id": "st1", "name": "Read", "input": {}}], usage(90, 5)),
        call(2, "st1", "Grep", {"pattern": "TODO\x1b[2J", "path": "src"}),
        result(3, "st1", "src/a.py:1: TODO"),
        reply(4, [{"type": "text", "text": "found one TODO"}], usage(120, 7, 60)),
    )
    append(team.paths.subagent_transcript("alice", OTHER_ID), {"ts": at(T0, 5), "kind": "x"})
    (team.paths.subagents_dir("alice") / f"{SUB_ID}.output").write_text("found one TODO\n")
    entry = SubAgentStatus(agentId=SUB_ID, agentType="Explore", name="reviewer")
    write_status(team.paths, AgentStatus(name="alice", model="sonnet", subagents=[entry]))
    return path


def test_logs_agent_shows_one_sub_agents_transcript(team: TeamFile, sidechain: Path) -> None:
    shown = swarm("logs", "alice", "--agent", SUB_ID)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"{hms(at(T0, 2))}  model: 1 tool call (90 in / 5 out)",
        f'{hms(at(T0, 2))}  → Grep: {{"pattern":"TODO\\u001b[2J","path":"src"}}',
        f"{hms(at(T0, 3))}  ← Grep ok: src/a.py:1: TODO",
        f"{hms(at(T0, 4))}  says: found one TODO (180 in / 7 out, 60 cached)",
    ]
    assert "→ Grep: " in shown.stdout and "\x1b" not in shown.stdout  # escaped
    assert swarm("logs", "alice", "--agent", "reviewer").stdout == shown.stdout  # by its name
    events = json.loads(swarm("logs", "alice", "--agent", SUB_ID, "--json").stdout)
    assert [e["kind"] for e in events] == ["usage", "tool_call", "tool_result", "says"]
    assert events[1]["tool"] == "Grep"
    raw = swarm("logs", "alice", "--agent", SUB_ID, "--raw", "-n", "1").stdout
    assert json.loads(raw)["content"][0]["text"] == "found one TODO"
    assert "in  from" not in shown.stdout  # the member's messages are not the sub-agent's


def test_logs_agent_unknown_is_a_clear_error(team: TeamFile, sidechain: Path) -> None:
    unknown = swarm("logs", "alice", "--agent", "a9999999999999999")
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert "alice has no sub-agent 'a9999999999999999'" in unknown.stderr
    assert f"{SUB_ID} (reviewer)" in unknown.stderr and OTHER_ID in unknown.stderr
    traversal = swarm("logs", "alice", "--agent", "../alice.status")
    assert traversal.returncode == 1 and "Traceback" not in traversal.stderr
    none = swarm("logs", "bob", "--agent", SUB_ID)
    assert none.returncode == 1 and "it has run no sub-agents with a transcript" in none.stderr
    both = swarm("logs", "alice", "--agent", SUB_ID, "--process")
    assert both.returncode == 1 and "no process of its own" in both.stderr


def test_follow_agent_prints_the_sub_agents_new_lines(team: TeamFile, sidechain: Path) -> None:
    follower = Follower("alice", "--agent", SUB_ID, "-n", "1")
    try:
        follower.expect("says: found one TODO")
        append(sidechain, call(9, "st2", "Read", {"file_path": "src/a.py"}))
        follower.expect("→ Read: src/a.py")
        assert len(follower.lines) == 2
    finally:
        follower.proc.terminate()
        follower.proc.wait(10)
