"""Sub-agents in what a person sees, from files written in the test's config root: `swarm status`
(text and --json) and `swarm watch` show a member's running sub-agents under it (label, activity,
tokens, cost on its own model, its definition's colour), --json every listed one; a sub-agent's
permission ask is labelled ``alice \u203a reviewer`` in `swarm permissions`, status and the lead's
views, but only when the prefix names the member that asked, and stays that member's request."""

from __future__ import annotations

import json

from helpers import swarm
from rich.console import Console
from rich.text import Text

from protocols.inbox.mailbox import Mailbox
from protocols.member.status import AgentStatus, SubAgentStatus, write_status
from protocols.messages.models import PermissionRequest
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.lead.inbox import Leader
from swarm.team.approvals import pending_requests
from swarm.team.request_text import details
from swarm.views.costs import load_prices
from swarm.views.dashboard_frame import frame
from swarm.views.snapshot import snapshot, to_json
from swarm.views.table import render

MARK = "\u203a"
ALICE_USAGE = {
    "input_tokens": 5_000,
    "output_tokens": 400,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
EXPLORE_USAGE = {
    "input_tokens": 1_200,
    "output_tokens": 80,
    "cache_read_input_tokens": 300,
    "cache_creation_input_tokens": 0,
}


def write_alice(paths: TeamPaths) -> None:
    explore = SubAgentStatus(
        agentId="a1111111111111111",
        agentType="Explore",
        description="find the config",
        activity="Grep config",
        model="claude-haiku-5-5",
        usage=EXPLORE_USAGE,
        toolUses=3,
        requests=2,
        turns=2,
    )
    named = SubAgentStatus(
        agentId="a2222222222222222",
        agentType="reviewer",
        name="rev\x1b[31m",  # a name from the file: escaped wherever it is shown
        description="review \u202eit",
        activity="Bash: make \x1b[2Jtest",
        usage={"input_tokens": 10},
        color="green",
        requests=1,
        turns=1,
    )
    done = SubAgentStatus(
        agentId="a3333333333333333",
        agentType="general-purpose",
        state="completed",
        endedAt="2026-01-01T00:00:00.000Z",
        usage={"output_tokens": 9},
    )
    status = AgentStatus(
        name="alice",
        model="claude-sonnet-5-5",
        state="working",
        activity="running Agent",
        requests=9,
        turns=8,
        usage=ALICE_USAGE,
        subagents=[explore, named, done],
    )
    write_status(paths, status)


def test_status_shows_running_sub_agents_under_their_member(
    team: TeamFile, paths: TeamPaths
) -> None:
    write_alice(paths)
    view = snapshot(paths)
    alice = next(m for m in view.members if m.name == "alice")
    assert [s.agent_id for s in alice.subagents] == [
        "a1111111111111111",
        "a2222222222222222",
        "a3333333333333333",
    ]
    assert [s.label for s in alice.running_subagents] == [
        f"alice {MARK} Explore",
        f"alice {MARK} rev\x1b[31m",
    ]
    explore = alice.subagents[0]
    assert explore.cost_usd == load_prices().cost("claude-haiku-5-5", EXPLORE_USAGE)
    assert alice.subagents[1].model == "claude-sonnet-5-5"  # its member's: none of its own
    assert view.usage == ALICE_USAGE  # the member's totals hold its sub-agents' already

    text = render(view)
    assert "\x1b" not in text and "\u202e" not in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  alice "))
    explore_row, named_row = lines[at + 1], lines[at + 2]
    assert explore_row.startswith(f"    alice {MARK} Explore ")
    assert "running" in explore_row and "find the config" in explore_row
    assert "Grep config" in explore_row and "1,500 (300) / 80" in explore_row
    assert f"${explore.cost_usd:.4f}" in explore_row
    assert f"alice {MARK} rev\\x1b[31m" in named_row and "Bash: make \\x1b[2Jtest" in named_row
    assert "general-purpose" not in text  # a finished one: in --json only
    assert text.endswith("tokens 5,000 (0) / 400, cost $0.0140 (estimate)")  # not counted twice

    report = json.loads(swarm("status", "--json").stdout)
    (listed,) = [m for m in report["members"] if m["name"] == "alice"]
    by_id = {s["agent_id"]: s for s in listed["subagents"]}
    assert set(by_id) == {"a1111111111111111", "a2222222222222222", "a3333333333333333"}
    assert by_id["a1111111111111111"]["activity"] == "Grep config"
    assert by_id["a1111111111111111"]["usage"] == EXPLORE_USAGE
    assert by_id["a1111111111111111"]["label"] == f"alice {MARK} Explore"
    assert by_id["a3333333333333333"]["state"] == "completed"
    assert by_id["a2222222222222222"]["name"] == "rev\x1b[31m"
    assert "\x1b" not in swarm("status", "--json").stdout  # escaped JSON
    assert report["usage"] == ALICE_USAGE


def style_of(view_frame: object, label: str) -> str:
    """The style the frame gives `label` in the line that starts with it (the members' rows)."""
    for line in view_frame.renderables:  # type: ignore[attr-defined]
        if isinstance(line, Text) and line.plain.lstrip().startswith(label):
            start = line.plain.index(label)
            return " ".join(
                str(span.style) for span in line.spans if span.start <= start < span.end
            )
    raise AssertionError(f"no line starts with {label!r}")


def test_watch_shows_running_sub_agents_in_their_colour(team: TeamFile, paths: TeamPaths) -> None:
    write_alice(paths)
    shown = frame(snapshot(paths), 240, bottom="")
    console = Console(record=True, width=240, color_system=None)
    console.print(shown)
    text = console.export_text()
    assert f"alice {MARK} Explore" in text and "Grep config" in text
    assert f"alice {MARK} rev\\x1b[31m" in text and "\x1b" not in text
    assert "general-purpose" not in text
    assert style_of(shown, f"alice {MARK} rev") == "green"
    assert style_of(shown, f"alice {MARK} Explore") == ""


def ask(paths: TeamPaths, request_id: str, sender: str, description: str) -> None:
    request = PermissionRequest(
        request_id=request_id,
        agent_id=sender,
        tool_name="Bash",
        tool_use_id=f"toolu-{request_id}",
        description=description,
        input={"command": "make test"},
    )
    Mailbox(paths).send("team-lead", request, sender=sender)


def test_a_sub_agents_ask_is_labelled_but_stays_its_members(
    team: TeamFile, paths: TeamPaths
) -> None:
    ask(paths, "perm-1", "alice", f"alice {MARK} reviewer: Run the tests")
    ask(paths, "perm-2", "alice", f"bob {MARK} reviewer: Run the tests")  # not alice's label
    ask(paths, "perm-3", "bob", "Run the tests")
    ask(paths, "perm-4", "bob", f"bob {MARK} x\x1b[2J: make test")
    first, spoofed, plain, hostile = pending_requests(paths)
    assert (first.teammate, first.agent, first.asked) == (
        "alice",
        f"alice {MARK} reviewer",
        "Run the tests",
    )
    assert spoofed.teammate == "alice" and spoofed.agent is None
    assert spoofed.asked == f"bob {MARK} reviewer: Run the tests"  # left as it is
    assert plain.agent is None and plain.asker == "bob"
    assert details(first) == ["the teammate's description (unverified): Run the tests"]
    assert details(hostile) == []  # the rest is the command itself

    listed = json.loads(swarm("permissions", "--json").stdout)
    assert [(p["teammate"], p["agent"], p["description"]) for p in listed] == [
        ("alice", f"alice {MARK} reviewer", "Run the tests"),
        ("alice", None, f"bob {MARK} reviewer: Run the tests"),
        ("bob", None, "Run the tests"),
        ("bob", f"bob {MARK} x\x1b[2J", "make test"),
    ]
    table = swarm("permissions").stdout
    assert f"perm-1  permission_request          alice {MARK} reviewer " in table
    assert f"bob {MARK} x\\x1b[2J" in table and "\x1b" not in table

    view = snapshot(paths)
    assert [r.agent for r in view.requests] == [
        f"alice {MARK} reviewer",
        None,
        None,
        f"bob {MARK} x\x1b[2J",
    ]
    assert f"perm-1  alice {MARK} reviewer  Bash: make test" in render(view)
    shown = Console(record=True, width=200, color_system=None)
    shown.print(frame(view, 200, bottom=""))
    assert f"alice {MARK} reviewer" in shown.export_text()

    # the lead: the event is the member's, its text names the sub-agent
    events = [e for e in Leader(paths).events() if e.kind == "request"]
    assert [e.member for e in events] == ["alice", "alice", "bob", "bob"]
    assert events[0].text.startswith(f"asks for alice {MARK} reviewer: Bash: make test [perm-1]")
    assert events[1].text.startswith("asks: Bash: make test [perm-2]")
    assert "\x1b" not in events[3].text


def test_a_member_without_a_status_file_or_sub_agents(team: TeamFile, paths: TeamPaths) -> None:
    write_status(paths, AgentStatus(name="bob", model="claude-sonnet-5-5"))
    view = snapshot(paths)
    assert all(m.subagents == [] for m in view.members)
    assert to_json(view)["members"][0]["subagents"] == []
