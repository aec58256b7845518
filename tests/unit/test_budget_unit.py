"""`teammate.budget.Budget` in-process: spend priced per model, the 80% notice once per limit,
the over-budget reason, and the gate waiting until a raise; `swarm budget`'s change parser."""

from __future__ import annotations

import pytest

from protocols.clock import iso_from_ms
from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.member.budget import (
    BudgetFile,
    Limits,
    TeamBudgetFile,
    update_budget,
    update_team_budget,
)
from protocols.member.prices import PriceTable, default_prices
from protocols.member.status import AgentStatus, BudgetStatus, write_status
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity
from protocols.team.file import TeamFile
from swarm.team.budget import BudgetError, Change, parse_change
from swarm.views.snapshot import snapshot
from swarm.views.table import render
from teammate.agent.loop_guard import question
from teammate.api.model import Usage
from teammate.budget import Budget, Notices

PRICES = PriceTable(default_prices(), {})
SONNET_CALL = Usage(input_tokens=1000, output_tokens=100)  # $0.0045 on claude-sonnet-4-5


def budget_with_log(limits: Limits, paths: TeamPaths | None = None) -> tuple[Budget, list[str]]:
    said: list[str] = []
    notices = Notices(
        warn=lambda t: said.append(f"warn: {t}"),
        over=lambda t: said.append(f"over: {t}"),
        back=lambda t: said.append(f"back: {t}"),
    )
    return Budget("alice", limits, PRICES, paths, notices), said


def test_spend_is_priced_on_the_model_that_answered_and_counts_every_token() -> None:
    budget, _ = budget_with_log(Limits(maxCostUsd=1))
    budget.add("claude-sonnet-4-5", SONNET_CALL)
    budget.add("claude-haiku-4-5-20251001", SONNET_CALL)  # $1 / $5 a million: $0.0015
    budget.add("scripted", SONNET_CALL)  # no price: tokens only
    assert round(budget.cost, 6) == 0.006 and budget.tokens == 3300


def test_the_80_percent_notice_is_sent_once_per_limit_and_over_stops_until_a_raise() -> None:
    budget, said = budget_with_log(Limits(maxCostUsd=0.01))
    budget.add("claude-sonnet-4-5", SONNET_CALL)
    budget.add("claude-sonnet-4-5", SONNET_CALL)
    assert budget.settle() and budget.settle()
    assert said == [
        "warn: alice has used 90% of its budget ($0.009 of $0.01); it stops at 100% until the "
        "budget is raised (`swarm budget alice +USD`)"
    ]
    budget.add("claude-sonnet-4-5", SONNET_CALL)
    assert not budget.settle() and not budget.settle()
    assert said[1:] == [
        "over: over budget: spent $0.0135 of $0.01; raise it with `swarm budget alice +0.01`"
    ]
    assert budget.status().over
    budget.limits = Limits(maxCostUsd=0.015)  # a raise (as the budget file gives it)
    assert budget.settle()
    assert said[2:] == [
        "warn: alice has used 90% of its budget ($0.0135 of $0.015); it stops at 100% until "
        "the budget is raised (`swarm budget alice +USD`)",
        "back: alice has a new budget ($0.015; spent $0.0135) and carries on",
    ]


def test_the_gate_waits_until_the_budget_file_raises_the_limit(paths: TeamPaths) -> None:
    paths.team_dir.mkdir(parents=True)
    budget, said = budget_with_log(Limits(maxTokens=1000), paths)
    budget.joined_at = 42
    budget.add(None, SONNET_CALL)
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:  # an earlier instance's file is not this one's
            update_budget(paths, "alice", lambda _: BudgetFile(name="alice", joinedAt=7))
        else:
            raised = BudgetFile(name="alice", joinedAt=42, maxTokens=2000)
            update_budget(paths, "alice", lambda _: raised)

    budget.gate(wait)
    assert len(waits) == 2 and budget.limits.maxTokens == 2000
    assert said[0].startswith("over: over budget: used 1,100 of 1,000 tokens")
    assert (
        said[-1] == "back: alice has a new budget (2,000 tokens; spent 1,100 tokens) and carries on"
    )


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("+1", "cost", Change("+", 1.0)),
        ("=2.5", "cost", Change("=", 2.5)),
        ("0.5", "cost", Change("=", 0.5)),
        ("+20000", "tokens", Change("+", 20000.0)),
        ("+30m", "time", Change("+", 1800.0)),
        ("=1h30m", "time", Change("=", 5400.0)),
        ("90", "time", Change("=", 90.0)),
    ],
)
def test_budget_changes_parse(text: str, kind: str, expected: Change) -> None:
    assert parse_change(text, kind) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["+abc", "-1", "+-1", "1e3", "", "+", "=inf", "+0", "=0.0"])
def test_bad_budget_changes_say_what_is_allowed(text: str) -> None:
    with pytest.raises(BudgetError):
        parse_change(text, "cost")


@pytest.mark.parametrize("text", ["+soon", "=0", "-5m", "1h30", ""])
def test_bad_time_changes_say_what_is_allowed(text: str) -> None:
    with pytest.raises(BudgetError, match=r"--time: .*(duration|more than 0)"):
        parse_change(text, "time")


def test_time_runs_out_on_its_clock_and_a_raise_lets_it_go_on() -> None:
    now = [100.0]
    said: list[str] = []
    notices = Notices(
        warn=lambda t: said.append(f"warn: {t}"),
        over=lambda t: said.append(f"over: {t}"),
        back=lambda t: said.append(f"back: {t}"),
    )
    budget = Budget("alice", Limits(maxSeconds=3600), PRICES, None, notices, clock=lambda: now[0])
    now[0] += 2900  # 48m 20s: past 80%
    assert budget.settle()
    assert said == [
        "warn: alice has used 81% of its budget (48m 20s of 1h); it stops at 100% until the "
        "budget is raised (`swarm budget alice +USD`)"
    ]
    now[0] += 700
    assert not budget.settle()
    assert said[-1] == (
        "over: over its time: ran 1h of 1h; raise it with `swarm budget alice --time +1h`"
    )
    assert budget.status().seconds == 3600 and budget.status().maxSeconds == 3600
    budget.limits = Limits(maxSeconds=7200)
    assert budget.settle()
    assert said[-1] == "back: alice has a new budget (2h; spent 1h) and carries on"


def test_the_teams_time_counts_from_its_file_on_the_wall_clock(
    paths: TeamPaths, team: TeamFile
) -> None:
    started = 2_000_000_000.0
    wall = [started + 10]
    update_team_budget(
        paths, lambda _: TeamBudgetFile(maxSeconds=60, timeFrom=iso_from_ms(int(started * 1000)))
    )
    budget = Budget("alice", Limits(), PRICES, paths, wall=lambda: wall[0])
    assert budget.settle()
    wall[0] = started + 61
    assert not budget.settle()
    assert budget.reason() == (
        "the team is over its time: it has run 1m 1s of 1m; raise it with "
        "`swarm team budget --time +1m`"
    )


@pytest.mark.parametrize(
    ("budget", "shown"),
    [
        # a time limit alone
        (
            BudgetStatus(maxSeconds=60.0, seconds=61.0, over=True, reason="ran 1m01s of 1m"),
            {"maxSeconds": 60.0, "over": True, "reason": "ran 1m01s of 1m"},
        ),
        # no limit of its own: stopped by the team's
        (
            BudgetStatus(costUsd=0.5, over=True, reason="the team has spent $2.00 of $2"),
            {"maxCostUsd": None, "over": True, "reason": "the team has spent $2.00 of $2"},
        ),
    ],
)
def test_what_stopped_a_member_shows_whichever_limit_tripped(
    team: TeamFile, paths: TeamPaths, budget: BudgetStatus, shown: dict[str, object]
) -> None:
    team.update_member("alice", **ProcessIdentity.mine().to_value())  # alive: this process
    write_status(paths, AgentStatus(name="alice", model="sonnet", state="idle", budget=budget))
    (alice,) = [m for m in snapshot(paths).members if m.name == "alice"]
    assert alice.state == "over budget"
    assert alice.budget is not None and shown.items() <= alice.budget.items()


def test_a_member_without_limits_shows_no_budget(team: TeamFile, paths: TeamPaths) -> None:
    team.update_member("alice", **ProcessIdentity.mine().to_value())
    write_status(
        paths,
        AgentStatus(name="alice", model="sonnet", state="idle", budget=BudgetStatus(costUsd=0.1)),
    )
    (alice,) = [m for m in snapshot(paths).members if m.name == "alice"]
    assert alice.budget is None and alice.state == "idle"


def test_status_says_why_a_guard_stopped_a_member(team: TeamFile, paths: TeamPaths) -> None:
    """A loop guard's request shows the looping call and, under it, the question it asks."""
    asked = question("Bash", 5)
    request_permission(
        Mailbox(paths),
        worker="alice",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description=asked,
        input={"command": "ls"},
    )
    lines = render(snapshot(paths)).splitlines()
    at = next(i for i, line in enumerate(lines) if "alice  Bash: ls" in line)
    assert lines[at + 1] == f"    the teammate's description (unverified): {asked}"
