"""Shell completion as a person installs it: bash sources the line docs/cli.md gives, then its
completion function is called as bash calls it on TAB; commands, teams, members and waiting
request ids come back, read from the team's files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import PermissionRequest
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

SWARM_BIN = Path(sys.executable).parent


def completions(words: str, config_root: Path, team_env: str | None = None) -> list[str]:
    """What bash offers after `words` (a trailing space: a new word), via `_swarm_completion`."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    script = (
        'eval "$(_SWARM_COMPLETE=bash_source swarm)"\n'
        f"read -r -a COMP_WORDS <<< {words!r}\n"
        + ('COMP_WORDS+=("")\n' if words.endswith(" ") else "")
        + f"COMP_CWORD={cword}\n"
        "_swarm_completion swarm\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_root), "HOME": str(config_root)}
    env["PATH"] = f"{SWARM_BIN}:{env['PATH']}"
    env.pop("SWARM_TEAM", None)
    if team_env:
        env["SWARM_TEAM"] = team_env
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def demo(config_root: Path) -> TeamFile:
    team = TeamFile(TeamPaths(config_root, "demo"))
    team.create()
    team.add_member("alice", agent_type="worker")
    team.add_member("albert", agent_type="worker")
    TeamFile(TeamPaths(config_root, "other")).create()
    return team


def test_commands_teams_and_members_complete(demo: TeamFile, config_root: Path) -> None:
    assert completions("swarm stat", config_root) == ["status"]
    assert completions("swarm send --team d", config_root) == ["demo"]
    assert completions("swarm send --team demo al", config_root) == ["alice", "albert"]
    assert sorted(completions("swarm inbox ", config_root, team_env="demo")) == [
        "albert",
        "alice",
        "team-lead",
    ]
    assert completions("swarm task add x --owner alb", config_root, "demo") == ["albert"]
    # no team given anywhere: members complete to nothing, and nothing fails
    assert completions("swarm inbox ", config_root) == []


def test_waiting_request_ids_complete(demo: TeamFile, config_root: Path) -> None:
    ask = PermissionRequest(
        request_id="perm-1-abcdefg",
        agent_id="alice",
        tool_name="Bash",
        tool_use_id="t1",
        description="list",
        input={"command": "ls"},
    )
    Mailbox(demo.paths).send("team-lead", ask, sender="alice")
    assert completions("swarm approve perm", config_root, "demo") == ["perm-1-abcdefg"]
