"""Sub-agents in one process with a scripted model: what a sub-agent may do is never more than
its parent may (mode, and the directory its rules are about, even when given another cwd)."""

from __future__ import annotations

from pathlib import Path

from messages_api import Turn

from teammate.agent.subagents import Parent, SubAgents, narrower
from teammate.api.model import ScriptedModel
from teammate.brains.claude import WORK_TOOLS
from teammate.config.definitions import load_agent
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolContext


def test_a_sub_agent_mode_is_the_narrower_of_its_own_and_its_parents() -> None:
    assert narrower("acceptEdits", "default") == "default"
    assert narrower("bypassPermissions", "acceptEdits") == "acceptEdits"
    assert narrower("plan", "bypassPermissions") == "plan"
    assert narrower("bubble", "acceptEdits") == "acceptEdits"  # the parent's own mode
    assert narrower("bubble", "plan") == "plan"


def test_another_cwd_does_not_widen_what_a_sub_agent_may_edit(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    model = ScriptedModel(
        [
            Turn.tool("Write", {"file_path": str(elsewhere / "x.txt"), "content": "no"}),
            Turn.tool("Write", {"file_path": str(project / "y.txt"), "content": "yes"}),
            Turn.text("done"),
        ]
    )
    policy = PermissionPolicy("acceptEdits", project)
    parent = Parent(
        name="alice",
        model=model,
        tools=list(WORK_TOOLS),
        policy=policy,
        ctx=ToolContext(cwd=project),
        agents=lambda kind: load_agent(kind, project_dir=project),
        directory=None,
    )
    answer = SubAgents(parent).launch(
        AgentCall("write two files", "go", cwd=str(elsewhere)), "toolu_1"
    )
    assert answer.startswith("done")
    assert not (elsewhere / "x.txt").exists()  # outside the parent's project: it had to ask
    assert (project / "y.txt").read_text() == "yes"
    refused = model.requests[1].messages[-1]["content"][0]
    assert refused["is_error"] and "no team to ask" in refused["content"]
