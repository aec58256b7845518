"""The smaller frictions of issue 38 (item 12), each through the real `swarm` command: what
`swarm reap` says it returned, a send to a member that was shut down, every problem of a team
file in one pass, a restart that keeps the colour, a config root that is a file, `swarm
--version` without the heavy imports, and no files the examples leave untracked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import swarm

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import ShutdownRequest
from protocols.names import LEAD_NAME
from protocols.team.file import TeamFile

REPO = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_reap_names_the_tasks_it_returned_or_says_none(team: TeamFile) -> None:
    alice, bob = dead_pid(), dead_pid()
    team.update_member("alice", pid=alice, isActive=True)
    team.update_member("bob", pid=bob, isActive=True)
    assert swarm("task", "add", "held").returncode == 0
    assert swarm("task", "claim", "1", "--as", "alice").returncode == 0
    reaped = swarm("reap")
    assert reaped.returncode == 0, reaped.stderr
    lines = sorted(reaped.stdout.splitlines())
    assert lines == [
        f"reaped alice (pid {alice}); returned task #1 to the board",
        f"reaped bob (pid {bob}); returned no tasks",
    ]
    assert "returned -" not in reaped.stdout


def test_a_send_to_a_member_that_was_shut_down_says_so_and_when(
    config_root: Path, team: TeamFile
) -> None:
    # a shell worker that agrees to shut down: its shutdown_approved is in the lead's history
    assert swarm("spawn", "cal", "-p", "Work.", "--backend", "subprocess").returncode == 0
    assert swarm("shutdown", "cal", "--wait", "30").returncode == 0
    sent = swarm("send", "cal", "are you there?")
    assert sent.returncode == 1
    [line] = sent.stderr.splitlines()
    assert line.startswith(
        "swarm: error: 'cal' is no longer a member of team 't': it shut down at "
    )
    assert "ago), agreeing to the lead's request; `swarm spawn cal` starts it again" in line
    assert line.endswith("members are: team-lead, alice, bob, carol")

    # a dead member reaped: the lead's note about it
    team.update_member("alice", pid=dead_pid(), isActive=True)
    assert "reaped alice" in swarm("reap").stdout
    line = swarm("send", "alice", "hello").stderr
    assert "'alice' is no longer a member of team 't': it was removed at " in line
    assert "alice has stopped (pid " in line

    # stopped without an answer: only the lead's request in its own history says so
    Mailbox(team.paths).send(
        "bob",
        ShutdownRequest(
            requestId="shutdown-1@bob", from_=LEAD_NAME, timestamp="2026-01-05T14:03:12Z"
        ),
        sender=LEAD_NAME,
    )
    team.remove_member("bob")
    line = swarm("send", "bob", "hello").stderr
    assert "'bob' is no longer a member of team 't': it was asked to shut down at " in line
    assert re.search(r" UTC \(\d+[smh] ago\) and stopped; `swarm spawn bob` starts it", line)

    # a name that never was a member: the did-you-mean as before
    line = swarm("send", "carl", "hello").stderr
    assert "no member named 'carl'" in line and "did you mean 'carol'" in line
    assert "no longer" not in line


BAD_TEAM = """\
team: shop
members:
  - name: ann
    prompt: Work.
    modle: shell
  - name: ben
    prompt: 42
tasks:
  - subject: one
    owner: zed
  - subject: two
    blocked_by: [nope, 7]
    colour: red
  - subject: three
    key: k3
    blocked_by: [k4]
  - subject: four
    key: k4
    blocked_by: [k3]
    owner: ann
"""


def test_every_problem_of_a_team_file_is_reported_in_one_pass(tmp_path: Path) -> None:
    """Schema problems (an unknown key, a wrong type) and the references between members and
    tasks (an unknown owner, unknown blocked_by, a cycle) together, each with its line."""
    path = tmp_path / "team.yaml"
    path.write_text(BAD_TEAM)
    result = swarm("up", str(path), "--dry-run", team=None)
    assert result.returncode == 1
    lines = result.stderr.removeprefix("swarm: error: ").splitlines()
    where = [line.split(": ", 2)[:2] for line in lines]
    assert where == [
        [f"{path}:5", "members[0].modle"],
        [f"{path}:7", "members[1].prompt"],
        [f"{path}:10", "tasks[0].owner"],
        [f"{path}:12", "tasks[1].blocked_by[0]"],
        [f"{path}:12", "tasks[1].blocked_by[1]"],
        [f"{path}:13", "tasks[1].colour"],
        [f"{path}:16", "tasks[2].blocked_by"],
    ]
    assert "expected a member, got 'zed'" in lines[2]
    assert "unknown task 'nope'" in lines[3] and "unknown task 7" in lines[4]
    assert "dependency cycle: k3 waits for k4 waits for k3" in lines[6]

    # fixed as told: nothing new comes up
    fixed = BAD_TEAM.replace("    modle: shell\n", "").replace("prompt: 42", "prompt: Work.")
    fixed = fixed.replace("owner: zed", "owner: ben").replace("[nope, 7]", "[1]")
    fixed = fixed.replace("    colour: red\n", "").replace("blocked_by: [k4]", "blocked_by: [2]")
    path.write_text(fixed)
    result = swarm("up", str(path), "--dry-run", team=None)
    assert result.returncode == 0, result.stderr


def test_restart_keeps_the_members_colour(config_root: Path) -> None:
    assert swarm("team", "create", "t", team=None).returncode == 0
    started = {}
    for name in ("ann", "ben"):
        done = swarm("spawn", name, "-p", "Work.", "--backend", "subprocess", "--json")
        assert done.returncode == 0, done.stderr
        started[name] = json.loads(done.stdout)["color"]
    try:
        restarted = swarm("restart", "ann", "--json")
        assert restarted.returncode == 0, restarted.stderr
        assert json.loads(restarted.stdout)["color"] == started["ann"]
        roster = {
            m["name"]: m["color"] for m in json.loads(swarm("status", "--json").stdout)["members"]
        }
        assert roster["ann"] == started["ann"] and roster["ben"] == started["ben"]
    finally:
        for name in ("ann", "ben"):
            swarm("shutdown", name, "--force", "--wait", "5")


@pytest.mark.parametrize("below", [False, True], ids=["the root", "a folder above it"])
def test_a_config_root_that_is_a_file_is_said_plainly(tmp_path: Path, below: bool) -> None:
    file = tmp_path / "not-a-folder"
    file.write_text("")
    root = file / "claude" if below else file
    env = {"CLAUDE_CONFIG_DIR": str(root)}
    for argv in (
        ["team", "create", "x"],
        ["team", "list"],
        ["status", "-t", "x"],
        ["send", "a", "b", "-t", "x"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "swarm", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )
        assert result.returncode == 1, argv
        [line] = result.stderr.splitlines()
        said = (
            f"{file} is a file, so the config root {root} ($CLAUDE_CONFIG_DIR) cannot be made in it"
            if below
            else f"the config root {file} ($CLAUDE_CONFIG_DIR) is a file"
        )
        assert line.startswith(f"swarm: error: {said}; teams need a directory there"), line
        assert "Errno" not in line and "CLAUDE_CONFIG_DIR" in line
    doctor = swarm("doctor", "--json", team=None, env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    assert checks["config root"]["state"] == "fail"
    assert str(file) in checks["config root"]["found"]


def test_version_is_the_packages_and_loads_nothing_heavy() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    code = (
        "import sys\n"
        "sys.argv = ['swarm', '--version']\n"
        "from swarm.cli.quick import main\n"
        "code = main()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('click', 'importlib_metadata', 'pydantic', 'email')))\n"
        "print('metadata' if 'importlib.metadata' in sys.modules else 'no metadata')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    printed, loaded, metadata = done.stdout.splitlines()
    assert printed == f"swarm {pyproject['project']['version']}" == f"swarm {version('swarm')}"
    assert loaded == "[]" and metadata == "no metadata"
    # the click path (any other form) says the same
    assert swarm("--debug", "--version", team=None).stdout.strip() == printed


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_what_the_examples_write_where_they_are_is_ignored_by_git() -> None:
    """The shell pipeline writes out/ beside its team file, the scripted coders slugify.py and
    test_slugify.py; a scripted reviewer run from the repository writes REPORT.md."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    pipeline = (REPO / "examples" / "teams" / "shell-pipeline.yaml").read_text()
    assert "out/total.txt" in pipeline
    written = [
        "examples/teams/out/total.txt",
        "examples/teams/slugify.py",
        "examples/teams/test_slugify.py",
        "REPORT.md",
    ]
    done = subprocess.run(
        ["git", "-C", str(REPO), "check-ignore", "--no-index", *written],
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == written
