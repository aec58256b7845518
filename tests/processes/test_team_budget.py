"""The team's budget (`swarm team budget`), with two real Claude teammates on the real
`anthropic` SDK and the suite's Messages API server (sonnet: priced): what they spend together
reaches the team's limit, both stop making model requests and each tells the lead why; a raise
lets both carry on and finish. A team file's ``budget: {team_max_cost: ...}`` sets it. Bad input
is one clear line and changes nothing."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import swarm, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.mailbox import Mailbox
from protocols.member.budget import read_team_budget
from protocols.messages.models import IdleNotification
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

Start = Callable[..., subprocess.Popen[str]]
CALL = {"input_tokens": 1000, "output_tokens": 250}  # sonnet: $0.0045 a call
STEPS = 4  # tool calls each teammate's task takes


def failed_notes(team: TeamFile) -> dict[str, str]:
    """Who told the lead it stopped, and why."""
    found = {}
    for entry in Mailbox(team.paths).read_all("team-lead"):
        note = entry.structured()
        if isinstance(note, IdleNotification) and note.idleReason == "failed":
            found[entry.from_] = note.failureReason or ""
    return found


def test_the_team_stops_at_its_budget_and_a_raise_lets_everyone_finish(
    team: TeamFile, start: Start
) -> None:
    raised = threading.Event()
    before_raise: list[str] = []

    def play(body: dict[str, Any]) -> Turn:
        first = json.dumps(body["messages"][0])
        name = "alice" if "for alice" in first else "bob"
        done = sum(1 for m in body["messages"] if m["role"] == "user") - 1
        if not raised.is_set():
            before_raise.append(name)
        if done < STEPS:
            turn = Turn.tool("Bash", {"command": f"echo {name} {done}"})
        elif done == STEPS:
            task = "1" if name == "alice" else "2"
            turn = Turn.tool("TaskUpdate", {"taskId": task, "status": "completed"})
        else:
            turn = Turn.text("Done.")
        turn.usage = dict(CALL)
        return turn

    # four calls together ($0.018) cross $0.015
    limit = swarm("team", "budget", "=0.015", "--json")
    assert limit.returncode == 0, limit.stderr
    assert json.loads(limit.stdout)["maxCostUsd"] == 0.015
    board = TaskBoard(team.paths)
    board.create("work for alice", owner="alice")
    board.create("work for bob", owner="bob")
    with MessagesAPI(play) as api:
        for name in ("alice", "bob"):
            start(name, api, "--permission-mode", "bypassPermissions")
        wait_for(lambda: set(failed_notes(team)) == {"alice", "bob"}, "both to stop", 60)
        for reason in failed_notes(team).values():
            assert reason.startswith("the team is over its budget: its members have spent $")
            assert reason.endswith("of $0.015 together; raise it with `swarm team budget +0.015`")
        shown = swarm("team", "budget", "--json")
        view = json.loads(shown.stdout)
        assert view["over"] and view["costUsd"] >= 0.015 and view["maxCostUsd"] == 0.015
        stopped_at = len(api.requests)
        assert "over budget" in swarm("status").stdout

        raised.set()
        more = swarm("team", "budget", "+1")
        assert more.returncode == 0, more.stderr
        assert more.stdout.startswith("t: spent $") and "of $1.01 together" in more.stdout
        wait_for(
            lambda: all(board.require(i).status == "completed" for i in ("1", "2")),
            "both to finish their tasks after the raise",
            60,
        )
    assert len(api.requests) > stopped_at
    # four calls cross the limit; a member whose request raced the other's fourth makes its own
    assert 4 <= len(before_raise) <= 5, before_raise
    carried_on = [
        e.text for e in Mailbox(team.paths).read_all("team-lead") if "carries on" in e.text
    ]
    assert len(carried_on) == 2 and all("the team's $1.01" in t for t in carried_on)


def test_bad_team_budget_input_is_one_clear_line_and_changes_nothing(team: TeamFile) -> None:
    for args, said in (
        (["-1"], "is not a budget change"),
        (["+1"], "has no cost limit to raise: set one with `swarm team budget =1`"),
        (["abc"], "is not a budget change"),
        (["--tokens", "1.5"], "tokens are a whole number"),
    ):
        result = swarm("team", "budget", *args)
        assert result.returncode != 0 and said in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert read_team_budget(team.paths) is None
    shown = swarm("team", "budget")
    assert shown.stdout.strip() == (
        "t: spent $0.00 together (no cost limit); 0 tokens (no token limit)"
    )


def test_a_team_files_budget_sets_the_teams_limit_and_bad_values_are_named(
    config_root: Path, tmp_path: Path
) -> None:
    team_file = tmp_path / "team.yaml"
    team_file.write_text(
        "team: capped\n"
        "budget: {max_cost: 1, team_max_cost: 5, team_max_tokens: 2000000, team_max_time: 4h}\n"
        "members:\n  - {name: ann, prompt: Work the board., model: shell}\n"
    )
    up = swarm("up", str(team_file), team=None)
    assert up.returncode == 0, up.stderr
    try:
        found = read_team_budget(TeamPaths(config_root, "capped"))
        assert found is not None
        assert (found.maxCostUsd, found.maxTokens, found.maxSeconds) == (5, 2000000, 14400)
        assert found.timeFrom  # its four hours count from the team's start
        shown = swarm("team", "budget", "--json", team="capped")
        assert json.loads(shown.stdout)["maxCostUsd"] == 5
    finally:
        swarm("down", "--team", "capped", "--wait", "10", team=None)
    for bad_budget, named in (
        ("team_max_cost: -5", "team_max_cost"),
        ("max_time: soon", "max_time"),
    ):
        team_file.write_text(
            f"team: capped2\nbudget: {{{bad_budget}}}\n"
            "members:\n  - {name: ann, prompt: Work the board., model: sonnet}\n"
        )
        bad = swarm("up", str(team_file), team=None)
        assert bad.returncode != 0 and named in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr
        assert not (config_root / "teams" / "capped2").exists()
    assert "expected a duration such as 90s, 30m, 2h or 1h30m" in bad.stderr
