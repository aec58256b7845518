"""Git worktrees for isolating a teammate, against real git repositories in tmp_path: the name
rule, creating and reusing, links to the repository's ``.venv``, finishing an unchanged or a
changed worktree, diff, merge with and without conflicts, removal, and the clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import commit_all, git, init_repo
from hypothesis import given
from hypothesis import strategies as st

from teammate.agent.worktree import (
    NAME_RULE,
    Worktree,
    WorktreeError,
    create,
    diff,
    finish,
    flatten_slug,
    git_env,
    list_worktrees,
    merge,
    remove,
    repo_root,
    run_git,
    status,
)


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global or system git config, no repository found above tmp_path, no redirections."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    (root / "shared.txt").write_text("one\ntwo\nthree\n")
    commit_all(root, "first")
    return root.resolve()


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


# --- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "flat"),
    [
        ("feature", "feature"),
        ("user/feature", "user+feature"),
        ("a.b_c-1/x/Y", "a.b_c-1+x+Y"),
        ("x" * 64, "x" * 64),
    ],
)
def test_valid_names_are_flattened(slug: str, flat: str) -> None:
    assert flatten_slug(slug) == flat


@pytest.mark.parametrize(
    ("slug", "reason"),
    [
        ("", "empty"),
        ("/abs", "absolute"),
        ("a//b", "empty part"),
        ("a/", "empty part"),
        ("./a", "'.' part"),
        ("a/../b", "'..' part"),
        ("..", "'..' part"),
        ("a b", "not allowed"),
        ("a+b", "not allowed"),
        ("café", "not allowed"),
        ("x" * 65, "65 characters"),
        ("a/" * 32 + "a", "65 characters"),
        ("a..b", "branch name"),
        ("...", "branch name"),
        ("topic.lock", "branch name"),
        ("ends.", "branch name"),
    ],
)
def test_invalid_names_state_the_rule(slug: str, reason: str) -> None:
    with pytest.raises(WorktreeError) as caught:
        flatten_slug(slug)
    assert reason in str(caught.value)
    assert NAME_RULE in str(caught.value)
    assert "at most 64 characters" in NAME_RULE


@given(st.one_of(st.text(max_size=80), st.text(alphabet="ab./_-+ é", max_size=80)))
def test_flattened_names_are_always_safe(slug: str) -> None:
    try:
        flat = flatten_slug(slug)
    except WorktreeError as exc:
        assert NAME_RULE in str(exc)
    else:
        assert re.fullmatch(r"[a-zA-Z0-9._+-]{1,64}", flat)
        assert flat not in (".", "..") and "/" not in flat


# --- git runs and repository errors --------------------------------------------------------------


def test_git_never_prompts(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_ASKPASS", "/bin/false")
    monkeypatch.setenv("SSH_ASKPASS", "/bin/false")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    env = git_env()
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GCM_INTERACTIVE"] == "never"
    assert "GIT_ASKPASS" not in env and "SSH_ASKPASS" not in env
    assert git_env({"GIT_DIR": "/elsewhere", "PATH": "/bin"}) == {
        "PATH": "/bin",
        "GIT_TERMINAL_PROMPT": "0",
        "GCM_INTERACTIVE": "never",
        "GIT_MERGE_AUTOEDIT": "no",
    }
    # What a git child process really sees (a shell alias runs with git's environment).
    seen = run_git(["-c", "alias.showenv=!env", "showenv"], repo).stdout.splitlines()
    assert "GIT_TERMINAL_PROMPT=0" in seen
    assert not [line for line in seen if line.startswith(("GIT_ASKPASS=", "SSH_ASKPASS="))]


def test_a_failing_git_command_names_itself_and_what_git_said(repo: Path) -> None:
    with pytest.raises(WorktreeError, match=r"git rev-parse --verify nosuchref failed in .*"):
        run_git(["rev-parse", "--verify", "nosuchref"], repo)
    assert run_git(["rev-parse", "--verify", "nosuchref"], repo, check=False).returncode != 0


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorktreeError, match="is not inside a git repository; worktrees need one"):
        repo_root(plain)
    with pytest.raises(WorktreeError, match="is not inside a git repository"):
        create(plain, "x")


def test_repository_without_commits(tmp_path: Path) -> None:
    empty = init_repo(tmp_path / "empty")
    with pytest.raises(WorktreeError, match="has no commits yet; worktrees start from HEAD"):
        create(empty, "x")


def test_git_not_installed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin-here"))
    with pytest.raises(WorktreeError, match="git is not installed"):
        repo_root(repo)


def test_repo_root_from_a_subdirectory_and_from_inside_a_worktree(repo: Path) -> None:
    (repo / "sub").mkdir()
    assert repo_root(repo / "sub") == repo
    wt, _ = create(repo, "inner")
    assert repo_root(wt.path) == repo
    again, created = create(wt.path, "inner")
    assert (again, created) == (wt, False)


# --- create, reuse, links ------------------------------------------------------------------------


def test_two_worktrees_edit_the_same_file_independently(repo: Path) -> None:
    a, created_a = create(repo, "alice")
    b, created_b = create(repo, "team/bob")
    assert created_a and created_b
    assert a.path == repo / ".claude" / "worktrees" / "alice"
    assert b.path == repo / ".claude" / "worktrees" / "team+bob"
    assert (a.branch, b.branch) == ("worktree-alice", "worktree-team+bob")
    assert a.head == b.head == git(repo, "rev-parse", "HEAD").strip()

    (a.path / "shared.txt").write_text("alice was here\n")
    (b.path / "shared.txt").write_text("bob was here\n")
    assert (a.path / "shared.txt").read_text() == "alice was here\n"
    assert (b.path / "shared.txt").read_text() == "bob was here\n"
    assert (repo / "shared.txt").read_text() == "one\ntwo\nthree\n"
    assert git(repo, "status", "--porcelain") == ""  # the main checkout does not see them
    assert git(repo, "branch", "--show-current").strip() == "main"
    assert {w.slug for w in list_worktrees(repo)} == {"alice", "team+bob"}
    assert {w.head for w in list_worktrees(repo)} == {a.head}


def test_reuse_returns_the_same_worktree_and_keeps_files(repo: Path) -> None:
    first, created = create(repo, "reuse")
    assert created
    (first.path / "notes.txt").write_text("keep me\n")
    (repo / "later.txt").write_text("later\n")
    commit_all(repo, "later on main")
    again, created = create(repo, "reuse")
    assert not created
    assert again == first  # same path, branch, and the start commit recorded at creation
    assert (again.path / "notes.txt").read_text() == "keep me\n"


def test_a_leftover_branch_with_commits_is_not_reset(repo: Path) -> None:
    wt, _ = create(repo, "old")
    (wt.path / "work.txt").write_text("work\n")
    commit_all(wt.path, "work")
    git(repo, "worktree", "remove", "--force", str(wt.path))
    with pytest.raises(WorktreeError, match="worktree-old already exists with 1 commit"):
        create(repo, "old")
    assert "worktree-old" in branches(repo)


def test_links_to_the_repository_venv_are_not_changes(repo: Path) -> None:
    (repo / ".gitignore").write_text(".venv/\n")  # the usual form; it does not match a symlink
    commit_all(repo, "ignore venv")
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (repo / ".env.local").write_text("SECRET=1\n")  # untracked, and not in .gitignore

    wt, _ = create(repo, "linked", links=(".venv", "node_modules", ".env.local"))
    venv = wt.path / ".venv"
    assert venv.is_symlink() and venv.resolve() == repo / ".venv"
    assert (venv / "bin" / "python").read_text() == "#!/bin/sh\n"
    assert (wt.path / ".env.local").is_symlink()
    assert not (wt.path / "node_modules").exists()  # missing source: skipped
    result = status(wt)
    assert (result.dirty, result.commits, result.summary) == (False, 0, "no changes")
    assert diff(wt) == ""

    assert finish(wt) == result
    assert not wt.path.exists()
    assert (repo / ".venv" / "bin" / "python").read_text() == "#!/bin/sh\n"  # source untouched
    assert (repo / ".env.local").read_text() == "SECRET=1\n"


def test_an_existing_file_is_not_replaced_by_a_link(repo: Path) -> None:
    (repo / "tools").mkdir()
    (repo / "tools" / "run").write_text("tracked\n")
    commit_all(repo, "tools")
    wt, _ = create(repo, "keep", links=("tools",))
    assert not (wt.path / "tools").is_symlink()
    with pytest.raises(WorktreeError, match="a link is a relative path inside the repository"):
        create(repo, "keep", links=("../outside",))


# --- status and finish ---------------------------------------------------------------------------


def test_an_unchanged_worktree_vanishes_on_finish(repo: Path) -> None:
    wt, _ = create(repo, "idle")
    result = finish(wt)
    assert not result.changed and result.summary == "no changes"
    assert not wt.path.exists()
    assert "worktree-idle" not in branches(repo)
    assert list_worktrees(repo) == []
    assert git(repo, "status", "--porcelain") == ""


def test_uncommitted_changes_survive_finish(repo: Path) -> None:
    wt, _ = create(repo, "busy")
    (wt.path / "shared.txt").write_text("one\n2\nthree\nfour\n")
    (wt.path / "new.txt").write_text("a\nb\nc\n")
    result = finish(wt)
    assert result.dirty and result.commits == 0 and result.changed
    assert result.summary == "2 files changed, 5 insertions(+), 1 deletion(-)"
    assert (wt.path / "new.txt").exists() and "worktree-busy" in branches(repo)


def test_committed_changes_survive_finish(repo: Path) -> None:
    wt, _ = create(repo, "done")
    (wt.path / "feature.txt").write_text("feature\n")
    commit_all(wt.path, "add feature")
    (wt.path / "more.txt").write_text("more\n")
    commit_all(wt.path, "add more")
    result = finish(wt)
    assert not result.dirty and result.commits == 2 and result.changed
    assert result.summary == "2 commits, 2 files changed, 2 insertions(+)"
    assert wt.path.is_dir() and "worktree-done" in branches(repo)
    assert [w.slug for w in list_worktrees(repo)] == ["done"]


def test_stored_value_round_trips(repo: Path) -> None:
    wt, _ = create(repo, "stored")
    value = wt.to_value()
    assert value == {
        "repo": str(repo),
        "slug": "stored",
        "path": str(wt.path),
        "branch": "worktree-stored",
        "head": wt.head,
    }
    assert Worktree.from_value(value) == wt
    with pytest.raises(WorktreeError, match=r"non-empty strings .*bad: \['head'\]"):
        Worktree.from_value({**value, "head": 3})
    with pytest.raises(WorktreeError, match="non-empty strings"):
        Worktree.from_value("not an object")


# --- diff ----------------------------------------------------------------------------------------


def test_diff_shows_commits_changes_and_untracked_files_without_touching_the_index(
    repo: Path,
) -> None:
    wt, _ = create(repo, "diffy")
    (wt.path / "committed.txt").write_text("committed line\n")
    commit_all(wt.path, "commit something")
    (wt.path / "shared.txt").write_text("one\nTWO\nthree\n")
    (wt.path / "brand-new.txt").write_text("untracked line\n")
    (wt.path / "alias").symlink_to(wt.path / "shared.txt")
    text = diff(wt)
    assert text.splitlines()[0].endswith("commit something")
    assert "+committed line" in text and "-two" in text and "+TWO" in text
    assert "+untracked line" in text and "brand-new.txt" in text
    assert "new symlink alias" in text
    assert git(wt.path, "diff", "--cached", "--name-only") == ""
    assert "?? brand-new.txt" in git(wt.path, "status", "--porcelain")


# --- merge and remove ----------------------------------------------------------------------------


def test_merge_brings_the_work_onto_main(repo: Path) -> None:
    wt, _ = create(repo, "merge-me")
    (wt.path / "feature.txt").write_text("feature\n")
    commit_all(wt.path, "feature")
    said = merge(wt, repo)
    assert "Merge made" in said
    assert (repo / "feature.txt").read_text() == "feature\n"
    assert git(repo, "log", "-1", "--format=%P").count(" ") == 1  # a merge commit (--no-ff)
    remove(wt)  # merged, so not refused
    assert not wt.path.exists() and "worktree-merge-me" not in branches(repo)


def test_a_conflicting_merge_changes_nothing(repo: Path) -> None:
    wt, _ = create(repo, "clash")
    (wt.path / "shared.txt").write_text("theirs\n")
    commit_all(wt.path, "theirs")
    (repo / "shared.txt").write_text("ours\n")
    commit_all(repo, "ours")
    before = git(repo, "rev-parse", "HEAD")
    with pytest.raises(WorktreeError) as caught:
        merge(wt, repo)
    assert "conflicts in shared.txt" in str(caught.value)
    assert "nothing was changed" in str(caught.value)
    assert git(repo, "rev-parse", "HEAD") == before
    assert (repo / "shared.txt").read_text() == "ours\n"
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".git" / "MERGE_HEAD").exists()


def test_merge_refuses_uncommitted_work_on_either_side(repo: Path) -> None:
    wt, _ = create(repo, "half")
    (wt.path / "feature.txt").write_text("feature\n")
    commit_all(wt.path, "feature")
    (wt.path / "draft.txt").write_text("draft\n")
    with pytest.raises(WorktreeError, match=f"commit them in {re.escape(str(wt.path))} first"):
        merge(wt, repo)
    (wt.path / "draft.txt").unlink()
    (repo / "shared.txt").write_text("edited on main\n")
    with pytest.raises(WorktreeError, match="has uncommitted changes; commit or stash them"):
        merge(wt, repo)
    assert not (repo / "feature.txt").exists()


def test_remove_refuses_dirty_or_unmerged_work_unless_forced(repo: Path) -> None:
    wt, _ = create(repo, "dirty")
    (wt.path / "draft.txt").write_text("draft\n")
    with pytest.raises(WorktreeError, match="has uncommitted changes; commit or pass --force"):
        remove(wt)
    commit_all(wt.path, "draft")
    with pytest.raises(WorktreeError, match="1 commit\\(s\\) not merged"):
        remove(wt)
    assert wt.path.is_dir()
    remove(wt, force=True)
    assert not wt.path.exists() and "worktree-dirty" not in branches(repo)
    assert list_worktrees(repo) == []


def test_linked_directories_come_from_swarm_worktree_links(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "deps").mkdir()
    (repo / ".venv").mkdir()
    monkeypatch.setenv("SWARM_WORKTREE_LINKS", "deps, missing")
    tree, _ = create(repo, "linked")
    assert (tree.path / "deps").is_symlink() and not (tree.path / ".venv").exists()
    assert not status(tree).changed
