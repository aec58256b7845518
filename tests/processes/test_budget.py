"""Budgets, with real Claude teammate processes on the real `anthropic` SDK and the suite's
Messages API server (model sonnet: priced, so cost is counted): at 80% the lead hears once; at
100% the teammate makes no more model requests, tells the lead why (a failed idle
notification), shows ``over budget`` in `swarm status` and keeps answering its inbox; `swarm
budget NAME +USD` raises the limit and it carries on with its task. A sub-agent's calls count
(priced on its own model); ``--max-tokens`` likewise; bad input to `swarm budget` and `swarm
spawn` is one clear line."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import LeadSession, swarm, wait_for
from helpers import stop_alice as stop
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.messages.models import IdleNotification, ShutdownRequest
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.backends.stub import StubBackend
from swarm.team.lifecycle import spawn_member
from swarm.team.members import member_spec
from swarm.up.apply import plan_up
from swarm.up.spec import TeamFileError, load_team_file
from teammate.options import MemberSpec

Start = Callable[..., subprocess.Popen[str]]
# sonnet (5.5): $2 per million input tokens, $10 per million output: $0.0045 a call
CALL = {"input_tokens": 1000, "output_tokens": 250}


def texts_to_lead(team: TeamFile) -> list[str]:
    return [e.text for e in Mailbox(team.paths).read_all("team-lead") if e.structured() is None]


def spent(team: TeamFile) -> float | None:
    """What alice's status file says she has spent (None: no file or no budget yet)."""
    status = read_status(team.paths, "alice")
    return status.budget.costUsd if status is not None and status.budget is not None else None


def failed_notes(team: TeamFile) -> list[IdleNotification]:
    notes = [e.structured() for e in Mailbox(team.paths).read_all("team-lead")]
    return [n for n in notes if isinstance(n, IdleNotification) and n.idleReason == "failed"]


def results_of(body: dict[str, Any]) -> int:
    """How many tool results the conversation holds: how far the scripted work has got."""
    return sum(
        1
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def with_usage(turn: Turn, usage: dict[str, int]) -> Turn:
    turn.usage = dict(usage)
    return turn


class HeldAfter:
    """A model that calls `tool` with `tool_input` for the first `calls` requests (a new
    tool_use id each time), then says `final`; a request made after those calls but before
    `raised` is set (while the budget holds the agent) is noted in `early`."""

    def __init__(self, tool: str, tool_input: dict[str, Any], final: str, calls: int = 2) -> None:
        self.tool, self.tool_input, self.final, self.calls = tool, tool_input, final, calls
        self.raised = threading.Event()
        self.early: list[int] = []

    def __call__(self, body: dict[str, Any]) -> Turn:
        done = results_of(body)
        if done >= self.calls and not self.raised.is_set():
            self.early.append(done)
        if done < self.calls:
            return with_usage(Turn.tool(self.tool, dict(self.tool_input)), CALL)
        return with_usage(Turn.text(self.final), CALL)


def answered_while_stopped(team: TeamFile) -> None:
    """A shutdown request from a non-lead: a stopped teammate still reads its inbox and
    reports it to the lead (and obeys nothing): proof that it is alive and waiting."""
    bogus = ShutdownRequest(
        requestId="shutdown-9@alice", from_="bob", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send("alice", bogus, sender="bob")
    wait_for(
        lambda: any("only team-lead may send me one" in t for t in texts_to_lead(team)),
        "alice to answer its inbox while over budget",
    )


def test_over_budget_stops_model_calls_tells_the_lead_and_a_raise_resumes_the_task(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    raised = threading.Event()
    while_stopped: list[int] = []

    def play(body: dict[str, Any]) -> Turn:
        done = results_of(body)
        if done >= 3 and not raised.is_set():
            while_stopped.append(done)  # a request made while over budget
        if done < 3:
            name = f"{'abc'[done]}.txt"
            return with_usage(Turn.tool("Write", {"file_path": name, "content": "x"}), CALL)
        if done == 3:
            done_task = {"taskId": task.id, "status": "completed"}
            return with_usage(Turn.tool("TaskUpdate", done_task), CALL)
        return with_usage(Turn.text("All three written."), CALL)

    board = TaskBoard(team.paths)
    task = board.create("write three files", description="a.txt, b.txt and c.txt")
    with MessagesAPI(play) as api:
        proc = start("alice", api, "--permission-mode", "acceptEdits", "--max-cost", "0.01")
        wait_for(lambda: failed_notes(team), "alice to stop over budget")
        notes = failed_notes(team)
        assert len(notes) == 1, notes
        (note,) = notes
        assert note.failureReason == (
            "over budget: spent $0.0135 of $0.01; raise it with `swarm budget alice +0.01`"
        )
        warnings = [t for t in texts_to_lead(team) if "of its budget" in t]
        assert len(warnings) == 1 and "alice has used 90% of its budget" in warnings[0]
        answered_while_stopped(team)
        assert len(api.requests) == 3 and not while_stopped
        assert (workdir / "c.txt").exists()  # the tool call of the answer that crossed ran

        status = swarm("status")
        assert status.returncode == 0, status.stderr
        row = next(line for line in status.stdout.splitlines() if line.split()[:1] == ["alice"])
        assert "over budget" in row and "/$0.01" in row
        as_json = json.loads(swarm("status", "--json").stdout)
        (member,) = [m for m in as_json["members"] if m["name"] == "alice"]
        assert member["state"] == "over budget" and member["budget"]["maxCostUsd"] == 0.01
        shown = swarm("budget", "alice")
        assert shown.stdout.startswith("alice: spent $0.0135 of $0.01 (135%)"), shown.stdout
        assert shown.stdout.rstrip().endswith("over budget")
        assert board.get(task.id).owner == "alice"  # it keeps its task, for after a raise

        raised.set()
        result = swarm("budget", "alice", "+0.02", "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["maxCostUsd"] == 0.03
        wait_for(lambda: board.get(task.id).status == "completed", "alice to finish its task")
        # the task is completed by the fourth answer's tool call; the fifth request ends the turn
        wait_for(lambda: len(api.requests) == 5, "alice to end its turn after the task")
        wait_for(  # and its answer counted (the request reaching the server is not enough)
            lambda: spent(team) == 0.0225, "the fifth answer's spend in the status file"
        )
        stop(team, proc)
    assert len(api.requests) == 5
    back = [t for t in texts_to_lead(team) if "carries on" in t]
    assert back == ["alice has a new budget ($0.03; spent $0.0135) and carries on"]
    assert len(failed_notes(team)) == 1  # the failure was said once
    status_file = read_status(team.paths, "alice")
    assert status_file is not None and status_file.budget is not None
    assert status_file.budget.costUsd == 0.0225 and not status_file.budget.over


def test_a_sub_agents_calls_count_against_its_parents_budget(
    team: TeamFile, start: Start, workdir: Path
) -> None:
    """The Explore sub-agent (haiku: $1 / $5 a million) spends past the teammate's cap: the
    sub-agent's next request is not made until the raise; then both finish."""
    (workdir / "notes.txt").write_text("the answer is 42\n")
    raised = threading.Event()
    early: list[str] = []
    heavy = {"input_tokens": 50_000, "output_tokens": 40_000}  # haiku 5.5 ($0.1/$0.5): $0.025

    def play(body: dict[str, Any]) -> Turn:
        sub = "You are a sub-agent" in json.dumps(body.get("system"))
        if sub:
            if results_of(body) == 0:
                return with_usage(Turn.tool("Read", {"file_path": "notes.txt"}), heavy)
            if not raised.is_set():
                early.append("sub-agent")
            return with_usage(Turn.text("notes.txt says 42"), CALL)
        if results_of(body) == 0:
            call = {"description": "look", "prompt": "What does notes.txt say?"}
            return with_usage(Turn.tool("Agent", {**call, "subagent_type": "Explore"}), CALL)
        return with_usage(Turn.text("It says 42."), CALL)

    with MessagesAPI(play) as api:
        proc = start("alice", api, "--max-cost", "0.02")
        Mailbox(team.paths).send("alice", "What does notes.txt say?", sender="team-lead")
        wait_for(lambda: failed_notes(team), "alice to stop over budget")
        (note,) = failed_notes(team)
        assert note.failureReason is not None
        assert note.failureReason.startswith("over budget: spent $0.0295 of $0.02")
        answered_while_stopped(team)
        assert len(api.requests) == 2 and not early
        raised.set()
        assert swarm("budget", "alice", "=1").returncode == 0
        wait_for(lambda: len(api.requests) == 4, "the sub-agent and alice to finish")
        wait_for(lambda: any("carries on" in t for t in texts_to_lead(team)), "the notice")
        stop(team, proc)
    assert api.requests[2]["model"] == "claude-haiku-5-5"


def test_max_tokens_stops_it_and_swarm_budget_tokens_raises_it(
    team: TeamFile, start: Start
) -> None:
    play = HeldAfter("Glob", {"pattern": "*.txt"}, "Done.")
    raised, early = play.raised, play.early
    with MessagesAPI(play) as api:
        proc = start("alice", api, "--max-tokens", "2000")
        Mailbox(team.paths).send("alice", "Look around.", sender="team-lead")
        wait_for(lambda: failed_notes(team), "alice to stop over its token budget")
        (note,) = failed_notes(team)
        assert note.failureReason == (
            "over budget: used 2,500 of 2,000 tokens; raise it with "
            "`swarm budget alice --tokens +2000`"
        )
        answered_while_stopped(team)
        assert len(api.requests) == 2 and not early
        shown = json.loads(swarm("budget", "alice", "--json").stdout)
        assert shown["tokens"] == 2500 and shown["maxTokens"] == 2000 and shown["over"]
        assert swarm("budget", "alice", "+1").returncode == 1  # it has no cost limit
        raised.set()
        result = swarm("budget", "alice", "--tokens", "+2000")
        assert result.returncode == 0, result.stderr
        assert "2,500 of 4,000 tokens (62%)" in result.stdout
        wait_for(lambda: len(api.requests) == 3, "alice to carry on")
        wait_for(lambda: any("carries on" in t for t in texts_to_lead(team)), "the notice")
        stop(team, proc)


def test_max_time_stops_it_once_its_time_is_up_and_swarm_budget_time_raises_it(
    team: TeamFile, start: Start
) -> None:
    # its first call runs a command that outlasts its 3 s: the next request is held (on a
    # loaded machine its start may take the 3 s already: then not even the first is made)
    play = HeldAfter("Bash", {"command": "sleep 4"}, "Done.", calls=1)
    raised, early = play.raised, play.early
    with MessagesAPI(play) as api:
        proc = start("alice", api, "--max-time", "3", "--permission-mode", "bypassPermissions")
        Mailbox(team.paths).send("alice", "Wait a little.", sender="team-lead")
        wait_for(lambda: failed_notes(team), "alice to stop past its time")
        (note,) = failed_notes(team)
        assert note.failureReason is not None
        assert re.fullmatch(
            r"over its time: ran \d+s of 3s; raise it with `swarm budget alice --time \+3s`",
            note.failureReason,
        ), note.failureReason
        answered_while_stopped(team)
        made = len(api.requests)
        assert made <= 1 and not early
        shown = json.loads(swarm("budget", "alice", "--json").stdout)
        assert shown["maxSeconds"] == 3 and shown["seconds"] >= 3 and shown["over"]
        assert swarm("budget", "alice", "--time", "soon").returncode == 1
        raised.set()
        result = swarm("budget", "alice", "--time", "+1h")
        assert result.returncode == 0, result.stderr
        assert "of 1h" in result.stdout
        wait_for(lambda: len(api.requests) > made, "alice to carry on")
        wait_for(lambda: any("carries on" in t for t in texts_to_lead(team)), "the notice")
        stop(team, proc)


def test_the_teams_time_limit_stops_every_member_until_it_is_raised(
    team: TeamFile, start: Start
) -> None:
    play = HeldAfter("Glob", {"pattern": "*.txt"}, "Done.", calls=1)
    raised = play.raised
    with MessagesAPI(play) as api:
        set_it = swarm("team", "budget", "--time", "=1s")
        assert set_it.returncode == 0, set_it.stderr
        wait_for(
            lambda: json.loads(swarm("team", "budget", "--json").stdout)["over"],
            "the team's second to pass",
        )
        proc = start("alice", api)
        Mailbox(team.paths).send("alice", "Look around.", sender="team-lead")
        wait_for(lambda: failed_notes(team), "alice to stop: the team's time is up")
        (note,) = failed_notes(team)
        assert note.failureReason is not None
        assert note.failureReason.startswith("the team is over its time: it has run ")
        assert "`swarm team budget --time +1s`" in note.failureReason
        assert len(api.requests) == 0
        raised.set()
        assert swarm("team", "budget", "--time", "+1h").returncode == 0
        wait_for(lambda: len(api.requests) >= 1, "alice to carry on")
        stop(team, proc)


def test_bad_budget_input_is_one_clear_line_and_changes_nothing(team: TeamFile) -> None:
    team.add_member("dana", model="sonnet")
    team.add_member("sam", model="shell")
    cases = {
        ("ghost", "+1"): "no member named 'ghost' in team 't'",
        ("dama", "+1"): "did you mean 'dana'?",
        ("dana", "+abc"): "'+abc' is not a budget change: give +N",
        ("dana", "-1"): "'-1' is not a budget change",
        ("dana", "=0"): "a limit must be more than 0 USD",
        ("dana", "+nan"): "is not a budget change",
        ("dana", "+1"): "dana has no cost limit to raise: set one with `swarm budget dana =1`",
        ("sam", "=1"): "sam is a shell worker: it makes no model calls",
    }
    for args, expected in cases.items():
        result = swarm("budget", *args)
        assert result.returncode == 1, (args, result.stdout)
        assert expected in result.stderr, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    tokens = swarm("budget", "dana", "--tokens", "=1.5")
    assert tokens.returncode == 1 and "tokens are a whole number" in tokens.stderr
    assert not (team.paths.team_dir / "budgets" / "dana.json").exists()

    spawned = swarm("spawn", "bo", "-p", "hi", "--model", "shell", "--max-cost", "1")
    assert spawned.returncode == 1 and "a shell worker makes no model calls" in spawned.stderr
    key = {"ANTHROPIC_API_KEY": "test-key"}
    unpriced = swarm("spawn", "bo", "-p", "hi", "--model", "gpt-9", "--max-cost", "1", env=key)
    assert unpriced.returncode == 1 and "'gpt-9' has no price" in unpriced.stderr
    negative = swarm("spawn", "bo", "-p", "hi", "--model", "sonnet", "--max-tokens", "-5", env=key)
    assert negative.returncode == 1 and "--max-tokens must be a positive" in negative.stderr
    assert TeamFile(team.paths).load().member("bo") is None


TEAM = """team: shop
budget: {max_cost: 2, max_tokens: 500000}
members:
  - {name: ann, prompt: x, model: sonnet}
  - {name: bea, prompt: x, model: sonnet, max_cost: 5}
  - {name: cy, prompt: x}
"""


def test_a_team_files_budget_is_each_members_unless_it_gives_its_own(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(TEAM)
    plan = plan_up(load_team_file(path))
    limits = {m.name: (m.spec.max_cost, m.spec.max_tokens) for m in plan.members}
    assert limits == {"ann": (2.0, 500000), "bea": (5.0, 500000), "cy": (None, None)}
    bad = {
        "  - {name: dee, prompt: x, max_cost: 1}\n": "members[3].max_cost: a shell worker makes "
        "no model calls, so it has no budget",
        "  - {name: dee, prompt: x, model: sonnet, max_tokens: -3}\n": "members[3].max_tokens: "
        "expected a number > 0",
        "  - {name: dee, prompt: x, model: sonnet, max_cost: lots}\n": "members[3].max_cost: "
        "expected a number",
    }
    for line, expected in bad.items():
        path.write_text(TEAM + line)
        with pytest.raises(TeamFileError) as raised:
            load_team_file(path)
        assert expected in str(raised.value)
    path.write_text(TEAM.replace("max_tokens: 500000", "max_tokens: 500000, per: day"))
    with pytest.raises(TeamFileError, match=r"budget\.per: unknown key; expected one of max_cost"):
        load_team_file(path)


def test_swarm_up_gives_a_scripted_member_the_teams_token_budget(
    config_root: Path, tmp_path: Path
) -> None:
    """A scripted turn uses 15 tokens (10 in, 5 out): with the team's 20 it stops before its
    third request, and `swarm budget` lets it finish."""
    (tmp_path / "s.yaml").write_text(
        "- {tool: Glob, input: {pattern: '*'}}\n- {tool: Glob, input: {pattern: '*'}}\n"
        "- text: done\n"
    )
    path = tmp_path / "team.yaml"
    path.write_text(
        "team: shop\nbudget: {max_tokens: 20}\n"
        "members:\n  - {name: sid, prompt: Look around., script: s.yaml}\n"
    )
    result = swarm("up", str(path), "--backend", "subprocess", team=None)
    assert result.returncode == 0, result.stderr
    paths = TeamPaths(config_root, "shop")
    team = TeamFile(paths)
    wait_for(lambda: failed_notes(team), "sid to stop over its token budget")
    assert failed_notes(team)[0].failureReason == (
        "over budget: used 30 of 20 tokens; raise it with `swarm budget sid --tokens +20`"
    )
    raised = swarm("budget", "sid", "--tokens", "+100", team="shop")
    assert raised.returncode == 0, raised.stderr
    wait_for(lambda: any("carries on" in t for t in texts_to_lead(team)), "sid to carry on")
    wait_for(lambda: len(idle_notes(team)) == 2, "sid to finish")
    assert idle_notes(team)[1].idleReason == "available"
    assert swarm("down", "shop", "--wait", "10", team=None).returncode == 0

    path.write_text(path.read_text().replace("max_tokens: 20", "max_cost: 1"))
    refused = swarm("up", str(path), team=None)
    assert refused.returncode == 1
    assert "member 'sid' cannot start: model 'scripted' has no price" in refused.stderr


def idle_notes(team: TeamFile) -> list[IdleNotification]:
    notes = [e.structured() for e in Mailbox(team.paths).read_all("team-lead")]
    return [n for n in notes if isinstance(n, IdleNotification)]


def test_the_lead_agents_own_budget_stops_it_and_swarm_budget_team_lead_raises_it(
    workdir: Path,
) -> None:
    play = HeldAfter("TaskList", {}, "The board is empty.")
    raised, early = play.raised, play.early
    with MessagesAPI(play) as api:
        lead = LeadSession(api, workdir, "--max-cost", "0.005")
        try:
            lead.type("What is on the board?")
            lead.expect("lead: team-lead has used 90% of its budget ($0.0045 of $0.005)")
            lead.expect(
                "lead: the lead agent stopped, over budget: spent $0.009 of $0.005; raise it "
                "with `swarm budget team-lead +0.005`"
            )
            shown = swarm("budget", "team-lead")
            assert "spent $0.009 of $0.005 (180%)" in shown.stdout and "over budget" in shown.stdout
            assert len(api.requests) == 2 and not early
            raised.set()
            assert swarm("budget", "team-lead", "+1").returncode == 0
            lead.expect("lead: team-lead has a new budget ($1.00; spent $0.009) and carries on")
            lead.expect("The board is empty.")
            assert lead.quit() == 0
        finally:
            lead.close()


def test_a_spawns_budget_is_recorded_for_restarts_and_swarm_budget_starts_from_it(
    team: TeamFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-used")
    spec = MemberSpec(model="sonnet", max_cost=2.0, max_tokens=90_000, cwd=str(tmp_path))
    stub = StubBackend()
    spawn_member(team.paths, "eve", "Do it.", spec, backend=stub, wait_s=0)
    (request,) = stub.requests
    assert request.argv[-6:] == ["--max-cost", "2.0", "--max-tokens", "90000", "--model", "sonnet"]
    recorded = member_spec(team.load().require("eve"))
    assert recorded is not None and (recorded.max_cost, recorded.max_tokens) == (2.0, 90_000)
    shown = swarm("budget", "eve")
    assert shown.stdout.strip() == ("eve: spent $0.00 of $2.00 (0%); 0 of 90,000 tokens (0%)"), (
        shown.stdout
    )
    raised = swarm("budget", "eve", "+1.5", "--tokens", "=100000")
    assert raised.stdout.strip() == "eve: spent $0.00 of $3.50 (0%); 0 of 100,000 tokens (0%)"
    again = swarm("budget", "eve", "+1")  # from the budget file now, not the spec
    assert "of $4.50" in again.stdout


def test_a_teammate_stopped_over_budget_obeys_a_shutdown_and_hands_back_its_task(
    team: TeamFile, start: Start
) -> None:
    def play(body: dict[str, Any]) -> Turn:
        return with_usage(Turn.tool("Glob", {"pattern": "*"}), CALL)

    board = TaskBoard(team.paths)
    task = board.create("look around")
    with MessagesAPI(play) as api:
        proc = start("alice", api, "--max-tokens", "1000")
        wait_for(lambda: failed_notes(team), "alice to stop over its token budget")
        assert board.get(task.id).owner == "alice"
        output = stop(team, proc)
    assert len(api.requests) == 1 and "released ['1']" in output
    assert board.get(task.id).status == "pending"
