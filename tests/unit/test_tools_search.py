"""The Glob and Grep tools on real directory trees: matching, ordering, filters, output forms, as
Claude Code 2.1.330 gives them; each test runs through both engines (pure Python, and rg where it
is installed). Ignore files, binary files and the time limit: tests/unit/test_search_ignore.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from teammate.tools.base import ToolContext, ToolError
from teammate.tools.patterns import GlobPattern, expand_braces
from teammate.tools.search import glob, grep


@pytest.fixture(autouse=True, params=["python", *(["rg"] if shutil.which("rg") else [])])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWARM_SEARCH_ENGINE", request.param)
    return str(request.param)


def make(root: Path, files: dict[str, str]) -> dict[str, str]:
    """Write `files` under `root`, the first one oldest (distinct modification times); their
    absolute paths by relative name."""
    paths = {}
    for age, (name, text) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (1_000_000 + age * 10, 1_000_000 + age * 10))
        paths[name] = str(path)
    return paths


def test_names_kinds_and_fields_are_claude_codes() -> None:
    assert (glob.name, glob.kind, grep.name, grep.kind) == ("Glob", "read", "Grep", "read")
    assert set(glob.schema()["input_schema"]["properties"]) == {"pattern", "path"}
    assert set(grep.schema()["input_schema"]["properties"]) == {
        "pattern", "path", "glob", "output_mode", "-B", "-A", "-C", "context", "-n", "-i",
        "-o", "type", "head_limit", "offset", "multiline",
    }  # fmt: skip
    assert grep.schema()["input_schema"]["required"] == ["pattern"]
    assert glob.schema()["input_schema"]["required"] == ["pattern"]
    properties = grep.schema()["input_schema"]["properties"]
    assert properties["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert properties["-o"]["description"].startswith("Print only the matched (non-empty)")


# --- the glob dialect ---


def test_expand_braces() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("x.{py,{js,ts}}") == ["x.py", "x.js", "x.ts"]
    assert expand_braces("{single}.{a,b") == ["{single}.{a,b"]


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("*.py", "x/a.py", False),
        ("src/*.ts", "src/a.ts", True),
        ("src/*.ts", "src/deep/a.ts", False),
        ("src/**", "src/deep/a.ts", True),
        ("a/**/b.txt", "a/b.txt", True),
        ("a/**/b.txt", "a/x/y/b.txt", True),
        ("file?.[ch]", "file1.c", True),
        ("file?.[!ch]", "file1.c", False),
        ("*.{ts,tsx}", "view.tsx", True),
        ("a+b(1).txt", "a+b(1).txt", True),
    ],
)
def test_glob_pattern(pattern: str, path: str, hit: bool) -> None:
    assert GlobPattern(pattern).matches(path) is hit


# --- Glob ---


def test_glob_lists_files_oldest_first_at_any_depth(ctx: ToolContext) -> None:
    paths = make(
        ctx.cwd,
        {"old.py": "", "pkg/mid.py": "", "notes.md": "", "pkg/deep/new.py": ""},
    )
    (ctx.cwd / "pkg" / "dir.py").mkdir()  # a directory is not a match
    everywhere = [paths["old.py"], paths["pkg/mid.py"], paths["pkg/deep/new.py"]]
    assert glob.run(ctx, {"pattern": "**/*.py"}).split("\n") == everywhere
    assert glob.run(ctx, {"pattern": "*.py"}).split("\n") == everywhere  # rg --glob: any depth
    assert glob.run(ctx, {"pattern": "pkg/*.py"}) == paths["pkg/mid.py"]  # a "/" anchors
    assert glob.run(ctx, {"pattern": "*.{md,txt}"}) == paths["notes.md"]
    assert glob.run(ctx, {"pattern": "pkg/**"}).split("\n") == everywhere[1:]


def test_glob_path_absolute_pattern_and_no_match(ctx: ToolContext) -> None:
    paths = make(ctx.cwd, {"pkg/a.py": "", "pkg/b.txt": "", "a.py": ""})
    assert glob.run(ctx, {"pattern": "*.py", "path": "pkg"}) == paths["pkg/a.py"]
    assert glob.run(ctx, {"pattern": f"{ctx.cwd}/pkg/*.py"}) == paths["pkg/a.py"]
    assert glob.run(ctx, {"pattern": f"{ctx.cwd}/pkg/b.txt"}) == paths["pkg/b.txt"]
    assert glob.run(ctx, {"pattern": "**/*.rs"}) == "No files found"
    assert glob.run(ctx, {"pattern": "missing/*.py"}) == "No files found"
    assert glob.run(ctx, {"pattern": f"{ctx.cwd}/missing/*.py"}) == "No files found"


def test_glob_skips_version_control_folders(ctx: ToolContext) -> None:
    paths = make(
        ctx.cwd, {".git/config.py": "", "sub/.git/x.py": "", ".hg/y.py": "", "real.py": ""}
    )
    assert glob.run(ctx, {"pattern": "**/*.py"}) == paths["real.py"]


def test_glob_truncates_at_100(ctx: ToolContext) -> None:
    paths = make(ctx.cwd, {f"f{n:03}.txt": "" for n in range(120)})
    out = glob.run(ctx, {"pattern": "*.txt"}).split("\n")
    assert out[:100] == [paths[f"f{n:03}.txt"] for n in range(100)]
    assert out[100:] == [
        "(Showing 100 of 120 matching files; 20 more are not listed. Narrow the pattern or "
        "path to see the rest.)"
    ]


def test_glob_bad_pattern(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"error parsing glob '\*\.\{a,b': unclosed alternate"):
        glob.run(ctx, {"pattern": "*.{a,b"})


def test_glob_missing_directory(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Directory does not exist"):
        glob.run(ctx, {"pattern": "*", "path": str(ctx.cwd / "nope")})
    with pytest.raises(ToolError, match="pattern"):
        glob.run(ctx, {"path": str(ctx.cwd)})


# --- Grep ---


@pytest.fixture
def tree(ctx: ToolContext) -> dict[str, str]:
    return make(
        ctx.cwd,
        {
            "a.py": "import os\n\ndef alpha():\n    return Needle\n",
            "b.ts": "const needle = 1;\nconst other = 2;\n",
            "c.tsx": "export const NEEDLE = <div/>;\n",
            "docs/guide.md": "no match here\n",
            "docs/notes.md": "needle one\nfiller\nneedle two\n",
        },
    )


def test_grep_files_with_matches_newest_first(ctx: ToolContext, tree: dict[str, str]) -> None:
    out = grep.run(ctx, {"pattern": "needle"})
    assert out == f"Found 2 files\n{tree['docs/notes.md']}\n{tree['b.ts']}"
    assert grep.run(ctx, {"pattern": "needle", "glob": "*.ts"}) == f"Found 1 file\n{tree['b.ts']}"
    assert grep.run(ctx, {"pattern": "absent"}) == "No files found"


def test_grep_case_insensitive(ctx: ToolContext, tree: dict[str, str]) -> None:
    out = grep.run(ctx, {"pattern": "needle", "-i": True})
    assert out.split("\n") == [
        "Found 4 files",
        tree["docs/notes.md"],
        tree["c.tsx"],
        tree["b.ts"],
        tree["a.py"],
    ]


def test_grep_content(ctx: ToolContext, tree: dict[str, str]) -> None:
    out = grep.run(ctx, {"pattern": "needle", "output_mode": "content", "-i": True})
    assert out.split("\n") == [
        f"{tree['a.py']}:4:    return Needle",
        f"{tree['b.ts']}:1:const needle = 1;",
        f"{tree['c.tsx']}:1:export const NEEDLE = <div/>;",
        f"{tree['docs/notes.md']}:1:needle one",
        f"{tree['docs/notes.md']}:3:needle two",
    ]
    plain = grep.run(ctx, {"pattern": "two", "output_mode": "content", "-n": False})
    assert plain == f"{tree['docs/notes.md']}:needle two"
    assert grep.run(ctx, {"pattern": "absent", "output_mode": "content"}) == "No matches found"
    only = grep.run(ctx, {"pattern": r"ne+dle \w+", "output_mode": "content", "-o": True})
    assert only.split("\n") == [
        f"{tree['docs/notes.md']}:1:needle one",
        f"{tree['docs/notes.md']}:3:needle two",
    ]
    parts = grep.run(
        ctx, {"pattern": "[a-z]+", "output_mode": "content", "-o": True, "path": "b.ts"}
    )
    assert parts.split("\n")[:3] == ["1:const", "1:needle", "2:const"]  # a file: no path


def test_grep_context_lines(ctx: ToolContext) -> None:
    path = make(ctx.cwd, {"f.txt": "".join(f"l{n}\n" for n in range(1, 13))})["f.txt"]
    out = grep.run(ctx, {"pattern": "^l(3|5|10)$", "output_mode": "content", "-C": 1})
    assert out.split("\n") == [
        f"{path}-2-l2",
        f"{path}:3:l3",
        f"{path}-4-l4",
        f"{path}:5:l5",
        f"{path}-6-l6",
        "--",
        f"{path}-9-l9",
        f"{path}:10:l10",
        f"{path}-11-l11",
    ]
    after = grep.run(ctx, {"pattern": "l12|l1$", "output_mode": "content", "-A": 1})
    assert after.split("\n") == [f"{path}:1:l1", f"{path}-2-l2", "--", f"{path}:12:l12"]
    before = grep.run(ctx, {"pattern": "l2$", "output_mode": "content", "-B": 5, "-A": 0})
    assert before.split("\n") == [f"{path}-1-l1", f"{path}:2:l2"]
    same = grep.run(ctx, {"pattern": "l5$", "output_mode": "content", "context": 1})
    assert same.split("\n") == [f"{path}-4-l4", f"{path}:5:l5", f"{path}-6-l6"]
    # Claude Code's precedence: context, then -C, then -B and -A
    wins = grep.run(
        ctx, {"pattern": "l5$", "output_mode": "content", "context": 0, "-C": 2, "-B": 3}
    )
    assert wins == f"{path}:5:l5"
    ignored = grep.run(ctx, {"pattern": "l5$", "output_mode": "count", "-C": 2})
    assert ignored.startswith(f"{path}:1\n")


def test_grep_count(ctx: ToolContext, tree: dict[str, str]) -> None:
    out = grep.run(ctx, {"pattern": "needle", "output_mode": "count", "-i": True})
    assert out == (
        f"{tree['a.py']}:1\n{tree['b.ts']}:1\n{tree['c.tsx']}:1\n{tree['docs/notes.md']}:2"
        "\n\nFound 5 total occurrences across 4 files."
    )
    assert grep.run(ctx, {"pattern": "absent", "output_mode": "count"}) == (
        "No matches found\n\nFound 0 total occurrences across 0 files."
    )
    one = grep.run(ctx, {"pattern": "one", "output_mode": "count"})
    assert one == f"{tree['docs/notes.md']}:1\n\nFound 1 total occurrence across 1 file."


def test_grep_glob_and_type_filters(ctx: ToolContext, tree: dict[str, str]) -> None:
    def files(**options: object) -> list[str]:
        out = grep.run(ctx, {"pattern": "needle", "-i": True, **options})
        return sorted(out.split("\n")[1:])

    assert files(glob="*.py") == [tree["a.py"]]
    assert files(glob="*.{ts,tsx}") == sorted([tree["b.ts"], tree["c.tsx"]])
    assert files(glob="docs/*.md") == [tree["docs/notes.md"]]
    assert files(glob="!*.md") == sorted([tree["a.py"], tree["b.ts"], tree["c.tsx"]])
    assert files(type="ts") == sorted([tree["b.ts"], tree["c.tsx"]])
    assert files(type="md") == [tree["docs/notes.md"]]
    assert files(type="py", path="docs") == []
    assert files(glob="*.py,*.ts") == sorted([tree["a.py"], tree["b.ts"]])  # Claude Code splits
    assert files(glob="*.py *.tsx") == sorted([tree["a.py"], tree["c.tsx"]])
    with pytest.raises(ToolError, match="unrecognized file type: cobol"):
        grep.run(ctx, {"pattern": "x", "type": "cobol"})
    with pytest.raises(ToolError, match="error parsing glob"):
        grep.run(ctx, {"pattern": "x", "glob": "a["})


def test_grep_a_single_file_and_a_missing_path(ctx: ToolContext, tree: dict[str, str]) -> None:
    out = grep.run(ctx, {"pattern": "needle", "path": "docs/notes.md", "output_mode": "count"})
    assert out.startswith(f"{tree['docs/notes.md']}:2\n")
    lines = grep.run(ctx, {"pattern": "needle", "path": "docs/notes.md", "output_mode": "content"})
    assert lines == "1:needle one\n3:needle two"  # Claude Code leaves out the path of a file
    # Claude Code's own check of a file named outright: globs it fails, or any type
    assert grep.run(ctx, {"pattern": "needle", "path": "docs/notes.md", "glob": "*.py"}) == (
        "No files found"
    )
    assert grep.run(ctx, {"pattern": "needle", "path": "docs/notes.md", "glob": "*.md"}) == (
        f"Found 1 file\n{tree['docs/notes.md']}"
    )
    assert grep.run(ctx, {"pattern": "needle", "path": "docs/notes.md", "type": "md"}) == (
        "No files found"
    )
    with pytest.raises(ToolError, match="Path does not exist"):
        grep.run(ctx, {"pattern": "x", "path": "nowhere"})


def test_grep_bad_regex_names_the_problem(ctx: ToolContext) -> None:
    make(ctx.cwd, {"a.txt": "x\n"})
    with pytest.raises(ToolError, match=r"Invalid regular expression 'foo\(': "):
        grep.run(ctx, {"pattern": "foo("})
    with pytest.raises(ToolError, match=r"Invalid regular expression 'a\(\?=b\)': look-around"):
        grep.run(ctx, {"pattern": "a(?=b)"})


def test_grep_validates_its_input(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="output_mode"):
        grep.run(ctx, {"pattern": "x", "output_mode": "lines"})
    with pytest.raises(ToolError, match="-C"):
        grep.run(ctx, {"pattern": "x", "-C": -1})


def test_grep_skips_git_and_binary_files(ctx: ToolContext) -> None:
    paths = make(ctx.cwd, {".git/HEAD": "needle\n", "src/x.txt": "needle\n"})
    (ctx.cwd / "blob.bin").write_bytes(b"needle\x00\x01")
    assert grep.run(ctx, {"pattern": "needle"}) == f"Found 1 file\n{paths['src/x.txt']}"


def test_grep_multiline(ctx: ToolContext) -> None:
    path = make(ctx.cwd, {"f.py": "def f(\n    a,\n):\n    pass\nother\n"})["f.py"]
    assert grep.run(ctx, {"pattern": r"f\(.*\):"}) == "No files found"
    out = grep.run(ctx, {"pattern": r"f\(.*?\):", "multiline": True, "output_mode": "content"})
    assert out.split("\n") == [f"{path}:1:def f(", f"{path}:2:    a,", f"{path}:3:):"]
    count = grep.run(ctx, {"pattern": r"^\w+$", "multiline": True, "output_mode": "count"})
    assert count.startswith(f"{path}:1\n")


def test_grep_head_limit_and_offset(ctx: ToolContext) -> None:
    path = make(ctx.cwd, {"f.txt": "".join(f"hit {n}\n" for n in range(1, 8))})["f.txt"]
    options = {"pattern": "hit", "output_mode": "content", "head_limit": 3}
    first = grep.run(ctx, options).split("\n")
    assert first[:3] == [f"{path}:{n}:hit {n}" for n in (1, 2, 3)]
    assert first[3:] == ["", "[Showing results with pagination = limit: 3]"]
    second = grep.run(ctx, {**options, "offset": 3}).split("\n")
    assert second[:3] == [f"{path}:{n}:hit {n}" for n in (4, 5, 6)]
    assert second[-1] == "[Showing results with pagination = limit: 3, offset: 3]"
    last = grep.run(ctx, {**options, "offset": 6})
    assert last == f"{path}:7:hit 7\n\n[Showing results with pagination = offset: 6]"
    everything = grep.run(ctx, {**options, "head_limit": 0})
    assert everything.split("\n") == [f"{path}:{n}:hit {n}" for n in range(1, 8)]
    beyond = grep.run(ctx, {**options, "offset": 9})
    assert beyond == "No entries at this offset\n\n[Showing results with pagination = offset: 9]"


def test_grep_pages_files_and_counts(ctx: ToolContext) -> None:
    paths = make(ctx.cwd, {f"f{n}.txt": "hit\n" for n in range(5)})
    files = grep.run(ctx, {"pattern": "hit", "head_limit": 2, "offset": 1}).split("\n")
    assert files == ["Found 2 files limit: 2, offset: 1", paths["f3.txt"], paths["f2.txt"]]
    assert grep.run(ctx, {"pattern": "hit", "offset": 5}) == (
        "No entries at this offset. [Showing results with pagination = offset: 5]"
    )
    counts = grep.run(ctx, {"pattern": "hit", "output_mode": "count", "head_limit": 1})
    assert counts == (
        f"{paths['f0.txt']}:1\n\nFound 5 total occurrences across 5 files. "
        "with pagination = limit: 1"
    )
    with pytest.raises(ToolError, match="head_limit"):
        grep.run(ctx, {"pattern": "hit", "head_limit": -1})
