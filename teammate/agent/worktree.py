"""Git worktrees that isolate a teammate (or a task), like Claude Code's ``isolation: worktree``.

This module owns the worktree life cycle: the name rule (`flatten_slug`), creating or reusing
``<repo>/.claude/worktrees/<name>`` on branch ``worktree-<name>`` from the repository's HEAD,
linking heavy untracked directories (``.venv``, ``node_modules``) into it, telling what changed
(`status`, `diff`), and ending it (`finish` drops an unchanged worktree, `merge`, `remove`).
Every git run goes through `run_git`: never interactive, bounded in time, and any failure is a
`WorktreeError` whose message names the command and what git said. The index is never touched
except by git's own ``worktree add``/``merge``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import Error

GIT_TIMEOUT = 60.0
WORKTREES_DIR = Path(".claude") / "worktrees"
BRANCH_PREFIX = "worktree-"
HEAD_FILE = "swarm-head"
_KEYS = ("repo", "slug", "path", "branch", "head")
MAX_SLUG = 64
NAME_RULE = (
    "a worktree name is at most 64 characters of letters, digits, '.', '_', '-', with '/' "
    "between parts (flattened to '+'); no '.' or '..' parts, not absolute"
)
_PART = re.compile(r"[A-Za-z0-9._-]+")
# Variables that point git at another repository than the one in cwd, or make it ask a human.
_DROPPED_ENV = "GIT_ASKPASS SSH_ASKPASS GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_COMMON_DIR"


DEFAULT_LINKS = (".venv", "node_modules")


class WorktreeError(Error):
    """A worktree operation that failed or was refused; the message says why and what to do."""


def flatten_slug(slug: str) -> str:
    """Validate a worktree name and flatten it: ``user/feature`` -> ``user+feature``."""

    def fail(reason: str) -> WorktreeError:
        return WorktreeError(f"invalid worktree name {slug!r} ({reason}): {NAME_RULE}")

    if not slug:
        raise fail("empty")
    if slug.startswith("/"):
        raise fail("absolute")
    for part in slug.split("/"):
        if not part:
            raise fail("empty part")
        if part in (".", ".."):
            raise fail(f"{part!r} part")
        if not _PART.fullmatch(part):
            raise fail("a character that is not allowed")
    flat = slug.replace("/", "+")
    if len(flat) > MAX_SLUG:
        raise fail(f"{len(flat)} characters")
    # The branch worktree-<flat> must be a valid git branch name too.
    if ".." in flat or flat.endswith((".", ".lock")):
        raise fail("not usable in a git branch name: no '..', no trailing '.' or '.lock'")
    return flat


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for every git run: no prompts, no askpass, no redirected repository."""
    env = dict(os.environ if base is None else base)
    for name in _DROPPED_ENV.split():
        env.pop(name, None)
    env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never", GIT_MERGE_AUTOEDIT="no")
    return env


def run_git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git <args>`` in `cwd`; with `check`, a non-zero exit raises `WorktreeError`."""
    command = "git " + " ".join(args)
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
        )
    except OSError as exc:
        raise WorktreeError(f"{command} could not start in {cwd}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorktreeError(f"{command} in {cwd} took over {GIT_TIMEOUT:g} s; stopped") from exc
    if check and done.returncode != 0:
        said = "\n".join(done.stderr.strip().splitlines()[:5]) or f"exit {done.returncode}"
        raise WorktreeError(f"{command} failed in {cwd}: {said}")
    return done


def _out(args: list[str], cwd: Path) -> str:
    return run_git(args, cwd).stdout.strip()


def _worktree_entries(repo: Path) -> list[dict[str, str]]:
    """`git worktree list --porcelain` as one dict per worktree (attribute -> value)."""
    blocks = run_git(["worktree", "list", "--porcelain"], repo).stdout.split("\n\n")
    entries = [{k: v for k, _, v in (ln.partition(" ") for ln in b.splitlines())} for b in blocks]
    return [entry for entry in entries if "worktree" in entry]


def repo_root(cwd: Path) -> Path:
    """The top level of the repository holding `cwd` (its main working tree, seen from a
    linked worktree), which must have a first commit."""
    if shutil.which("git", path=git_env().get("PATH")) is None:
        raise WorktreeError("git is not installed (no 'git' on PATH)")
    if not Path(cwd).is_dir():
        raise WorktreeError(f"{cwd} is not a directory; worktrees need a git repository")
    found = run_git(["rev-parse", "--show-toplevel"], cwd, check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise WorktreeError(
            f"{cwd} is not inside a git repository; worktrees need one (git init, and a first "
            "commit)"
        )
    root = Path(found.stdout.strip()).resolve()
    main = _worktree_entries(root)[0]
    if "bare" not in main and Path(main["worktree"]).is_dir():
        root = Path(main["worktree"]).resolve()
    if run_git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], root, check=False).returncode:
        raise WorktreeError(
            f"the repository at {root} has no commits yet; worktrees start from HEAD, so make a "
            "first commit"
        )
    return root


@dataclass(frozen=True)
class Worktree:
    """One swarm worktree: where it lives, its branch, and the commit it started from."""

    repo: Path
    slug: str
    path: Path
    branch: str
    head: str

    def to_value(self) -> dict[str, str]:
        """A JSON-ready dict (for a member entry or task metadata)."""
        return {key: str(getattr(self, key)) for key in _KEYS}

    @classmethod
    def from_value(cls, value: Any) -> Worktree:
        """The inverse of `to_value`; anything else raises `WorktreeError`."""
        v = value if isinstance(value, Mapping) else {}
        bad = [key for key in _KEYS if not isinstance(v.get(key), str) or not v[key]]
        if bad:
            raise WorktreeError(f"a stored worktree needs non-empty strings {_KEYS}; bad: {bad}")
        return cls(Path(v["repo"]), v["slug"], Path(v["path"]), v["branch"], v["head"])


@dataclass(frozen=True)
class WorktreeStatus:
    """What a worktree holds beyond its start: uncommitted changes, commits, a one-line summary."""

    dirty: bool
    commits: int
    summary: str

    @property
    def changed(self) -> bool:
        return self.dirty or self.commits > 0


def _head_file(path: Path) -> Path:
    return (path / _out(["rev-parse", "--git-dir"], path)).resolve() / HEAD_FILE


def _start_commit(repo: Path, path: Path, branch: str) -> str:
    """The commit a worktree started from: recorded at creation, else the merge-base."""
    if path.is_dir():
        recorded = _head_file(path)
        if recorded.is_file() and (sha := recorded.read_text().strip()):
            return sha
    base = run_git(["merge-base", branch, "HEAD"], repo, check=False)
    return base.stdout.strip() or _out(["rev-parse", branch], repo)


def _exclude(path: Path, names: Sequence[str]) -> None:
    """Append ``/<name>`` patterns to the exclude file the worktree reads (shared, in fact)."""
    exclude = (path / _out(["rev-parse", "--git-path", "info/exclude"], path)).resolve()
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text() if exclude.is_file() else ""
    if missing := [f"/{n}\n" for n in names if f"/{n}" not in text.splitlines()]:
        with exclude.open("a") as out:
            out.write(("\n" if text and not text.endswith("\n") else "") + "".join(missing))


def _unmerged(repo: Path, branch: str) -> int:
    """Commits on `branch` that the repository's HEAD does not have (0 if there is no branch)."""
    ahead = run_git(["rev-list", "--count", f"HEAD..refs/heads/{branch}"], repo, check=False)
    return int(ahead.stdout.strip() or 0) if ahead.returncode == 0 else 0


def configured_links(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Directories linked into every worktree: ``$SWARM_WORKTREE_LINKS`` (comma-separated),
    by default ``.venv`` and ``node_modules``."""
    value = (os.environ if environ is None else environ).get("SWARM_WORKTREE_LINKS")
    if value is None:
        return DEFAULT_LINKS
    return tuple(name.strip() for name in value.split(",") if name.strip())


def create(cwd: Path, slug: str, links: Sequence[str] | None = None) -> tuple[Worktree, bool]:
    """Create (or reuse) the worktree `slug` of the repository holding `cwd`.

    Returns the worktree and whether it was created now. Each of `links` (default:
    `configured_links`) that exists in the repository and not in the worktree becomes a symlink
    to the repository's copy, ignored by git.
    """
    links = configured_links() if links is None else links
    flat = flatten_slug(slug)
    for name in links:
        if name.startswith("/") or {"", ".", ".."} & set(name.split("/")):
            raise WorktreeError(f"link {name!r}: a link is a relative path inside the repository")
    repo = repo_root(cwd)
    path, branch = repo / WORKTREES_DIR / flat, BRANCH_PREFIX + flat
    if path in {Path(e["worktree"]).resolve() for e in _worktree_entries(repo)} and path.is_dir():
        created, head = False, _start_commit(repo, path, branch)
    else:
        run_git(["worktree", "prune"], repo)  # forget worktrees whose directory is gone
        if path.exists():
            raise WorktreeError(f"{path} exists but is not a worktree of {repo}; move it away")
        if ahead := _unmerged(repo, branch):
            raise WorktreeError(
                f"branch {branch} already exists with {ahead} commit(s) not on HEAD; merge it, "
                f"or delete it (git branch -D {branch}), before reusing the name {slug!r}"
            )
        run_git(["worktree", "add", "-B", branch, str(path), "HEAD"], repo)
        created, head = True, _out(["rev-parse", "HEAD"], path)
        _head_file(path).write_text(head + "\n")
    for name in links:
        source, target = repo / name, path / name
        if source.exists() and not target.exists() and not target.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source, target_is_directory=source.is_dir())
    _exclude(path, [WORKTREES_DIR.as_posix() + "/", *links])  # the main checkout never sees them
    return Worktree(repo, flat, path, branch, head), created


def _untracked(path: Path) -> list[str]:
    listed = run_git(["ls-files", "-z", "--others", "--exclude-standard"], path).stdout
    return [name for name in listed.split("\0") if name]


def _count_lines(file: Path) -> int:
    data = b"" if file.is_symlink() or not file.is_file() else file.read_bytes()
    return 0 if b"\0" in data[:8000] else len(data.splitlines())  # binary counts 0, as in git


def status(wt: Worktree) -> WorktreeStatus:
    """Uncommitted changes (untracked files included, links not), commits since `wt.head`."""
    dirty = bool(run_git(["status", "--porcelain"], wt.path).stdout.strip())
    commits = int(_out(["rev-list", "--count", f"{wt.head}..refs/heads/{wt.branch}"], wt.path))
    files = added = deleted = 0
    for line in run_git(["diff", "--numstat", wt.head], wt.path).stdout.splitlines():
        plus, minus, _ = line.split("\t", 2)
        files += 1
        added += int(plus) if plus.isdigit() else 0
        deleted += int(minus) if minus.isdigit() else 0
    for name in _untracked(wt.path):
        files += 1
        added += _count_lines(wt.path / name)
    counts = [(commits, "commit", ""), (files, "file", " changed"), (added, "insertion", "(+)")]
    counts.append((deleted, "deletion", "(-)"))
    parts = [f"{n} {word}{'' if n == 1 else 's'}{tail}" for n, word, tail in counts if n]
    return WorktreeStatus(dirty, commits, ", ".join(parts) or "no changes")


def _discard(wt: Worktree) -> None:
    if wt.path.is_dir():
        run_git(["worktree", "remove", "--force", str(wt.path)], wt.repo)
    run_git(["worktree", "prune"], wt.repo)
    branch = run_git(["rev-parse", "-q", "--verify", f"refs/heads/{wt.branch}"], wt.repo, False)
    if branch.returncode == 0:
        run_git(["branch", "-D", wt.branch], wt.repo)


def finish(wt: Worktree) -> WorktreeStatus:
    """When the teammate stops: drop an unchanged worktree and its branch; keep a changed one."""
    result = status(wt)
    if not result.changed:
        _discard(wt)
    return result


def list_worktrees(cwd: Path) -> list[Worktree]:
    """Swarm's worktrees (those under ``<repo>/.claude/worktrees/``) of the repository at `cwd`."""
    repo = repo_root(cwd)
    home, found = repo / WORKTREES_DIR, []
    for entry in _worktree_entries(repo):
        path = Path(entry["worktree"]).resolve()
        branch = entry.get("branch", "").removeprefix("refs/heads/")
        if path.parent == home and branch:
            found.append(Worktree(repo, path.name, path, branch, _start_commit(repo, path, branch)))
    return found


def diff(wt: Worktree) -> str:
    """The commits since the start (``git log --oneline``), then the diff of the working tree
    against the start, untracked files included; the index is not modified."""
    log = _out(["log", "--oneline", f"{wt.head}..refs/heads/{wt.branch}"], wt.path)
    pieces = [log] if log else []
    pieces.append(run_git(["diff", "--no-ext-diff", wt.head], wt.path).stdout)
    for name in _untracked(wt.path):
        if (wt.path / name).is_symlink():  # git diff --no-index would follow it
            pieces.append(f"new symlink {name} -> {os.readlink(wt.path / name)}")
            continue
        shown = run_git(
            ["diff", "--no-ext-diff", "--no-index", "--", os.devnull, name], wt.path, check=False
        )
        if shown.returncode not in (0, 1):
            raise WorktreeError(f"git diff --no-index {name} failed in {wt.path}: {shown.stderr}")
        pieces.append(shown.stdout)
    text = "\n".join(p.rstrip("\n") for p in pieces if p.strip())
    return text + "\n" if text else ""


def merge(wt: Worktree, into: Path) -> str:
    """Merge the worktree's branch into the current branch at `into`; all or nothing."""
    if status(wt).dirty:
        raise WorktreeError(f"the worktree has uncommitted changes; commit them in {wt.path} first")
    if run_git(["status", "--porcelain", "--untracked-files=no"], into).stdout.strip():
        raise WorktreeError(f"{into} has uncommitted changes; commit or stash them first")
    done = run_git(["merge", "--no-ff", "--no-edit", wt.branch], into, check=False)
    if done.returncode == 0:
        return (done.stdout.strip().splitlines() or [""])[0]
    conflicts = _out(["diff", "--name-only", "--diff-filter=U"], into).splitlines()
    if run_git(["rev-parse", "-q", "--verify", "MERGE_HEAD"], into, check=False).returncode == 0:
        run_git(["merge", "--abort"], into)
    if conflicts:
        raise WorktreeError(
            f"merging {wt.branch} into {into} conflicts in {', '.join(conflicts)}; the merge was "
            "aborted and nothing was changed (resolve it in the worktree, then merge again)"
        )
    said = "\n".join((done.stderr or done.stdout).strip().splitlines()[:5])
    raise WorktreeError(f"git merge {wt.branch} failed in {into}; nothing was merged: {said}")


def remove(wt: Worktree, force: bool = False) -> None:
    """Delete the worktree and its branch; refuse uncommitted or unmerged work unless `force`."""
    if not force and wt.path.is_dir() and status(wt).dirty:
        raise WorktreeError(
            f"worktree {wt.slug!r} at {wt.path} has uncommitted changes; commit or pass --force "
            "to discard them"
        )
    if not force and (ahead := _unmerged(wt.repo, wt.branch)):
        raise WorktreeError(
            f"branch {wt.branch} has {ahead} commit(s) not merged into the HEAD of {wt.repo}; "
            "merge them or pass --force to discard them"
        )
    _discard(wt)


def wrap_up(tree: Worktree) -> str | None:
    """Remove `tree` if nothing changed in it (None); else keep it and say where and what."""
    try:
        state = finish(tree)
    except WorktreeError as exc:
        return f"worktree {tree.path} left as it is: {exc}"
    if not state.changed:
        return None
    return f"worktree kept: {tree.path} (branch {tree.branch}): {state.summary}"
