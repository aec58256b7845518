"""Sub-agents in a real Claude teammate process, through the real `anthropic` SDK and the test
suite's Messages API server: a synchronous Explore sub-agent whose answer the teammate uses;
background sub-agents whose notifications reach the teammate exactly once each (one completes,
one is stopped with TaskStop and reports `killed` with its partial result), an output file read
while its sub-agent runs, the cap on background sub-agents, and messages to a running and to a
stopped (resumed) sub-agent; a running background sub-agent seen from outside, in `swarm status`
and `swarm logs --agent`. The server answers each agent by what its requests say, so the order
in which threads ask does not matter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import DEADLINE_S, swarm, wait_for
from helpers import stop_alice as stop
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, PermissionRequest
from protocols.team.file import TeamFile

Start = Callable[..., subprocess.Popen[str]]


def texts_to_lead(team: TeamFile) -> list[str]:
    return [e.text for e in Mailbox(team.paths).read_all("team-lead") if e.structured() is None]


def idle_count(team: TeamFile) -> int:
    entries = Mailbox(team.paths).read_all("team-lead")
    return sum(isinstance(e.structured(), IdleNotification) for e in entries)


def system_of(body: dict[str, Any]) -> str:
    return json.dumps(body.get("system"))


def first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def results_of(body: dict[str, Any]) -> list[str]:
    """The text of each tool result in the request's last message."""
    content = body["messages"][-1]["content"]
    return [
        b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def last_user_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"][-1]["content"], ensure_ascii=False)


def test_a_synchronous_explore_sub_agent_answers_and_the_teammate_uses_it(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    seen: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        seen.append(body)
        if "You are a sub-agent" in system_of(body):  # the Explore sub-agent
            if len(body["messages"]) == 1:
                return Turn.tool("Read", {"file_path": "notes.txt"})
            return Turn.text("notes.txt says: the answer is 42")
        done = results_of(body)
        if not done:
            call = {"description": "find the answer", "prompt": "What does notes.txt say?"}
            return Turn.tool("Agent", {**call, "subagent_type": "Explore"})
        if "the answer is 42" in done[0]:
            message = {"to": "team-lead", "message": "it is 42", "summary": "the answer"}
            return Turn.tool("SendMessage", message)
        return Turn.text("Done.")

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Find the answer.", sender="team-lead", summary="job")
        wait_for(lambda: idle_count(team), "alice to go idle")
        stop(team, proc)
    assert texts_to_lead(team) == ["it is 42"]
    sub = [b for b in seen if "You are a sub-agent" in system_of(b)]
    assert len(sub) == 2 and "What does notes.txt say?" in first_text(sub[0])
    assert sub[0]["model"] == "claude-haiku-5-5"  # Explore's model, not the teammate's
    names = {t["name"] for t in sub[0]["tools"]}
    assert "Read" in names and not names & {"Write", "Edit", "Agent", "SendMessage"}
    (answer,) = [r for b in seen for r in results_of(b) if "notes.txt says" in r]
    assert re.search(r"agentId: a[0-9a-f]{16} ", answer)
    assert "<usage>total_tokens: " in answer and "tool_uses: 1" in answer
    status = read_status(team.paths, "alice")
    assert status is not None and status.requests == 5  # its 3 and its sub-agent's 2


def test_background_sub_agents_notify_once_each_obey_taskstop_the_cap_and_messages(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    release_slow = threading.Event()
    release_quick = threading.Event()
    alice: list[dict[str, Any]] = []
    ids: dict[str, str] = {}

    def sub_agent(body: dict[str, Any]) -> Turn:
        asked = first_text(body)
        said = len([m for m in body["messages"] if m["role"] == "assistant"])
        if "JOB-SLOW" in asked:
            if said == 0:
                return Turn.tool("Glob", {"pattern": "*.txt"}, text="slow: looking around")
            if "please continue" in last_user_text(body):
                return Turn.text("slow resumed: finished")
            release_slow.wait(DEADLINE_S)  # still thinking when it is stopped
            return Turn.text("slow: this answer comes too late")
        if "JOB-QUICK" in asked:
            if said == 0:
                release_quick.wait(DEADLINE_S)
                return Turn.tool("Glob", {"pattern": "*.md"})
            extra = " (got: extra info)" if "extra info" in last_user_text(body) else ""
            return Turn.text(f"quick result: 7{extra}")
        return Turn.text("?")

    def lead_agent(body: dict[str, Any]) -> Turn:
        alice.append(body)
        done = results_of(body)
        step = len(alice)
        if step == 1:
            calls = [
                ("Agent", {"description": "slow job", "prompt": "JOB-SLOW", "run_in_background": True}),
                ("Agent", {"description": "quick job", "prompt": "JOB-QUICK", "run_in_background": True}),
            ]  # fmt: skip
            return Turn.tools(calls)
        if step == 2:
            ids["slow"], ids["quick"] = (
                re.findall(r"agentId: (a[0-9a-f]{16})", r)[0] for r in done
            )
            output_file = re.findall(r"output_file: (\S+)", done[0])[0]
            wait_for(lambda: "slow: looking" in Path(output_file).read_text(), "slow's output")
            third = {"description": "third", "prompt": "JOB-3", "run_in_background": True}
            return Turn.tools(
                [
                    ("Read", {"file_path": output_file}),
                    ("TaskOutput", {"task_id": ids["slow"], "block": False}),
                    ("Agent", third),
                    ("TaskStop", {"task_id": ids["slow"]}),
                    ("TaskStop", {"task_id": "a0000000000000000"}),
                ]
            )
        if step == 3:
            release_slow.set()
            return Turn.tools(
                [
                    ("SendMessage", {"to": ids["quick"], "message": "extra info", "summary": "x"}),
                    ("SendMessage", {"to": ids["slow"], "message": "please continue", "summary": "y"}),
                ]
            )  # fmt: skip
        if step == 4:
            release_quick.set()  # its next loop boundary comes after the message was queued
        return Turn.text(f"turn {step}")

    def play(body: dict[str, Any]) -> Turn:
        return sub_agent(body) if "You are a sub-agent" in system_of(body) else lead_agent(body)

    def notifications() -> list[str]:
        found = [
            re.findall(r"<task-notification>.*?</task-notification>", last_user_text(b))
            for b in alice
        ]
        return [n for each in found for n in each]  # fmt: skip

    with MessagesAPI(play, concurrent=True) as api:  # sub-agents' answers wait for alice's turns
        proc = start(
            "alice", api, "--permission-mode", "acceptEdits",
            env={"SWARM_MAX_BACKGROUND_AGENTS": "2"},
        )  # fmt: skip
        Mailbox(team.paths).send("alice", "Run your jobs.", sender="team-lead", summary="job")
        wait_for(lambda: len(notifications()) == 3, "three notifications", 30)
        # idle after the job's turn, and after the turn (or two) the notifications started
        wait_for(lambda: idle_count(team) >= 2, "alice to go idle after the notifications")
        stop(team, proc)
    read, output, third, stopped, unknown = results_of(alice[2])
    assert "slow: looking around" in read  # its output file, read while it ran
    assert "<status>running</status>" in output and "<retrieval_status>not_ready" in output
    assert "most this agent may run at once (2)" in third
    assert f"Successfully stopped task: {ids['slow']}" in stopped
    assert "No task found with ID: a0000000000000000" in unknown
    queued, resumed = results_of(alice[3])
    assert "Message queued" in queued and "resumed in the background" in resumed
    by_status: dict[str, list[str]] = {}
    for note in notifications():
        status = re.findall(r"<status>(\w+)</status>", note)[0]
        by_status.setdefault(status, []).append(note)
    (killed,) = by_status["killed"]
    assert f"<task-id>{ids['slow']}</task-id>" in killed
    assert "<result>slow: looking around</result>" in killed  # the partial result
    assert "slow job" in killed and "<tool-use-id>toolu_" in killed
    quick, resumed_slow = sorted(by_status["completed"], key=lambda n: ids["slow"] in n)
    assert "quick result: 7 (got: extra info)" in quick
    assert "slow resumed: finished" in resumed_slow
    assert "slow: this answer comes too late" not in json.dumps(alice)


def test_bad_types_a_malformed_definition_effort_and_the_verification_verdict(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    """An unknown type and a malformed definition are errors the model reads (naming what is
    wrong and what is allowed), and the teammate goes on; a definition's effort is a thinking
    budget in its sub-agent's requests (not the teammate's); the verification built-in runs in
    the background and its verdict line reaches the teammate; one without a verdict is never
    reported as verified."""
    agents = workdir / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "deep.md").write_text(
        "---\nname: deep\ndescription: Thinks hard\neffort: high\ntools: Read\n---\nThink.\n"
    )
    (agents / "broken.md").write_text(
        "---\nname: broken\ndescription: Bad\nmaxTurns: many\n---\nNever runs.\n"
    )
    alice: list[dict[str, Any]] = []
    subs: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in system_of(body):
            subs.append(body)
            asked = first_text(body)
            if "CHECK-PASS" in asked:
                return Turn.text("The build works.\nVERDICT: PASS")
            if "CHECK-SILENT" in asked:
                return Turn.text("I looked around.")
            return Turn.text("deep answer")
        alice.append(body)
        if len(alice) == 1:
            calls = [
                ("Agent", {"description": "x", "prompt": "p", "subagent_type": "nonexistent"}),
                ("Agent", {"description": "x", "prompt": "p", "subagent_type": "broken"}),
                ("Agent", {"description": "deep", "prompt": "DEEP", "subagent_type": "deep"}),
                ("Agent", {"description": "verify", "prompt": "CHECK-PASS", "subagent_type": "verification"}),
                ("Agent", {"description": "verify 2", "prompt": "CHECK-SILENT", "subagent_type": "verification"}),
            ]  # fmt: skip
            return Turn.tools(calls)
        return Turn.text(f"turn {len(alice)}")

    def notified() -> list[str]:
        return re.findall(r"<task-notification>.*?</task-notification>", json.dumps(alice))

    with MessagesAPI(play, concurrent=True) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        Mailbox(team.paths).send("alice", "Go.", sender="team-lead", summary="job")
        try:
            wait_for(lambda: len(notified()) >= 2, "both verifications to report")
        except AssertionError:
            proc.kill()
            raise AssertionError(proc.communicate()[0][-3000:]) from None
        stop(team, proc)
    unknown, broken, deep, verify, silent = results_of(alice[1])
    assert "nonexistent" in unknown and "general-purpose" in unknown and "Explore" in unknown
    assert "broken.md" in broken and "maxTurns" in broken
    assert deep.startswith("deep answer")
    assert "Async agent launched" in verify and "Async agent launched" in silent  # background
    (deep_request,) = [b for b in subs if "DEEP" in first_text(b)]
    # sonnet thinks adaptively: a definition's effort is the effort it is asked for
    assert deep_request["thinking"] == {"type": "adaptive"}
    assert deep_request["output_config"] == {"effort": "high"}
    # the teammate's own: the model's default effort
    assert all(b["output_config"] == {"effort": "medium"} for b in alice)
    told = "\n".join(notified())
    assert "VERDICT: PASS" in told
    assert "no VERDICT line: the verifier did not decide" in told
    assert proc.returncode == 0


def test_a_sub_agents_ask_goes_to_the_lead_labelled_and_swarm_approve_answers_it(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    """In a teammate in default mode, a sub-agent's Bash asks the lead as the teammate's own
    asks do, labelled with alice and the sub-agent type; `swarm approve`, run by another process,
    lets it run, and the teammate gets the sub-agent's answer."""
    alice: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in system_of(body):
            if len(body["messages"]) == 1:
                return Turn.tool("Bash", {"command": "echo sub > sub.txt", "description": "Mark"})
            return Turn.text(f"sub-agent saw: {results_of(body)[0]}")
        alice.append(body)
        if len(alice) == 1:
            return Turn.tool("Agent", {"description": "mark it", "prompt": "Write sub.txt"})
        return Turn.text("done")

    with MessagesAPI(play) as api:
        proc = start("alice", api)  # default mode: a sub-agent cannot have more

        def asks() -> list[PermissionRequest]:
            return [
                m
                for m in (e.structured() for e in Mailbox(team.paths).read_all("team-lead"))
                if isinstance(m, PermissionRequest)
            ]

        Mailbox(team.paths).send("alice", "Mark it.", sender="team-lead", summary="job")
        (ask,) = wait_for(asks, "the sub-agent's permission request")
        assert ask.agent_id == "alice" and ask.tool_name == "Bash"
        assert ask.description.startswith("alice \u203a general-purpose: ")
        assert not (workdir / "sub.txt").exists()  # it waits for the answer
        approved = subprocess.run(
            [sys.executable, "-m", "swarm", "approve", ask.request_id, "--team", "t"],
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            env={**os.environ, "CLAUDE_CONFIG_DIR": str(team.paths.root)},
        )
        assert approved.returncode == 0, approved.stderr
        wait_for(lambda: len(alice) >= 2, "alice to get the sub-agent's answer")
        stop(team, proc)
    assert (workdir / "sub.txt").read_text() == "sub\n"
    assert "sub-agent saw: " in results_of(alice[1])[0]


def test_a_running_sub_agent_shows_in_swarm_status_and_swarm_logs_agent(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    """While alice's background Explore sub-agent waits on its second model call, `swarm
    status --json` lists it under alice, running, with its last tool call, tokens and cost on
    its own model, the text shows it as ``alice \u203a Explore``, and `swarm logs alice --agent ID`
    shows its tool call; once it ends, its entry says completed."""
    (workdir / "notes.txt").write_text("x\n")
    release = threading.Event()
    alice: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in system_of(body):
            if len(body["messages"]) == 1:
                return Turn.tool("Glob", {"pattern": "*.txt"})
            release.wait(DEADLINE_S)  # still at work while the test looks at it
            return Turn.text("found notes.txt")
        alice.append(body)
        if len(alice) == 1:
            call = {"description": "look around", "prompt": "JOB", "subagent_type": "Explore"}
            return Turn.tool("Agent", {**call, "run_in_background": True})
        return Turn.text(f"turn {len(alice)}")

    def alice_of(report: dict[str, Any]) -> dict[str, Any]:
        (member,) = [m for m in report["members"] if m["name"] == "alice"]
        return member

    def at_work() -> list[dict[str, Any]]:
        report = json.loads(swarm("status", "--json").stdout)
        subs = alice_of(report)["subagents"]
        return [s for s in subs if s["state"] == "running" and s["tool_uses"] == 1]

    with MessagesAPI(play, concurrent=True) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits")
        try:
            Mailbox(team.paths).send("alice", "Look around.", sender="team-lead", summary="job")
            (sub,) = wait_for(at_work, "alice's sub-agent at work in swarm status --json")
            assert sub["label"] == "alice \u203a Explore" and sub["agent_type"] == "Explore"
            assert sub["activity"] == "Glob *.txt" and sub["description"] == "look around"
            assert sub["requests"] == 1 and sub["usage"]["input_tokens"] == 10
            assert sub["model"] == "claude-haiku-5-5" and sub["cost_usd"] > 0
            text = swarm("status").stdout
            (row,) = [line for line in text.splitlines() if "\u203a" in line]
            assert row.startswith("    alice \u203a Explore ") and "Glob *.txt" in row
            shown = swarm("logs", "alice", "--agent", sub["agent_id"])
            assert shown.returncode == 0, shown.stderr
            assert "\u2192 Glob: " in shown.stdout and "*.txt" in shown.stdout
        finally:
            release.set()

        def ended() -> bool:
            report = json.loads(swarm("status", "--json").stdout)
            return any(s["state"] == "completed" for s in alice_of(report)["subagents"])

        wait_for(ended, "the sub-agent's entry to say completed")
        wait_for(lambda: idle_count(team) >= 1, "alice to go idle")
        stop(team, proc)
    status = read_status(team.paths, "alice")
    assert status is not None
    (done,) = status.subagents
    assert done.agentId == sub["agent_id"] and done.turns == 2 and done.endedAt
    # alice's own totals hold the sub-agent's tokens once: 10 input tokens a call
    assert status.usage["input_tokens"] == 10 * status.turns
