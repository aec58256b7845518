"""Fork and worktree isolation for sub-agents, in a real Claude teammate process through the real
`anthropic` SDK and the test suite's Messages API server.

With ``SWARM_FORK_SUBAGENT=1`` an Agent call without ``subagent_type`` forks the teammate: three
children forked in one turn send requests that are byte-identical except for their directives
(asserted on the bytes the server received), with the parent's system prompt, tools and model;
each answers in the fork format and notifies the parent once; a child that tries to fork again
is refused. Without the setting the same call runs a general-purpose sub-agent. A sub-agent with
``isolation: worktree`` works in its own git worktree: kept with its branch when it commits a
change, removed when it changed nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEADLINE_S, Processes, commit_all, git, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn
from reaper import VARIABLE as REAPER_VARIABLE

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.team.file import TeamFile
from teammate.agent.fork import PLACEHOLDER

Start = Callable[..., subprocess.Popen[str]]
TAG = "<forked-worker>"


@pytest.fixture
def start(team: TeamFile, workdir: Path) -> Iterator[Start]:
    processes = Processes(workdir)

    def launch(api: MessagesAPI, fork: bool, *extra: str) -> subprocess.Popen[str]:
        environ = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "SWARM_")) or k == REAPER_VARIABLE
        }
        environ.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        if fork:
            environ["SWARM_FORK_SUBAGENT"] = "1"
        argv = teammate_argv("alice", "--permission-mode", "acceptEdits", *extra, model="sonnet")
        return processes.start(argv, environ)

    yield launch
    processes.close()


def is_child(body: dict[str, Any]) -> bool:
    return TAG in json.dumps(body["messages"], ensure_ascii=False)


def last_user_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"][-1]["content"], ensure_ascii=False)


def results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def notifications(bodies: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for body in bodies:
        found += re.findall(r"<task-notification>.*?</task-notification>", last_user_text(body))
    return found


def run_alice(
    team: TeamFile, start: Start, api: MessagesAPI, fork: bool, until: Any, *extra: str
) -> str:
    proc = start(api, fork, *extra)
    Mailbox(team.paths).send("alice", "Split the work.", sender="team-lead", summary="job")
    wait_for(until, "alice's sub-agents to finish")
    request = ShutdownRequest(
        requestId="shutdown-1@alice", from_="team-lead", timestamp="2100-01-01T00:00:00.000Z"
    )
    Mailbox(team.paths).send("alice", request, sender="team-lead")
    output, _ = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 0, output
    return output


FORK_CALLS = [
    ("Agent", {"description": f"part {part}", "prompt": f"DIRECTIVE-{part}"}) for part in "ABC"
]


def answer(part: str) -> str:
    return (
        f"Scope: part {part}\nResult: child {part} done\nKey files: none\n"
        "Files changed: none\nIssues: none"
    )


def test_three_forked_children_share_the_bytes_of_their_parents_conversation(
    team: TeamFile, start: Start
) -> None:
    alice: list[dict[str, Any]] = []

    def child(body: dict[str, Any]) -> Turn:
        part = re.findall(r"DIRECTIVE-([ABC])", last_user_text(body) + json.dumps(body))[0]
        said = sum(m["role"] == "assistant" for m in body["messages"][2:])
        if part == "A" and said == 0:  # a fork inside a fork: refused, it goes on itself
            return Turn.tool("Agent", {"description": "grandchild", "prompt": "DEEPER"})
        return Turn.text(answer(part))

    def parent(body: dict[str, Any]) -> Turn:
        alice.append(body)
        if len(alice) == 1:
            return Turn.tools(list(FORK_CALLS), text="Forking three workers.")
        return Turn.text(f"turn {len(alice)}")

    def play(body: dict[str, Any]) -> Turn:
        return child(body) if is_child(body) else parent(body)

    with MessagesAPI(play, concurrent=True) as api:
        run_alice(team, start, api, True, lambda: len(notifications(alice)) == 3)
        raw = list(api.raw_bodies)
        bodies = list(api.requests)

    # each child's first request, as bytes: equal once its directive is blanked out
    firsts = {}
    for data in raw:
        text = data.decode()
        for part in "ABC":
            if f"Directive: DIRECTIVE-{part}" in text and part not in firsts:
                firsts[part] = data
    assert sorted(firsts) == ["A", "B", "C"]
    # (the forking turn's tool uses name every directive: only the child's own is blanked)
    blanked = {firsts[p].replace(f"Directive: DIRECTIVE-{p}".encode(), b"?") for p in "ABC"}
    assert len(blanked) == 1, "the children's requests differ beyond their directives"
    first_child = json.loads(firsts["A"])
    # the parent's own request before forking: same system prompt, tools and model
    assert first_child["system"] == alice[0]["system"]
    assert first_child["tools"] == alice[0]["tools"]
    assert first_child["model"] == alice[0]["model"] == "claude-sonnet-5-5"
    history, forking, answers = first_child["messages"]
    assert history["content"][0]["text"] == alice[0]["messages"][0]["content"][0]["text"]
    uses = [b["id"] for b in forking["content"] if b["type"] == "tool_use"]
    assert len(uses) == 3
    placeholders = [b for b in answers["content"] if b["type"] == "tool_result"]
    assert [b["tool_use_id"] for b in placeholders] == uses
    assert {b["content"] for b in placeholders} == {PLACEHOLDER}
    directive = answers["content"][-1]["text"]
    assert directive.startswith(TAG) and "DIRECTIVE-A" in directive
    for form in ("Scope:", "Result:", "Key files:", "Files changed:", "Issues:"):
        assert form in directive
    # the fork inside the fork was refused, as an error to that child's model
    (second_of_a,) = [
        b for b in bodies if "Directive: DIRECTIVE-A" in json.dumps(b) and len(b["messages"]) > 3
    ]
    (refusal,) = results_of(second_of_a)
    assert refusal.get("is_error") and "forked worker" in refusal["content"]
    assert not [b for b in bodies if "DEEPER" in last_user_text(b) and TAG in last_user_text(b)]
    # the parent: launched at once, then one notification per child, each in the fork format
    launched = [r["content"] for r in results_of(alice[1])]
    assert all("Async agent launched" in text for text in launched) and len(launched) == 3
    told = notifications(alice)
    for part in "ABC":
        (mine,) = [n for n in told if f"Result: child {part} done" in n]
        assert "<status>completed</status>" in mine and f"part {part}" in mine


def test_without_the_setting_an_agent_call_with_no_type_is_a_general_purpose_sub_agent(
    team: TeamFile, start: Start
) -> None:
    alice: list[dict[str, Any]] = []
    children: list[dict[str, Any]] = []

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in json.dumps(body.get("system")):
            children.append(body)
            return Turn.text("general answer")
        alice.append(body)
        if len(alice) == 1:
            return Turn.tool("Agent", {"description": "one part", "prompt": "DIRECTIVE-A"})
        return Turn.text("done")

    with MessagesAPI(play) as api:
        run_alice(team, start, api, False, lambda: len(alice) >= 2)
    assert len(children) == 1 and not is_child(children[0])
    assert "general answer" in results_of(alice[1])[0]["content"]


@pytest.fixture
def repo(workdir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    git(workdir, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Test"), ("user.email", "t@example.com")):
        git(workdir, "config", key, value)
    (workdir / "shared.txt").write_text("original\n")
    commit_all(workdir, "first")
    return workdir.resolve()


def test_a_sub_agent_in_its_own_worktree_keeps_a_changed_one_and_drops_an_unchanged_one(
    team: TeamFile, start: Start, repo: Path
) -> None:
    alice: list[dict[str, Any]] = []
    seen: dict[str, list[dict[str, Any]]] = {"EDIT": [], "LOOK": []}

    def sub_agent(body: dict[str, Any]) -> Turn:
        job = "EDIT" if "JOB-EDIT" in json.dumps(body["messages"][0]) else "LOOK"
        seen[job].append(body)
        step = len(seen[job])
        cwd = re.findall(r"Working directory: (\S+)", body["system"][0]["text"])[0]
        if job == "LOOK":
            return Turn.tool("Read", {"file_path": "shared.txt"}) if step == 1 else Turn.text("ok")
        if step == 1:
            return Turn.tool("Write", {"file_path": f"{cwd}/shared.txt", "content": "changed\n"})
        if step == 2:
            command = "git add -A && git commit -q -m 'sub-agent change'"
            return Turn.tool("Bash", {"command": command})
        return Turn.text("committed")

    def parent(body: dict[str, Any]) -> Turn:
        alice.append(body)
        if len(alice) == 1:
            calls = [
                ("Agent", {"description": "edit", "prompt": "JOB-EDIT", "isolation": "worktree"}),
                ("Agent", {"description": "look", "prompt": "JOB-LOOK", "isolation": "worktree"}),
                ("Agent", {"description": "bad", "prompt": "x", "isolation": "worktree", "cwd": "."}),
            ]  # fmt: skip
            return Turn.tools(calls)
        return Turn.text("done")

    def play(body: dict[str, Any]) -> Turn:
        if "You are a sub-agent" in json.dumps(body.get("system")):
            return sub_agent(body)
        return parent(body)

    settings = repo.parent / "settings.json"
    allow = ["Bash(git add:*)", "Bash(git commit:*)"]
    settings.write_text(json.dumps({"permissions": {"allow": allow}}))
    with MessagesAPI(play) as api:
        run_alice(team, start, api, False, lambda: len(alice) >= 2, "--settings", str(settings))
    edited, looked, both = results_of(alice[1])
    kept = re.findall(r"worktree kept: (\S+) \(branch (\S+)\)", edited["content"])
    assert kept, edited["content"]
    path, branch = kept[0]
    assert Path(path).is_dir() and Path(path).parent == repo / ".claude" / "worktrees"
    assert (Path(path) / "shared.txt").read_text() == "changed\n"
    assert (repo / "shared.txt").read_text() == "original\n"  # the checkout never saw it
    assert "sub-agent change" in git(repo, "log", "--oneline", branch)
    assert "worktree" not in looked["content"]  # unchanged: removed, nothing to say
    assert [p.name for p in (repo / ".claude" / "worktrees").iterdir()] == [Path(path).name]
    assert both.get("is_error") and "not both" in both["content"]
    assert "Working directory: " + path in json.dumps(seen["EDIT"][0]["system"])
