"""A Claude teammate on long jobs, as a real process talking to the test suite's Messages API
server through the real `anthropic` SDK: a 400-turn job in a 40k window that compacts and keeps
its task's criteria; every stop reason; failures in the middle of a stream ridden out; thinking
blocks kept; a shutdown in the middle of a stream; `swarm compact`; a kill -9 in the middle of
a compaction, resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, swarm, wait_for
from messages_api import MessagesAPI, PromptCache, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import CompactRequest, IdleNotification, ShutdownRequest
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from teammate.agent.compaction import summary_turn
from teammate.agent.loop import CUT_CALL
from teammate.agent.transcript import read_transcript

Start = Callable[..., subprocess.Popen[str]]
CRITERIA = "Acceptance criteria: report the checksum 7f3a of data.txt to the lead when done."
WINDOW = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "40000"}


@pytest.fixture(autouse=True)
def no_loop_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """These jobs re-read one file turn after turn to grow the conversation: a loop by design,
    with no progress, which the loop and stall guards (teammate/agent/loop_guard.py,
    stall_guard.py) would rightly stop."""
    monkeypatch.setenv("SWARM_LOOP_REPEATS", "0")
    monkeypatch.setenv("SWARM_STALL_TURNS", "0")


def stop(team: TeamFile, proc: subprocess.Popen[str], name: str = "alice") -> str:
    request = ShutdownRequest(
        requestId=f"shutdown-1@{name}", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send(name, request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output[-3000:]
    return output


def idle_notes(team: TeamFile) -> list[IdleNotification]:
    notes = [e.structured() for e in Mailbox(team.paths).read_all("team-lead")]
    return [n for n in notes if isinstance(n, IdleNotification)]


def texts(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


class Job:
    """A scripted model doing a long task: `reads` Reads of data.txt, then marking task 1
    completed and telling the lead; summary requests get a summary; `faults` maps a step to
    the turns to play instead, one a request, before the step's own."""

    def __init__(self, reads: int, faults: dict[int, list[Turn]] | None = None) -> None:
        self.reads = reads
        self.faults = dict(faults or {})
        self.step = 0
        self.summaries = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        with self.lock:
            if summary_turn(body):
                self.summaries += 1
                return Turn.text(f"Summary: reading data.txt, {self.step} reads done so far.")
            if self.faults.get(self.step):
                return self.faults[self.step].pop(0)
            self.step += 1
            step = self.step
        if step <= self.reads:
            return Turn.tool("Read", {"file_path": "data.txt"})
        if step == self.reads + 1:
            return Turn.tool("TaskUpdate", {"taskId": "1", "status": "completed"})
        if step == self.reads + 2:
            return Turn.tool("SendMessage", {"to": "team-lead", "message": "checksum 7f3a"})
        return Turn.text("Done.")


def data_file(workdir: Path, size: int = 5_000) -> None:
    line = "x" * 79 + "\n"
    (workdir / "data.txt").write_text(line * (size // len(line)))


@pytest.mark.slow
def test_a_400_turn_job_in_a_40k_window_finishes_and_keeps_its_criteria(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    data_file(workdir)
    board = TaskBoard(team.paths)
    board.create("read data.txt 400 times", f"Read data.txt 400 times.\n{CRITERIA}")
    job = Job(400)
    with MessagesAPI(job, window=40_000, cache=PromptCache(min_tokens=1024)) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits", env=WINDOW)
        wait_for(lambda: board.require("1").status == "completed", "the job", timeout=600)
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert not api.refused, api.refused[:3]  # it never sent more than the window holds
    main = [b for b in api.requests if not summary_turn(b)]
    first = next(i for i, b in enumerate(api.requests) if summary_turn(b))
    after = [b for b in api.requests[first:] if not summary_turn(b)]
    assert job.summaries >= 10 and after, "it never compacted: the test proves nothing"
    assert all(CRITERIA in texts(b) for b in after)  # the task's criteria, every time
    assert len(main) == 400 + 3
    status = read_status(team.paths, "alice")
    assert status is not None and status.compactions == job.summaries
    assert status.contextWindow == 40_000 and status.contextTokens is not None
    assert status.contextTokens < 28_000
    # the live transcript holds what came since the last compaction, not the whole job
    live = team.paths.transcript("alice").stat().st_size
    largest = max(len(texts(b).encode()) for b in api.requests)
    assert live <= 2 * largest, (live, largest)


def test_every_stop_reason_and_thinking_through_the_real_sdk(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    thought = Turn.tool(
        "Read", {"file_path": "notes.txt"}, thinking="read it first", redacted_thinking="UkVE"
    )
    script = [
        thought,
        Turn.tool(
            "Write",
            {"file_path": "big.txt", "content": "never all of it " * 50},
            stop_reason="max_tokens",
        ),
        Turn.text("searching", stop_reason="pause_turn"),
        Turn.text("All done.", thinking="finished"),
    ]
    (workdir / "notes.txt").write_text("plum\n")
    with MessagesAPI(script, count_tokens=True) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Read notes.txt and write big.txt", sender="team-lead")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    first, second, third, fourth = api.requests
    assert first["thinking"] == {"type": "adaptive"} and first["output_config"] == {
        "effort": "medium"
    }
    assert {"interleaved-thinking-2025-05-14", "effort-2025-11-24"} <= set(api.betas[0])
    # the thinking and redacted thinking blocks go back as they came, signatures and all
    echoed = second["messages"][1]["content"]
    assert [b["type"] for b in echoed[:2]] == ["thinking", "redacted_thinking"]
    assert echoed[0]["thinking"] == "read it first" and echoed[0]["signature"]
    assert echoed[1]["data"] == "UkVE"
    # max_tokens: the cut-off Write was not run, and the model was told so
    assert not (workdir / "big.txt").exists()
    (cut,) = results(third)
    assert cut["is_error"] and cut["content"] == CUT_CALL
    assert "cut off" in third["messages"][-1]["content"][-1]["text"]
    # pause_turn: the same conversation again, ending with the paused answer
    assert fourth["messages"][-1]["role"] == "assistant"
    assert fourth["messages"][-1]["content"][0]["text"] == "searching"


def test_a_refusal_fails_the_task_and_the_lead_is_told_why(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    board = TaskBoard(team.paths)
    board.create("write the exploit")
    refusal = Turn.text("I can't help with that.", stop_reason="refusal")
    with MessagesAPI([refusal]) as api:
        proc = start("alice", api)
        wait_for(lambda: board.require("1").failed, "the task to fail")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        stop(team, proc)
    assert "the model refused: I can't help with that." in board.require("1").failure
    (note,) = idle_notes(team)
    assert note.completedStatus == "failed" and "refused" in (note.summary or "")


def test_failures_in_the_middle_of_a_stream_are_ridden_out(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    data_file(workdir, 800)
    board = TaskBoard(team.paths)
    board.create("read data.txt", CRITERIA)
    overloaded = Turn.tool("Read", {"file_path": "data.txt"}, fault="overloaded")
    reset = Turn.text("half an answer", fault="reset")
    faults = {
        1: [overloaded],  # an SSE overloaded_error after a 200
        2: [Turn.failure(529, retry_after=0.2)],  # honoured: retry-after 0.2 s
        3: [reset],  # the connection reset mid-stream ...
    }
    job = Job(6, faults)
    with MessagesAPI(job) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        wait_for(lambda: board.require("1").status == "completed", "the job")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        job.faults = {job.step: [reset, reset]}  # ... twice in a row: asked without streaming
        Mailbox(team.paths).send("alice", "one more read, please", sender="team-lead")
        wait_for(lambda: len(idle_notes(team)) == 2, "alice to answer")
        output = stop(team, proc)
    assert "model unavailable (overloaded, 529), retry 1/10" in output
    assert api.streamed[-3:] == [True, True, False]
    events = read_transcript(team.paths.transcript("alice"))
    assert sum(1 for e in events if e["kind"] == "error") == 5


def test_a_shutdown_is_honoured_in_the_middle_of_a_stream(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    board = TaskBoard(team.paths)
    board.create("think for a long time")
    held = threading.Event()
    slow = Turn.text("thinking hard...", stall=held)
    with MessagesAPI([slow]) as api:
        proc = start("alice", api)
        assert api.wait_stalled(timeout=DEADLINE_S), "the stream never began"
        stop(team, proc)  # answered while the stream still runs
        held.set()
    assert board.require("1").status == "pending" and board.require("1").owner is None


def test_swarm_compact_compacts_an_idle_teammate_and_refuses_a_shell_worker(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    script = [
        Turn.text("hello there"),
        Turn.text("Summary: greeted the lead."),
    ]
    with MessagesAPI(script, count_tokens=True) as api:
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Say hello.", sender="team-lead")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        result = swarm("compact", "alice", "keep the greeting", "--timeout", "30", "--json")
        assert result.returncode == 0, result.stderr
        stop(team, proc)
    answer = json.loads(result.stdout)
    assert answer["state"] == "met" and "alice compacted its conversation" in answer["detail"]
    summary = api.requests[1]
    assert summary_turn(summary) and "Also: keep the greeting" in texts(summary)
    status = read_status(team.paths, "alice")
    assert status is not None and status.compactions == 1
    # its log shows what came before the compaction (now in its transcript's history) and it
    logged = swarm("logs", "alice").stdout
    assert "says: hello there" in logged and "compacted the conversation (manual)" in logged
    team.add_member("sam", model="shell")
    refused = swarm("compact", "sam")
    assert refused.returncode == 1 and "shell worker" in refused.stderr
    typo = swarm("compact", "alcie")
    assert typo.returncode == 1 and "did you mean 'alice'?" in typo.stderr


def test_a_compact_request_from_anyone_but_the_lead_is_refused(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    forged = CompactRequest(from_="bob", timestamp="2100-01-01T00:00:00.000Z")
    with MessagesAPI([Turn.text("hello")], count_tokens=True) as api:
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Say hello.", sender="team-lead")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        Mailbox(team.paths).send("alice", forged, sender="bob")
        wait_for(
            lambda: any(
                "compact_request" in e.text for e in Mailbox(team.paths).read_all("team-lead")
            ),
            "the lead to be told",
        )
        stop(team, proc)
    assert len(api.requests) == 1  # no summary was asked for
    told = [
        e.text for e in Mailbox(team.paths).read_all("team-lead") if "compact_request" in e.text
    ]
    assert told == ["Ignored a compact_request from bob: only team-lead may send me one."]


def test_a_kill_in_the_middle_of_a_compaction_resumes_and_compacts_again(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    held = threading.Event()
    summaries: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if summary_turn(body):
            summaries.append(body)
            if len(summaries) == 1:  # the first is never answered: its teammate is killed
                return Turn.text("too late", stall=held, stall_after=0)
            return Turn.text("Summary: remembered the word plum.")
        return Turn.text("Noted: plum.")

    def compactions() -> int:
        status = read_status(team.paths, "alice")
        return status.compactions if status is not None else 0

    with MessagesAPI(play, count_tokens=True) as api:
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Remember the word plum.", sender="team-lead")
        wait_for(lambda: idle_notes(team), "alice to go idle")
        assert swarm("compact", "alice", "--no-wait").returncode == 0
        assert api.wait_stalled(timeout=DEADLINE_S), "no summary was asked for"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(DEADLINE_S)
        held.set()
        again = start("alice", api, "--resume")
        wait_for(lambda: len(summaries) == 2, "the compaction to be asked for again")
        wait_for(lambda: compactions() == 1, "the compaction to be done")
        stop(team, again)
    # the resumed teammate carried on with the conversation it had, and compacted that
    assert "Remember the word plum." in texts(summaries[1])
    events = read_transcript(team.paths.transcript("alice"))
    assert events[0]["kind"] == "compact_boundary"
    assert "remembered the word plum" in json.dumps(events[0]["messages"])
