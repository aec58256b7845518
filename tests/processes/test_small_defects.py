"""The smaller defects of issue 13, item 19, each with the real command or process that showed it.

A typo in ``swarm lead --team`` creates nothing; a read-only config root gives one line, not a
traceback; ``swarm shutdown`` names the tasks a teammate returned itself; a teammate in a
worktree finds its project's uncommitted agent definition; unknown keys in a definition are
warned about with file, line and key; invalid task files cost no waiting; a broadcast reaches
every valid member when one member's name is unusable.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import LeadSession, Processes, commit_all, init_repo, swarm, teammate_argv, wait_for

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks import files as tasks_module
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.team import approvals as requests_mod
from teammate.config.definitions import parse_agent_text


def test_lead_with_a_misspelt_team_creates_nothing(config_root: Path, tmp_path: Path) -> None:
    assert swarm("team", "create", "shop", team=None).returncode == 0
    result = subprocess.run(
        [sys.executable, "-m", "swarm", "lead", "--team", "shpo"],
        input="/quit\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "team 'shpo' not found" in result.stderr and "--create" in result.stderr
    assert not (config_root / "teams" / "shpo").exists()
    assert sorted(p.name for p in (config_root / "teams").iterdir()) == ["shop"]


def test_a_read_only_config_root_gives_one_line(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        env = {"CLAUDE_CONFIG_DIR": str(mount)}
        assert swarm("team", "create", "t", team=None, env=env).returncode == 0
        TeamFile(TeamPaths(mount, "t")).add_member("alice", cwd=tmp_path)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        for args in (("send", "alice", "hi"), ("task", "add", "x"), ("team", "create", "u")):
            result = swarm(*args, env=env, team=None if args[0] == "team" else "t")
            assert result.returncode == 1, result.stdout
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and "Read-only file system" in lines[0], result.stderr
            assert "CLAUDE_CONFIG_DIR" in lines[0]
        assert swarm("status", env=env).returncode == 0  # reading still works
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def test_shutdown_names_the_tasks_the_teammate_returned_itself(
    team: TeamFile, tmp_path: Path
) -> None:
    paths = team.paths
    processes = Processes(tmp_path)
    try:
        processes.start(teammate_argv("alice", "--ask", "*"))  # holds #1 while it asks
        TaskBoard(paths).create("held", metadata={"command": "true"})
        wait_for(lambda: requests_mod.pending_requests(paths), "alice to ask about #1")
        assert TaskBoard(paths).require("1").owner == "alice"
        result = swarm("shutdown", "alice")
        assert result.returncode == 0, result.stderr
        assert "approved" in result.stdout
        assert "tasks returned to pending: #1" in result.stdout, result.stdout
    finally:
        processes.close()


def test_a_worktree_teammate_finds_an_uncommitted_project_agent(
    config_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = init_repo(tmp_path / "repo")
    (repo / "README").write_text("x\n")
    commit_all(repo, "first")
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\n---\nYou review code.\n"
    )  # not committed: the worktree, made from HEAD, does not have it
    script = tmp_path / "turns.yaml"
    script.write_text("- text: I review.\n")
    assert swarm("team", "create", "t", "--cwd", str(repo), team=None).returncode == 0
    result = swarm(
        "spawn", "rita", "-p", "Review.", "--worktree", "--agent-type", "reviewer",
        "--script", str(script), "--backend", "subprocess", "--cwd", str(repo),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    member = TeamFile(TeamPaths(config_root, "t")).load().member("rita")
    assert member is not None and member.worktreePath
    assert not (Path(member.worktreePath) / ".claude" / "agents" / "reviewer.md").exists()
    states = {
        m["name"]: m["state"] for m in json.loads(swarm("status", "--json").stdout)["members"]
    }
    assert states["rita"] in ("idle", "working")
    assert swarm("shutdown", "rita").returncode == 0


def test_unknown_keys_in_an_agent_definition_are_warned_about(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, team: TeamFile
) -> None:
    text = "---\nname: odd\ndescription: x\ncolour: red\nmemory: user\n---\nPrompt.\n"
    path = tmp_path / "odd.md"
    with caplog.at_level(logging.WARNING):
        parse_agent_text(text, path)
    warnings = [r.getMessage() for r in caplog.records]
    assert any(f"{path}:4: unknown key 'colour'" in w for w in warnings), warnings
    assert not any("'memory'" in w for w in warnings), warnings  # acted on: agent memory
    # and a teammate using it says so where its output goes
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "odd.md").write_text(text)
    script = tmp_path / "turns.yaml"
    script.write_text("- text: hi\n")
    proc = subprocess.Popen(
        teammate_argv("alice", "--agent-type", "odd", "--script", str(script), model="scripted"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: (team.paths.agent_status("alice")).exists(), "alice to start")
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=30)
    assert "unknown key 'colour'" in output and "odd.md:4" in output, output


def test_invalid_task_files_cost_no_waiting(
    team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a task file that does not parse *and* was just written is re-read (Claude Code may
    be half way through writing it); old invalid files are skipped at once, every time."""
    paths = team.paths
    board = TaskBoard(paths)
    board.create("good")
    old = time.time() - 60
    for n, text in enumerate(['{"id": "7", "subject": 3}', "{ broken", '["not a task"]'], 7):
        path = paths.tasks_dir / f"{n}.json"
        path.write_text(text)
        os.utime(path, (old, old))
    sleeps: list[float] = []
    monkeypatch.setattr(tasks_module.time, "sleep", sleeps.append)
    assert [t.id for t in TaskBoard(paths).list()] == ["1"]
    assert sleeps == []
    (paths.tasks_dir / "10.json").write_text("{ half writ")  # fresh: waited out, briefly
    assert [t.id for t in TaskBoard(paths).list()] == ["1"]
    assert sleeps  # the fresh one was given its moment


def test_a_broadcast_reaches_every_member_when_one_name_is_unusable(team: TeamFile) -> None:
    paths = team.paths
    config = json.loads(paths.config.read_text())
    config["members"].append(
        {**config["members"][1], "name": "../evil", "agentId": "../evil@t", "joinedAt": 1}
    )
    paths.config.write_text(json.dumps(config, indent=2))
    result = swarm("send", "*", "hello all")
    assert result.returncode == 0, result.stderr
    assert "skipped '../evil'" in result.stderr
    mailbox = Mailbox(paths)
    for name in ("alice", "bob", "carol"):
        assert [e.text for e in mailbox.read_all(name)] == ["hello all"]


def test_swarm_lead_reports_a_broken_team_file_and_lives(team: TeamFile, tmp_path: Path) -> None:
    paths = team.paths
    lead = LeadSession(None, tmp_path)
    try:
        lead.expect("leading team 't'")
        good = paths.config.read_bytes()
        paths.config.write_text("{ not json")
        lead.expect("cannot read the team's files right now")
        paths.config.write_bytes(good)
        lead.type("/status")
        lead.expect("team t · 4 members")  # as `swarm watch --once` draws it
        assert lead.quit() == 0
    finally:
        lead.close()
