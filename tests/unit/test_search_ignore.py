"""Glob and Grep on real git repositories: ignore files, hidden files, binary files, long lines,
the time limit, the regex dialect. Each search runs through both engines (the pure-Python one,
and ``rg`` where it is installed) and, where ``rg`` is installed, is checked against ``rg`` run
directly with the flags Claude Code 2.1.330 passes."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from teammate.tools import search
from teammate.tools.base import ToolContext, ToolError
from teammate.tools.ignore import GlobList
from teammate.tools.patterns import VCS_DIRECTORIES
from teammate.tools.rg_regex import RegexDialectError, translate
from teammate.tools.search import glob, grep
from teammate.tools.walk import Deadline

RG = shutil.which("rg")
ENGINES = ["python", *(["rg"] if RG else [])]
VCS = [arg for name in VCS_DIRECTORIES for arg in ("--glob", f"!{name}")]
# Claude Code's Grep; its Glob (and the VCS folders); --no-config is its own rg's
GREP_FLAGS = ["--no-config", "--hidden", "--no-follow", *VCS, "--max-columns", "500"]
GLOB_FLAGS = ["--no-config", "--no-ignore", "--hidden", *VCS]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWARM_SEARCH_ENGINE", request.param)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in ("CLAUDE_CODE_GLOB_NO_IGNORE", "CLAUDE_CODE_GLOB_HIDDEN"):
        monkeypatch.delenv(name, raising=False)
    return str(request.param)


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)


def git_init(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def rg_lines(root: Path, *args: str) -> set[str] | None:
    """What `rg` run directly in `root` prints (absolute paths, one a line), or None without rg."""
    if RG is None:
        return None
    done = subprocess.run(
        [RG, *args], cwd=root, capture_output=True, text=True, env=os.environ.copy()
    )
    assert done.returncode in (0, 1), done.stderr
    return {str(root / line.removeprefix("./")) for line in done.stdout.splitlines() if line}


def globbed(ctx: ToolContext, pattern: str, **options: str) -> set[str]:
    out = glob.run(ctx, {"pattern": pattern, **options})
    return set() if out == "No files found" else set(out.splitlines())


def grepped(ctx: ToolContext, pattern: str, **options: object) -> set[str]:
    out = grep.run(ctx, {"pattern": pattern, "head_limit": 0, **options})
    return set() if out == "No files found" else set(out.splitlines()[1:])


def same_as_rg(found: set[str], expected: set[str], rg: set[str] | None) -> None:
    assert found == expected
    if rg is not None:
        assert rg == expected


def paths(root: Path, *names: str) -> set[str]:
    return {str(root / name) for name in names}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository: a node_modules/ folder ignored, source files, nested ignore files."""
    root = git_init(tmp_path / "repo")
    write(
        root,
        {
            ".gitignore": "node_modules/\n*.log\n!keep.log\n/top.txt\nbuild/\n",
            "src/app.js": "needle\n",
            "src/util.js": "other\n",
            "node_modules/lib/index.js": "needle\n",
            "node_modules/lib/deep/x.js": "needle\n",
            "src/debug.log": "needle\n",
            "src/keep.log": "needle\n",
            "top.txt": "needle\n",
            "src/top.txt": "needle\n",
            "build/out.js": "needle\n",
            "src/build/gen.js": "needle\n",
            "docs/build": "needle\n",  # a file named build: `build/` is for folders
            "sub/.gitignore": "local.txt\n",
            "sub/local.txt": "needle\n",
            "sub/kept.txt": "needle\n",
            "local.txt": "needle\n",
        },
    )
    return root


# --- the repository: Glob and Grep ---


def test_glob_lists_ignored_files_as_claude_code_does(repo: Path, engine: str) -> None:
    ctx = ToolContext(cwd=repo)
    found = globbed(ctx, "**/*.js")
    expected = paths(
        repo,
        "src/app.js",
        "src/util.js",
        "node_modules/lib/index.js",
        "node_modules/lib/deep/x.js",
        "build/out.js",
        "src/build/gen.js",
    )
    same_as_rg(found, expected, rg_lines(repo, "--files", "--glob", "**/*.js", *GLOB_FLAGS))


def test_glob_honouring_ignore_files_leaves_node_modules_out(
    repo: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_GLOB_NO_IGNORE", "false")
    ctx = ToolContext(cwd=repo)
    found = globbed(ctx, "**/*.js")
    expected = paths(repo, "src/app.js", "src/util.js")
    same_as_rg(found, expected, rg_lines(repo, "--files", "--glob", "**/*.js", "--hidden", *VCS))
    # a glob overrides the ignore files for what it names, as rg's --glob does
    logs = globbed(ctx, "**/*.log")
    rg = rg_lines(repo, "--files", "--glob", "**/*.log", "--hidden", *VCS)
    same_as_rg(logs, paths(repo, "src/debug.log", "src/keep.log"), rg)


def test_grep_honours_the_ignore_files(repo: Path, engine: str) -> None:
    ctx = ToolContext(cwd=repo)
    found = grepped(ctx, "needle")
    expected = paths(
        repo, "src/app.js", "src/keep.log", "src/top.txt", "docs/build", "sub/kept.txt", "local.txt"
    )
    same_as_rg(found, expected, rg_lines(repo, *GREP_FLAGS, "-l", "needle"))
    js = grepped(ctx, "needle", type="js")
    same_as_rg(js, paths(repo, "src/app.js"), rg_lines(repo, *GREP_FLAGS, "-l", "needle", "-tjs"))


def test_grep_glob_overrides_ignore_files_but_not_ignored_folders(repo: Path, engine: str) -> None:
    ctx = ToolContext(cwd=repo)
    found = grepped(ctx, "needle", glob="*.log")
    expected = paths(repo, "src/debug.log", "src/keep.log")
    same_as_rg(found, expected, rg_lines(repo, *GREP_FLAGS, "-l", "-g", "*.log", "needle"))
    js = grepped(ctx, "needle", glob="**/*.js")
    expected_js = paths(repo, "src/app.js")
    same_as_rg(js, expected_js, rg_lines(repo, *GREP_FLAGS, "-l", "-g", "**/*.js", "needle"))


def test_grep_in_a_subfolder_applies_the_root_gitignore(repo: Path, engine: str) -> None:
    ctx = ToolContext(cwd=repo)
    found = grepped(ctx, "needle", path="src")
    expected = paths(repo, "src/app.js", "src/keep.log", "src/top.txt")
    same_as_rg(found, expected, rg_lines(repo / "src", *GREP_FLAGS, "-l", "needle"))


def test_a_folder_named_outright_is_searched_though_ignored(repo: Path, engine: str) -> None:
    ctx = ToolContext(cwd=repo)
    found = grepped(ctx, "needle", path="node_modules")
    expected = paths(repo, "node_modules/lib/index.js", "node_modules/lib/deep/x.js")
    rg = rg_lines(repo, *GREP_FLAGS, "-l", "needle", "node_modules")
    same_as_rg(found, expected, rg)


def test_a_gitignore_outside_a_repository_is_not_applied(tmp_path: Path, engine: str) -> None:
    write(tmp_path / "plain", {".gitignore": "*.txt\n", "a.txt": "needle\n", "b.md": "needle\n"})
    ctx = ToolContext(cwd=tmp_path / "plain")
    found = grepped(ctx, "needle")
    expected = paths(tmp_path / "plain", "a.txt", "b.md")
    same_as_rg(found, expected, rg_lines(tmp_path / "plain", *GREP_FLAGS, "-l", "needle"))


def test_a_gitignore_above_the_repository_is_not_applied(tmp_path: Path, engine: str) -> None:
    write(tmp_path, {"outer/.gitignore": "secret.txt\n"})
    root = git_init(tmp_path / "outer" / "repo")
    write(root, {"secret.txt": "needle\n", "x/secret.txt": "needle\n"})
    ctx = ToolContext(cwd=root)
    found = grepped(ctx, "needle")
    expected = paths(root, "secret.txt", "x/secret.txt")
    same_as_rg(found, expected, rg_lines(root, *GREP_FLAGS, "-l", "needle"))


def test_dot_ignore_files_apply_everywhere_and_win(tmp_path: Path, engine: str) -> None:
    root = git_init(tmp_path / "repo")
    write(
        root,
        {
            ".gitignore": "*.gen\n",
            ".ignore": "!wanted.gen\nscratch/\n",
            ".rgignore": "*.tmp\n",
            "a.gen": "needle\n",
            "wanted.gen": "needle\n",
            "scratch/x.txt": "needle\n",
            "b.tmp": "needle\n",
            "c.txt": "needle\n",
        },
    )
    write(tmp_path / "plain", {".ignore": "skip.txt\n", "skip.txt": "needle\n", "y.txt": "needle"})
    found = grepped(ToolContext(cwd=root), "needle")
    expected = paths(root, "wanted.gen", "c.txt")
    same_as_rg(found, expected, rg_lines(root, *GREP_FLAGS, "-l", "needle"))
    plain = grepped(ToolContext(cwd=tmp_path / "plain"), "needle")
    rg = rg_lines(tmp_path / "plain", *GREP_FLAGS, "-l", "needle")
    same_as_rg(plain, paths(tmp_path / "plain", "y.txt"), rg)


def test_git_info_exclude_and_the_global_excludes_file(tmp_path: Path, engine: str) -> None:
    root = git_init(tmp_path / "repo")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    home = Path(os.environ["HOME"])
    write(home, {".gitconfig": "[core]\n\texcludesFile = ~/global-ignore\n"})
    write(home, {"global-ignore": "*.bak\n"})
    write(root, {"excluded.txt": "needle\n", "a.bak": "needle\n", "kept.txt": "needle\n"})
    found = grepped(ToolContext(cwd=root), "needle")
    expected = paths(root, "kept.txt")
    same_as_rg(found, expected, rg_lines(root, *GREP_FLAGS, "-l", "needle"))


def test_hidden_files(repo: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, {".env": "needle\n", ".config/tool.js": "needle\n"})
    ctx = ToolContext(cwd=repo)
    found = grepped(ctx, "needle", path=".config")
    assert found == paths(repo, ".config/tool.js")  # Claude Code's Grep passes --hidden
    assert str(repo / ".env") in grepped(ctx, "needle")
    assert paths(repo, ".config/tool.js") <= globbed(ctx, "**/*.js")
    monkeypatch.setenv("CLAUDE_CODE_GLOB_HIDDEN", "0")
    hidden_off = globbed(ctx, "**/*.js")
    expected = globbed(ctx, "**/*.js") - paths(repo, ".config/tool.js")
    rg = rg_lines(repo, "--files", "--glob", "**/*.js", "--no-ignore", *VCS)
    same_as_rg(hidden_off, expected, rg)
    named = globbed(ctx, ".env")  # a glob naming a hidden file takes it
    same_as_rg(
        named, paths(repo, ".env"), rg_lines(repo, "--files", "--glob", ".env", "--no-ignore", *VCS)
    )


def test_git_and_other_vcs_folders_are_never_searched(repo: Path, engine: str) -> None:
    write(repo, {".hg/store.js": "needle\n", "vendor/.git": "gitdir: x\n"})
    ctx = ToolContext(cwd=repo)
    assert not any("/.git/" in path or "/.hg/" in path for path in globbed(ctx, "**"))
    assert not any("/.git" in path or "/.hg/" in path for path in grepped(ctx, "needle|gitdir"))


def test_a_bad_gitignore_line_is_reported_and_the_rest_applies(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_init(tmp_path / "repo")
    write(root, {".gitignore": "a[\n*.log\n", "x.log": "needle\n", "y.txt": "needle\n"})
    out = grep.run(ToolContext(cwd=root), {"pattern": "needle"})
    assert out.startswith(f"Found 1 file\n{root / 'y.txt'}\n")
    assert f"Note: {root / '.gitignore'} line 1: the pattern 'a[' is not valid" in out
    assert "that line is skipped, the rest of the file applies" in out
    monkeypatch.setenv("CLAUDE_CODE_GLOB_NO_IGNORE", "false")
    listed = glob.run(ToolContext(cwd=root), {"pattern": "*.txt"})
    assert listed.splitlines()[0] == str(root / "y.txt") and "Note: " in listed


def test_symlinks_are_not_followed(tmp_path: Path, engine: str) -> None:
    root = tmp_path / "tree"
    write(root, {"real/a.txt": "needle\n", "outside/b.txt": "needle\n"})
    (root / "link.txt").symlink_to(root / "real" / "a.txt")
    (root / "linkdir").symlink_to(tmp_path / "tree" / "outside")
    ctx = ToolContext(cwd=root)
    same_as_rg(
        grepped(ctx, "needle"),
        paths(root, "real/a.txt", "outside/b.txt"),
        rg_lines(root, *GREP_FLAGS, "-l", "needle"),
    )
    listed = globbed(ctx, "**/*.txt")
    rg = rg_lines(root, "--files", "--glob", "**/*.txt", *GLOB_FLAGS)
    same_as_rg(listed, paths(root, "real/a.txt", "outside/b.txt"), rg)


# --- binary files, long lines ---


def test_binary_files_are_skipped(tmp_path: Path, engine: str) -> None:
    late = b"needle first\n" + b"x" * 100_000 + b"\nneedle after\n\0tail needle\n"
    write(
        tmp_path,
        {"a.bin": b"needle\0\1", "b.txt": "needle one\n", "late.bin": late, "u16.txt": b""},
    )
    (tmp_path / "u16.txt").write_bytes("needle in utf-16\n".encode("utf-16"))
    ctx = ToolContext(cwd=tmp_path)
    files = grepped(ctx, "needle")
    expected = paths(tmp_path, "b.txt", "late.bin", "u16.txt")
    same_as_rg(files, expected, rg_lines(tmp_path, *GREP_FLAGS, "-l", "needle"))
    counted = grep.run(ctx, {"pattern": "needle", "output_mode": "count"})
    assert counted.splitlines()[:2] == [f"{tmp_path / 'b.txt'}:1", f"{tmp_path / 'u16.txt'}:1"]
    content = grep.run(ctx, {"pattern": "needle", "output_mode": "content"}).splitlines()
    assert content[:3] == [
        f"{tmp_path / 'b.txt'}:1:needle one",
        f"{tmp_path / 'late.bin'}:1:needle first",
        f"{tmp_path / 'late.bin'}:" + 'binary file matches (found "\\0" byte around offset 100027)',
    ]


def test_a_binary_file_named_outright_is_searched_and_said_binary(
    tmp_path: Path, engine: str
) -> None:
    write(tmp_path, {"d.bin": b"needle first\n" + b"x" * 100 + b"\nneedle after\0 needle\n"})
    ctx = ToolContext(cwd=tmp_path)
    out = grep.run(ctx, {"pattern": "needle", "path": "d.bin", "output_mode": "content"})
    assert out.splitlines() == [
        "1:needle first",
        'binary file matches (found "\\0" byte around offset 126)',
    ]
    count = grep.run(ctx, {"pattern": "needle", "path": "d.bin", "output_mode": "count"})
    assert count.startswith(f"{tmp_path / 'd.bin'}:2\n")


def test_long_lines_are_omitted_as_claude_code_omits_them(tmp_path: Path, engine: str) -> None:
    write(tmp_path, {"f.txt": "short needle\n" + "needle" + "x" * 600 + "\n" + "y" * 501 + "\n"})
    out = grep.run(
        ToolContext(cwd=tmp_path), {"pattern": "needle", "output_mode": "content", "-A": 1}
    )
    path = tmp_path / "f.txt"
    assert out.splitlines() == [
        f"{path}:1:short needle",
        f"{path}:2:[Omitted long matching line]",
        f"{path}-3-[Omitted long context line]",
    ]


def test_a_large_file_is_searched_in_blocks(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("teammate.tools.scan.BLOCK", 64)  # about 8 lines a block
    monkeypatch.setattr("teammate.tools.scan.FIRST_BUFFER", 64)
    lines = [f"line {n}" + (" needle" if n in (3, 9, 10, 30) else "") for n in range(1, 41)]
    write(tmp_path, {"big.txt": "\n".join(lines) + "\n"})
    out = grep.run(
        ToolContext(cwd=tmp_path),
        {"pattern": "needle", "output_mode": "content", "-C": 2, "-n": True},
    )
    shown = [
        line.split(str(tmp_path / "big.txt"), 1)[1] for line in out.splitlines() if line != "--"
    ]
    numbers = [int(line[1:].split(line[0], 1)[0]) for line in shown]
    assert numbers == [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 28, 29, 30, 31, 32]
    assert out.count("\n--\n") == 2
    count = grep.run(ToolContext(cwd=tmp_path), {"pattern": "needle", "output_mode": "count"})
    assert count.startswith(f"{tmp_path / 'big.txt'}:4\n")
    late = grep.run(ToolContext(cwd=tmp_path), {"pattern": "line 40", "output_mode": "content"})
    assert late == f"{tmp_path / 'big.txt'}:40:line 40"


# --- the time limit ---


class CountingClock:
    """A clock that passes the deadline after `ticks` readings: no waiting, no timing."""

    def __init__(self, ticks: int) -> None:
        self.readings = itertools.count()
        self.ticks = ticks

    def __call__(self) -> float:
        return 0.0 if next(self.readings) <= self.ticks else 1e9


@pytest.fixture
def many(tmp_path: Path) -> Path:
    write(tmp_path / "t", {f"d{n:02}/f.txt": "needle\n" for n in range(30)})
    return tmp_path / "t"


def test_a_search_cut_by_the_time_limit_returns_what_it_found(
    many: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_SEARCH_ENGINE", "python")
    monkeypatch.setattr(search, "make_deadline", lambda: Deadline(20, CountingClock(12)))
    ctx = ToolContext(cwd=many)
    out = grep.run(ctx, {"pattern": "needle"}).splitlines()
    assert out[0] == search.TIMED_OUT
    assert 0 < int(out[1].split()[1]) < 30
    listed = glob.run(ctx, {"pattern": "**/*.txt"}).splitlines()
    assert listed[0] == search.TIMED_OUT and 1 < len(listed) < 31


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_search_that_finds_nothing_in_time_is_an_error(
    many: Path, monkeypatch: pytest.MonkeyPatch, engine_name: str
) -> None:
    monkeypatch.setenv("SWARM_SEARCH_ENGINE", engine_name)
    monkeypatch.setenv("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", "7")
    monkeypatch.setattr(search, "make_deadline", lambda: Deadline(7, CountingClock(0)))
    ctx = ToolContext(cwd=many)
    with pytest.raises(ToolError, match=r"Ripgrep search timed out after 7 seconds\. "):
        grep.run(ctx, {"pattern": "needle"})
    with pytest.raises(ToolError, match="timed out"):
        glob.run(ctx, {"pattern": "**/*.txt"})


def test_the_time_limit_is_claude_codes_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", raising=False)
    assert search.timeout_seconds() in (20, 60)  # 60 under WSL
    monkeypatch.setenv("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", "2.5")
    assert search.timeout_seconds() == 2.5
    monkeypatch.setenv("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", "soon")
    assert search.timeout_seconds() == 20


# --- ignore-file lines and the regex dialect, unit by unit ---


@pytest.mark.parametrize(
    ("lines", "path", "verdict"),
    [
        (["build/"], "build/", True),
        (["build/"], "build", None),  # a file named build
        (["build/"], "build/x.js", None),  # only the folder itself: the walk never enters it
        (["/top.txt"], "top.txt", True),
        (["/top.txt"], "a/top.txt", None),
        (["*.log", "!keep.log"], "a/keep.log", False),
        (["x/**"], "x/", None),
        (["x/**"], "x/a/b", True),
        (["a/**/b"], "a/x/y/b", True),
        (["*.{js,ts}"], "a/b.ts", True),
        (["{src/a*,top}.*"], "src/top.txt", None),  # a "/" anywhere anchors every alternative
        (["\\#x"], "#x", True),
    ],
)
def test_glob_lines_match_as_ripgrep_matches(lines: list[str], path: str, verdict: object) -> None:
    assert GlobList(lines).match(path) is verdict


@pytest.mark.parametrize("line", ["a[", "[z-a]", "foo\\", "{a,b", "*.{a,{b,c}}"])
def test_glob_lines_ripgrep_refuses_are_reported(line: str) -> None:
    assert GlobList([line, "ok"]).errors[0][0] == 1
    assert GlobList([line, "ok"]).match("ok") is True


@pytest.mark.parametrize(
    ("pattern", "line", "hit"),
    [
        (r"a(?i)b|c", "aB", True),
        (r"a(?i)b|c", "C", True),
        (r"(?U)a+", "aaa", True),
        (r"\d+", "x٣", True),  # Unicode digits, as Rust's \d
        (r"\p{Lu}\p{Ll}+", "Élan", True),
        (r"[[:upper:]]{3}", "ABC", True),
        (r"[a-z&&[^aeiou]]+$", "xyz", True),
        (r"[a-z--[aeiou]]", "a", False),
        (r"(?<word>ab)", "ab", True),
        (r"\<foo\>", "a foo b", True),
        (r"\<foo\>", "afoob", False),
        (r"\x{46}\u{4F}", "FO", True),
        (r"^\s*$", "   ", True),
        (r"(?x) a b  # spaces are ignored", "ab", True),
        (r"\Afoo\z", "foo", True),
    ],
)
def test_ripgrep_patterns_in_python(pattern: str, line: str, hit: bool) -> None:
    assert (translate(pattern).compile().search(line) is not None) is hit


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"foo(?=bar)", "look-around"),
        (r"(?<!x)y", "look-around"),
        (r"(a)\1", "backreferences"),
        (r"interface{}", "literal brace"),
        (r"a\nb", "multiline"),
        (r"\p{Greek}", "scripts"),
        (r"(?>a)", "atomic"),
        (r"[a", "unclosed"),
    ],
)
def test_patterns_ripgrep_or_python_refuse(pattern: str, why: str) -> None:
    with pytest.raises(RegexDialectError, match=why):
        translate(pattern)


def test_a_line_pattern_never_matches_across_lines() -> None:
    regex = translate(r"a[^x]b|c\sd|e\Wf").compile()
    assert regex.search("a\nb") is None and regex.search("c\nd") is None
    assert regex.search("e\nf") is None and regex.search("c d") is not None
    spanning = translate(r"a\sb", multiline=True)
    assert spanning.multiline and spanning.compile().search("a\nb")
    assert not translate(r"ab", multiline=True).multiline  # searched line by line, as rg does


@pytest.mark.parametrize(
    "pattern",
    [r"\bneedle\b", r"NEEDLE", r"ne+dle$", r"[[:alpha:]]+ \d", r"(?i)Needle", r"^\w+\s\w+"],
)
def test_patterns_find_what_rg_finds(tmp_path: Path, engine: str, pattern: str) -> None:
    write(
        tmp_path,
        {
            "a.txt": "needle 1\nNEEDLE 2\n",
            "b.txt": "a needles\n",
            "c.txt": "needle\n",
            "d.txt": "x needle y\r\n",
        },
    )
    found = grep.run(ToolContext(cwd=tmp_path), {"pattern": pattern, "output_mode": "content"})
    lines = set() if found == "No matches found" else set(found.splitlines())
    if RG is not None:
        done = subprocess.run(
            [RG, *GREP_FLAGS, "-n", "--no-heading", "--with-filename", "-e", pattern, "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        expected = {
            str(tmp_path / line.removeprefix("./")).rstrip("\r")
            for line in done.stdout.splitlines()
        }
        assert lines == expected


OPTIONS = [
    {"output_mode": "content", "-C": 1},
    {"output_mode": "content", "-B": 2, "-n": False},
    {"output_mode": "content", "-A": 1, "-i": True},
    {"output_mode": "content", "context": 1, "-C": 3},
    {"output_mode": "content", "-o": True, "-A": 1},
    {"output_mode": "content", "multiline": True, "pattern": r"begin[\s\S]*?end"},
    {"output_mode": "content", "multiline": True, "-o": True, "pattern": r"\(\s*\w+"},
    {"output_mode": "count", "multiline": True, "pattern": r"o\s+b"},
    {"output_mode": "count", "-i": True, "glob": "*.py,*.md"},
    {"output_mode": "files_with_matches", "type": "py", "head_limit": 1, "offset": 1},
    {"output_mode": "content", "head_limit": 3, "offset": 2, "path": "src"},
    {"output_mode": "content", "path": "src/a.py", "-C": 1},
]


@pytest.mark.skipif(RG is None, reason="compares with rg")
@pytest.mark.parametrize("options", OPTIONS, ids=[str(option) for option in OPTIONS])
def test_every_option_gives_what_rg_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, object]
) -> None:
    """The pure-Python engine against ripgrep (its output as Claude Code reads it)."""
    text = "foo bar\nbegin (\n  x,\n) end\nFOO\n\nfoo\nlast (y\n"
    write(tmp_path, {"src/a.py": text, "src/b.md": text.upper(), "c.txt": text, "d.py": "x"})
    ctx = ToolContext(cwd=tmp_path)
    call = {"pattern": "foo|\\(", **options}
    outputs = []
    for name in ("python", "rg"):
        monkeypatch.setenv("SWARM_SEARCH_ENGINE", name)
        outputs.append(grep.run(ctx, call))
    assert outputs[0] == outputs[1]


def test_a_worktree_reads_its_repository_exclude_file(tmp_path: Path, engine: str) -> None:
    main = git_init(tmp_path / "main")
    write(main, {"README": "x\n"})
    git = ["git", "-C", str(main), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "tree")], check=True)
    (main / ".git" / "info").mkdir(exist_ok=True)
    (main / ".git" / "info" / "exclude").write_text("*.tmp\n")
    tree = tmp_path / "tree"
    assert (tree / ".git").is_file()  # "gitdir: .../main/.git/worktrees/tree"
    write(tree, {"a.tmp": "needle\n", "b.txt": "needle\n"})
    found = grepped(ToolContext(cwd=tree), "needle")
    same_as_rg(found, paths(tree, "b.txt"), rg_lines(tree, *GREP_FLAGS, "-l", "needle"))
