"""Teammates in their own git worktrees, through the `swarm` command with real processes and
real git repositories: two teammates edit the same file without interfering, an unchanged
worktree vanishes when its teammate stops, a changed one survives with its branch and the lead
is told, tasks bound to a worktree, file tools kept inside, and review/merge/remove."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import commit_all, git, init_repo, swarm, wait_for

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import NewTask, TaskBoard
from protocols.team.file import TeamFile


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


@pytest.fixture
def repo(tmp_path: Path, config_root: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    (root / "shared.txt").write_text("original\n")
    commit_all(root, "first")
    assert swarm("team", "create", "t", "--cwd", str(root), team=None).returncode == 0
    return root.resolve()


def spawn(name: str, repo: Path, *extra: str) -> None:
    result = swarm(
        "spawn",
        name,
        "-p",
        "Work the board.",
        "--backend",
        "subprocess",
        "--cwd",
        str(repo),
        *extra,
    )
    assert result.returncode == 0, result.stderr


def lead_texts(paths: TeamPaths) -> list[str]:
    mailbox = Mailbox(paths)
    return [e.text for e in mailbox.peek_all("team-lead")]


def test_two_teammates_edit_one_file_in_their_own_worktrees(repo: Path, paths: TeamPaths) -> None:
    spawn("alice", repo, "--worktree")
    spawn("bob", repo, "--worktree")
    board = TaskBoard(paths)
    # each task has its owner from the moment it exists: no idle teammate can take the other's
    board.create_many(
        [
            NewTask(f"{name} edits", metadata={"command": f"echo {name} > shared.txt"}, owner=name)
            for name in ("alice", "bob")
        ]
    )
    wait_for(lambda: all(t.status == "completed" for t in board.list()), "both edits")
    trees = repo / ".claude" / "worktrees"
    assert (trees / "alice" / "shared.txt").read_text() == "alice\n"
    assert (trees / "bob" / "shared.txt").read_text() == "bob\n"
    assert (repo / "shared.txt").read_text() == "original\n"
    member = TeamFile(paths).load().member("alice")
    assert member is not None and member.worktreePath == str(trees / "alice")
    # both stop: the changed worktrees stay, with their branches, and the lead hears where
    for name in ("alice", "bob"):
        assert swarm("shutdown", name).returncode == 0
    assert (trees / "alice").is_dir() and (trees / "bob").is_dir()
    assert {"worktree-alice", "worktree-bob"} <= set(
        git(repo, "branch", "--format=%(refname:short)").split()
    )
    kept = [t for t in lead_texts(paths) if "worktree kept" in t]
    assert len(kept) == 2 and any(str(trees / "alice") in t and "worktree-alice" in t for t in kept)
    listed = swarm("worktree", "list", "--repo", str(repo))
    assert "alice" in listed.stdout and "worktree-bob" in listed.stdout
    shown = swarm("worktree", "diff", "alice", "--repo", str(repo))
    assert "+alice" in shown.stdout
    # alice's change is committed in her worktree and merged; bob's then conflicts
    git(trees / "alice", "commit", "-qam", "alice's edit")
    merged = swarm("worktree", "merge", "alice", "--repo", str(repo))
    assert merged.returncode == 0, merged.stderr
    assert (repo / "shared.txt").read_text() == "alice\n"
    git(trees / "bob", "commit", "-qam", "bob's edit")
    conflict = swarm("worktree", "merge", "bob", "--repo", str(repo))
    assert conflict.returncode == 1 and "shared.txt" in conflict.stderr
    assert "Traceback" not in conflict.stderr
    assert (repo / "shared.txt").read_text() == "alice\n"
    removed = swarm("worktree", "remove", "alice", "--repo", str(repo))
    assert removed.returncode == 0, removed.stderr  # merged: nothing would be lost
    assert not (trees / "alice").exists()
    refused = swarm("worktree", "remove", "bob", "--repo", str(repo))  # its commit is unmerged
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert swarm("worktree", "remove", "bob", "--force", "--repo", str(repo)).returncode == 0
    assert not (trees / "bob").exists()


def test_an_unchanged_worktree_vanishes_when_its_teammate_stops(repo: Path) -> None:
    spawn("carol", repo, "--worktree")
    trees = repo / ".claude" / "worktrees"
    assert (trees / "carol").is_dir()
    assert swarm("shutdown", "carol").returncode == 0
    assert not (trees / "carol").exists()
    assert "worktree-carol" not in git(repo, "branch", "--format=%(refname:short)")


def test_a_task_bound_to_a_worktree_is_worked_there(repo: Path, paths: TeamPaths) -> None:
    added = swarm(
        "task",
        "add",
        "feature",
        "--command",
        "echo feature > new.txt",
        "--worktree",
        "user/feature",
    )
    assert added.returncode == 0, added.stderr
    spawn("dave", repo)  # not isolated itself
    board = TaskBoard(paths)
    wait_for(lambda: board.require("1").status == "completed", "the task")
    tree = repo / ".claude" / "worktrees" / "user+feature"
    assert (tree / "new.txt").read_text() == "feature\n"
    assert not (repo / "new.txt").exists()
    wait_for(
        lambda: any("worktree kept" in t and str(tree) in t for t in lead_texts(paths)),
        "the report",
    )
    assert swarm("shutdown", "dave").returncode == 0


def test_bad_worktree_names_and_places_are_refused_with_the_rule(
    repo: Path, tmp_path: Path, paths: TeamPaths
) -> None:
    bad = swarm("task", "add", "x", "--worktree", "../escape")
    assert bad.returncode == 1 and "at most 64 characters" in bad.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = swarm(
        "spawn", "erin", "-p", "hi", "--backend", "subprocess", "--cwd", str(plain), "--worktree"
    )
    assert outside.returncode == 1 and "not inside a git repository" in outside.stderr
    assert TeamFile(paths).load().member("erin") is None
    empty = init_repo(tmp_path / "empty")
    none = swarm(
        "spawn", "erin", "-p", "hi", "--backend", "subprocess", "--cwd", str(empty), "--worktree"
    )
    assert none.returncode == 1 and "no commits yet" in none.stderr


def test_a_claude_teammate_in_a_worktree_keeps_its_file_tools_inside(
    repo: Path, paths: TeamPaths, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for you\n")
    script = tmp_path / "turns.yaml"
    script.write_text(
        f"- tool: Read\n  input: {{file_path: {secret}}}\n"
        "- tool: Write\n  input: {file_path: inside.txt, content: ok}\n"
        "- tool: SendMessage\n  input: {to: team-lead, message: tried both, summary: done}\n"
        "- text: Done.\n"
    )
    spawn("fay", repo, "--worktree", "--script", str(script), "--permission-mode", "acceptEdits")
    wait_for(lambda: "tried both" in lead_texts(paths), "fay to finish")
    tree = repo / ".claude" / "worktrees" / "fay"
    assert (tree / "inside.txt").read_text() == "ok"
    events = [
        line for line in paths.transcript("fay").read_text().splitlines() if '"tool_result"' in line
    ]
    assert "outside this teammate's worktree" in events[0] and '"is_error": true' in events[0]
    assert swarm("shutdown", "fay").returncode == 0
