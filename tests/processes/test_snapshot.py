"""The price table (`swarm.views.costs`), the read-only team view (`swarm.views.snapshot`) and its text
(`swarm.views.table`): states, tasks, requests, messages, ages from a fixed clock, totals, and
that taking a snapshot changes no byte and no mtime of the team's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import swarm

from protocols.clock import iso_from_ms, ms_from_iso
from protocols.inbox.permissions import PermissionFileRequest, PermissionStore
from protocols.member.status import AgentStatus, read_status, write_status
from protocols.messages.models import (
    IdleNotification,
    PermissionRequest,
    PlanApprovalRequest,
    PlanApprovalResponse,
    TaskAssignment,
)
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.errors import SwarmError
from swarm.team.approvals import pending_requests
from swarm.views.costs import Price, cost, load_prices, price_of
from swarm.views.snapshot import MemberView, MessageView, RequestView, TeamView, snapshot, to_json
from swarm.views.table import render

NOW = 1_800_000_000_000  # the fixed clock of the age tests
# Claude Code 2.1.330's catalogue: input, output, 5 m write, read, 1 h write
SONNET = Price(2.0, 10.0, 2.5, 0.10, 4.0)
OPUS = Price(4.0, 20.0, 5.0, 0.20, 8.0)
SONNET_45 = Price(3.0, 15.0, 3.75, 0.30, 6.0)
OPUS_45 = Price(5.0, 25.0, 6.25, 0.50, 10.0)
HAIKU_45 = Price(1.0, 5.0, 1.25, 0.10, 2.0)
USAGE = {
    "input_tokens": 1_000,
    "output_tokens": 200,
    "cache_read_input_tokens": 5_000,
    "cache_creation_input_tokens": 300,
}


def dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def status(paths: TeamPaths, name: str, **fields: object) -> None:
    write_status(paths, AgentStatus(name=name, **{"model": "claude-sonnet-5-5", **fields}))


def entry(sender: str, text: str, at_ms: int, color: str | None = None) -> dict[str, object]:
    return {"from": sender, "text": text, "timestamp": iso_from_ms(at_ms), "color": color}


def write_inbox(paths: TeamPaths, agent: str, entries: list[dict[str, object]]) -> None:
    paths.inbox(agent).write_text(json.dumps(entries, indent=2), encoding="utf-8")


# costs


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("claude-sonnet-5-5", SONNET),
        ("claude-opus-5-5", OPUS),
        ("claude-sonnet-4-5", SONNET_45),
        ("claude-opus-4-5", OPUS_45),
        ("claude-haiku-4-5", HAIKU_45),
        ("sonnet", SONNET),  # an alias, resolved as the teammate resolves it
        ("claude-sonnet-4-5-20250929", SONNET_45),  # dated ids
        ("us.anthropic.claude-opus-4-5-20251101-v1:0", OPUS_45),  # a provider's id
        ("claude-3-opus-20240229", OPUS),  # not in the catalogue: its family's latest
        ("Claude-Sonnet-9", SONNET),
        ("shell", None),
        ("scripted", None),
        ("gpt-4o", None),
        (None, None),
    ],
)
def test_default_prices_and_family_matching(model: str | None, price: Price | None) -> None:
    assert price_of(model) == price


def test_cost_is_usd_per_million_tokens_of_each_kind() -> None:
    expected = (1_000 * 2 + 200 * 10 + 300 * 2.5 + 5_000 * 0.10) / 1_000_000
    assert cost("claude-sonnet-5-5", USAGE) == pytest.approx(expected)
    assert cost("claude-opus-5-5", {"output_tokens": 1_000_000}) == pytest.approx(20.0)
    assert cost("shell", USAGE) is None
    assert cost("claude-haiku-5-5", {}) == 0


def test_an_hour_long_cache_write_and_a_long_prompt_are_priced_as_such() -> None:
    hour = {"cache_creation_input_tokens": 1_000_000, "cache_creation_1h_input_tokens": 400_000}
    assert cost("claude-sonnet-5-5", hour) == pytest.approx(0.6 * 2.5 + 0.4 * 4.0)
    # haiku 5.5: a request whose prompt is above 100,000 tokens pays its long-prompt tier
    short = {"input_tokens": 100_000, "output_tokens": 1_000}
    long = {"input_tokens": 100_001, "output_tokens": 1_000}
    assert cost("haiku", short) == pytest.approx((100_000 * 0.1 + 1_000 * 0.5) / 1e6)
    assert cost("haiku", long) == pytest.approx((100_001 * 0.5 + 1_000 * 2.5) / 1e6)


def test_the_price_file_is_merged_over_the_defaults(config_root: Path) -> None:
    (config_root / "swarm-prices.json").write_text(
        json.dumps(
            {
                "sonnet": {"output": 30},  # a family: every sonnet id without its own entry
                "claude-sonnet-4-5": {"input": 2.5},  # an id: over its family's override
                "local-llama": {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0},
            }
        )
    )
    assert price_of("claude-sonnet-5-5") == Price(2.0, 30.0, 2.5, 0.10, 4.0)
    assert price_of("claude-sonnet-4-5-20250929") == Price(2.0, 30.0, 2.5, 0.10, 4.0)
    assert price_of("claude-sonnet-4-5") == Price(2.5, 15.0, 3.75, 0.30, 6.0)
    assert price_of("local-llama") == Price(0, 0, 0, 0, 0)
    assert cost("local-llama", USAGE) == 0
    assert price_of("claude-opus-5-5") == OPUS
    assert load_prices(config_root / "elsewhere").price_of("claude-sonnet-5-5") == SONNET


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"opus": 5}', "'opus'"),
        ('{"opus": {"input": -1}}', "'opus'.input"),
        ('{"opus": {"input": "cheap"}}', "'opus'.input"),
        ('{"opus": {"inputs": 1}}', "'opus' has unknown keys"),
        ('{"my-model": {"input": 1, "output": 2}}', "'my-model'"),
    ],
)
def test_a_bad_price_file_is_an_error_naming_the_file_and_key(
    config_root: Path, content: str, named: str
) -> None:
    prices = config_root / "swarm-prices.json"
    prices.write_text(content)
    with pytest.raises(SwarmError) as raised:
        price_of("claude-opus-5-5")
    assert str(prices) in str(raised.value) and named in str(raised.value)


def test_status_reports_a_bad_price_file_without_a_traceback(
    team: TeamFile, config_root: Path
) -> None:
    (config_root / "swarm-prices.json").write_text('{"sonnet": {"output": null}}')
    result = swarm("status")
    assert result.returncode == 1 and "swarm-prices.json" in result.stderr
    assert "'sonnet'.output" in result.stderr and "Traceback" not in result.stderr


# snapshot


def test_member_states_and_waiting_only_when_alive(team: TeamFile, paths: TeamPaths) -> None:
    team.add_member("dave")  # no process recorded yet
    team.update_member("alice", pid=os.getpid(), isActive=True)
    team.update_member("bob", pid=dead_pid(), isActive=True)
    team.update_member("carol", pid=os.getpid(), isActive=False)
    status(paths, "alice", state="waiting", activity="asking to run Bash")
    status(paths, "bob", state="waiting")
    status(paths, "carol", state="idle")
    view = snapshot(paths)
    states = {m.name: m.state for m in view.members}
    assert states == {
        "team-lead": "lead",
        "alice": "waiting",
        "bob": "dead",
        "carol": "idle",
        "dave": "starting",
    }
    status(paths, "alice", state="working")
    assert snapshot(paths).members[1].state == "working"
    alice = snapshot(paths).members[1]
    assert alice.pid == os.getpid() and alice.color == team.load().member("alice").color


def test_current_task_board_and_blocked_map(team: TeamFile, paths: TeamPaths) -> None:
    board = TaskBoard(paths)
    for subject in ("build", "test", "ship", "prepare"):
        board.create(subject)
    board.create("tracking", metadata={"_internal": True})
    board.update("2", addBlockedBy=["1"])
    board.update("3", addBlockedBy=["4", "2"])
    board.update("4", status="completed")
    assert board.claim("1", "alice").success
    view = snapshot(paths)
    assert [t.id for t in view.tasks["in_progress"]] == ["1"]
    assert [t.id for t in view.tasks["pending"]] == ["2", "3"]
    assert [t.id for t in view.tasks["completed"]] == ["4"]
    assert view.blocked == {"2": ["1"], "3": ["2"]}
    tasks = {m.name: m.task for m in view.members}
    assert tasks == {"team-lead": None, "alice": "#1 build", "bob": None, "carol": None}


def test_requests_and_messages_with_ages_from_a_fixed_clock(
    team: TeamFile, paths: TeamPaths
) -> None:
    permission = PermissionRequest(
        request_id="perm-1",
        agent_id="alice",
        tool_name="Bash",
        tool_use_id="toolu-1",
        description="rm -rf build\nand more",
        input={"command": "rm -rf build"},
    )
    plan = PlanApprovalRequest.model_validate(
        {
            "from": "carol",
            "timestamp": iso_from_ms(NOW - 50_000),
            "planFilePath": "plan.md",
            "planContent": "# Plan\n1. do it",
            "requestId": "plan_approval-1@carol@t",
        }
    )
    idle = IdleNotification.model_validate(
        {
            "from": "bob",
            "timestamp": iso_from_ms(NOW - 12_000),
            "completedTaskId": "3",
            "completedStatus": "resolved",
        }
    )
    write_inbox(
        paths,
        "team-lead",
        [
            entry("alice", "way back", NOW - 90_000),
            entry("carol", plan.encode(), NOW - 50_000),
            entry("bob", "first line\nsecond line", NOW - 30_000, color="green"),
            entry("bob", idle.encode(), NOW - 12_000),
            entry("alice", permission.encode(), NOW - 5_000),
            entry("carol", "x" * 300, NOW + 5_000),  # a clock ahead of ours: age 0
        ],
    )
    answer = PlanApprovalResponse(
        requestId="plan_approval-1@carol@t", approved=True, timestamp=iso_from_ms(NOW - 40_000)
    )
    write_inbox(paths, "carol", [entry("team-lead", answer.encode(), NOW - 40_000)])
    PermissionStore(paths).write_pending(
        PermissionFileRequest(
            id="legacy-1",
            workerId="bob@t",
            workerName="bob",
            teamName="t",
            toolName="Write",
            toolUseId="toolu-2",
            description="",
            input={"file_path": "notes.md"},
            createdAt=NOW - 60_000,
        )
    )
    view = snapshot(paths, now_ms=NOW, messages=5)
    assert [r._replace(pending=None) for r in view.requests] == [
        RequestView("legacy-1", "file", "bob", "Write", "notes.md", 60.0),
        RequestView("perm-1", "permission_request", "alice", "Bash", "rm -rf build", 5.0),
    ]
    expected = [(p.id, p.input) for p in pending_requests(paths)]
    assert [(r.pending.id, r.pending.input) for r in view.requests if r.pending] == expected
    bob = team.load().member("bob").color
    assert view.messages == [
        MessageView(
            "carol", team.load().member("carol").color, "plan_approval_request: # Plan", 50.0
        ),
        MessageView("bob", "green", "first line", 30.0),
        MessageView("bob", bob, "idle_notification: completed #3", 12.0),
        MessageView("alice", view.messages[3].color, "permission_request: Bash: rm -rf build", 5.0),
        MessageView("carol", view.messages[4].color, "x" * 119 + "…", 0.0),
    ]
    assert len(view.messages[4].text) == 120
    assert [m.text for m in snapshot(paths, now_ms=NOW, messages=1).messages] == ["x" * 119 + "…"]
    assert snapshot(paths, now_ms=NOW, messages=0).messages == []


def test_totals_costs_and_activity_age(team: TeamFile, paths: TeamPaths) -> None:
    status(paths, "alice", usage=USAGE, requests=3, turns=3, activity="running Bash")
    status(paths, "bob", model="claude-opus-5-5", usage={"output_tokens": 1_000})
    status(paths, "carol", model="shell", usage={"input_tokens": 7})
    now = ms_from_iso(read_status(paths, "alice").updatedAt) + 12_000
    view = snapshot(paths, now_ms=now)
    alice, bob, carol = view.members[1:]
    assert alice.activity == "running Bash" and alice.activity_age_s == pytest.approx(12.0, abs=1)
    assert alice.requests == 3 and alice.turns == 3 and alice.model == "claude-sonnet-5-5"
    assert alice.cost_usd == pytest.approx(cost("claude-sonnet-5-5", USAGE))
    assert bob.cost_usd == pytest.approx(0.020) and carol.cost_usd is None
    assert view.members[0].activity_age_s is None and view.members[0].cost_usd is None
    assert view.usage == {
        "input_tokens": 1_007,
        "output_tokens": 1_200,
        "cache_read_input_tokens": 5_000,
        "cache_creation_input_tokens": 300,
    }
    assert view.cost_usd == pytest.approx(alice.cost_usd + 0.020)


def test_a_member_priced_as_it_went_shows_its_own_cost(team: TeamFile, paths: TeamPaths) -> None:
    """The teammate prices each request as it is made (its long-prompt tier, its hour-long
    cache writes): that sum is what the views show, not its usage priced at once."""
    status(paths, "alice", usage=USAGE, costUsd=1.25)
    alice = snapshot(paths).members[1]
    assert alice.cost_usd == 1.25


def test_no_known_price_means_no_team_cost(team: TeamFile, paths: TeamPaths) -> None:
    status(paths, "alice", model="shell", usage=USAGE)
    view = snapshot(paths)
    assert view.cost_usd is None and view.usage["input_tokens"] == 1_000


def test_to_json_is_json(team: TeamFile, paths: TeamPaths) -> None:
    TaskBoard(paths).create("build")
    status(paths, "alice", usage=USAGE)
    data = json.loads(json.dumps(to_json(snapshot(paths))))
    assert data["tasks"]["pending"][0]["subject"] == "build"
    assert data["members"][1]["name"] == "alice" and data["members"][1]["usage"] == USAGE
    assert set(data) == {
        "team",
        "members",
        "tasks",
        "failed",
        "blocked",
        "requests",
        "messages",
        "usage",
        "cost_usd",
        "panes",
    }


def test_a_snapshot_never_writes(team: TeamFile, paths: TeamPaths, config_root: Path) -> None:
    board = TaskBoard(paths)
    board.create("one")
    board.create("two")
    board.update("2", addBlockedBy=["1"])
    team.update_member("alice", pid=os.getpid(), isActive=True)
    status(paths, "alice", state="waiting", usage=USAGE)
    assignment = TaskAssignment(
        taskId="1", subject="one", description="", assignedBy="team-lead", timestamp="x"
    )
    asked = PermissionRequest(
        request_id="perm-9",
        agent_id="carol",
        tool_name="Bash",
        tool_use_id="t",
        description="ls",
        input={},
    )
    write_inbox(paths, "team-lead", [entry("carol", asked.encode(), NOW)])
    write_inbox(paths, "alice", [entry("team-lead", assignment.encode(), NOW)])
    paths.inbox_archive("team-lead").write_text(json.dumps(entry("bob", "old", NOW)) + "\n")
    paths.inbox("carol").write_text('[{"from": "team-lead", "te')  # half written, or corrupt
    (config_root / "swarm-prices.json").write_text('{"sonnet": {"input": 4}}')

    def files() -> dict[str, tuple[bytes, int]]:
        return {
            str(p): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(config_root.rglob("*"))
        }

    before = files()
    view = snapshot(paths)
    assert [r.id for r in view.requests] == ["perm-9"]
    assert to_json(snapshot(paths)) and render(snapshot(paths))
    assert files() == before


def test_swarm_status_prints_the_table(team: TeamFile, paths: TeamPaths) -> None:
    TaskBoard(paths).create("build")
    status(paths, "alice", usage=USAGE, requests=2)
    result = swarm("status")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("team t: 4 members; tasks 1 pending")
    assert "#1 [pending] build" in result.stdout and "$0.0053" in result.stdout
    report = json.loads(swarm("status", "--json").stdout)
    assert report["tasks"]["pending"][0]["id"] == "1"


# the text


def member(name: str, **fields: object) -> MemberView:
    base: dict[str, object] = {
        "name": name,
        "color": None,
        "state": "idle",
        "task": None,
        "activity": "",
        "activity_age_s": None,
        "model": None,
        "requests": 0,
        "turns": 0,
        "usage": dict.fromkeys(USAGE, 0),
        "cost_usd": None,
        "pid": None,
        "backend": None,
    }
    return MemberView(**{**base, **fields})  # type: ignore[arg-type]


def test_render_is_plain_aligned_text(team: TeamFile, paths: TeamPaths) -> None:
    board = TaskBoard(paths)
    board.create("build")
    board.create("test")
    board.update("2", addBlockedBy=["1"])
    board.claim("1", "alice")
    tasks = snapshot(paths).tasks
    view = TeamView(
        team="t",
        members=[
            member("team-lead", state="lead"),
            member(
                "alice",
                state="working",
                task="#1 build",
                activity="running Bash",
                activity_age_s=12.4,
                requests=3,
                turns=2,
                usage=USAGE,
                cost_usd=0.008625,
                context_tokens=62_000,
                context_window=200_000,
                compactions=2,
            ),
            member("bob", state="dead", activity="x" * 60, activity_age_s=125.0),
            member("cy", state="waiting", activity="asking: Bash", activity_age_s=5.0),
        ],
        tasks=tasks,
        failed=[],
        blocked={"2": ["1"]},
        requests=[RequestView("perm-1", "permission_request", "alice", "Bash", "ls", 5.0)],
        messages=[MessageView("bob", None, "idle_notification: available", 7200.0)],
        usage=USAGE,
        cost_usd=0.008625,
    )
    expected = """\
team t: 4 members; tasks 1 pending, 1 in progress, 0 completed, 0 failed (1 blocked); 1 request waiting
  member     state                 task      activity                                                   turns  calls     ctx  tokens in (cached) / out     cost
  team-lead  lead                  -         -                                                              0      0       -                 0 (0) / 0        -
  alice      working               #1 build  running Bash (12s ago)                                         2      3  31% ↻2       6,300 (5,000) / 200  $0.0086
  bob        dead                  -         xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (2m ago)      0      0       -                 0 (0) / 0        -
  cy         waiting for approval  -         asking: Bash (5s ago)                                          0      0       -                 0 (0) / 0        -

tasks
  in progress (1)
    #1 [in_progress] build (alice)
  pending (1)
    #2 [pending] test [blocked by #1]
  completed (0)

requests waiting (1)
  perm-1  alice  Bash: ls  (5s ago)

last messages to team-lead
  bob: idle_notification: available  (2.0h ago)

total: 2 turns, 3 calls, tokens 6,300 (5,000) / 200, cost $0.0086 (estimate)"""
    assert render(view) == expected
    assert "\x1b" not in render(view)


def test_render_of_an_empty_team_and_many_completed(team: TeamFile, paths: TeamPaths) -> None:
    board = TaskBoard(paths)
    for i in range(12):
        board.create(f"t{i + 1}")
        board.update(str(i + 1), status="completed")
    text = render(snapshot(paths))
    assert "  completed (12)\n    ... 2 earlier\n    #3 [completed] t3" in text
    assert "requests waiting (0)\n  none" in text and "last messages to team-lead\n  none" in text
    assert text.endswith("total: 0 turns, 0 calls, tokens 0 (0) / 0, cost -")
