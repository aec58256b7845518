"""`swarm up --resume` in-process, with the stub backend: a dead Claude member comes back with its
conversation and keeps its task, a member the team lost is spawned from the file, a live one is
left alone, and the tasks on the board are not added again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.team.members import member_spec
from swarm.team.resume import RESUME_PROMPT
from swarm.up.apply import plan_up
from swarm.up.resume import resume_up
from swarm.up.spec import load_team_file
from teammate.options import MemberSpec

TEAM_FILE = """\
team: t
members:
  - {name: bea, prompt: Review the code., model: sonnet}
  - {name: sam, prompt: Work the board.}
tasks:
  - {subject: review, owner: bea}
  - {subject: build, command: make}
"""


def write_conversation(paths: TeamPaths, name: str) -> None:
    events = [
        {"kind": "session", "resumed": False, "pid": 1},
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": "review"}]},
        {"kind": "message", "role": "assistant", "content": [{"type": "text", "text": "on it"}]},
    ]
    path = paths.transcript(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_a_dead_claude_member_resumes_with_its_task_and_a_lost_one_is_spawned(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    source = tmp_path / "team.yaml"
    source.write_text(TEAM_FILE)
    plan = plan_up(load_team_file(source), backend="stub")
    paths = TeamPaths(config_root, "t")
    team = TeamFile(paths)
    team.create(cwd=tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    spec = MemberSpec(model="sonnet", backend="stub", cwd=str(tmp_path))
    team.add_member("bea", cwd=tmp_path, prompt="Review the code.", swarmSpec=spec.to_value())
    team.update_member("bea", pid=dead.pid)
    write_conversation(paths, "bea")
    board = TaskBoard(paths)
    review = board.create("review", owner="bea")
    board.claim(review.id, "bea")

    said: list[str] = []
    resumed = resume_up(plan, say=said.append)
    assert [(m.name, m.outcome, m.held) for m in resumed.members] == [
        ("bea", "resumed", ["1"]),
        ("sam", "spawned", []),
    ]
    assert [(t.id, t.subject, t.created) for t in resumed.tasks] == [
        ("1", "review", False),
        ("2", "build", True),
    ]
    assert said[0] == "task #1: review (on the board already: in_progress)"
    bea = team.load().require("bea")
    assert member_spec(bea) is not None and member_spec(bea).resume  # type: ignore[union-attr]
    assert board.require("1").owner == "bea" and board.require("1").status == "in_progress"
    assert Mailbox(paths).read_unread("bea")[-1].text == RESUME_PROMPT

    again = resume_up(plan)  # stub members have no process: starting, so left alone
    assert [m.outcome for m in again.members] == ["running", "running"]
    assert [t.created for t in again.tasks] == [False, False]
    assert len(board.list()) == 2
