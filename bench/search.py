"""Glob and Grep over a 50,000-file repository, through swarm's tools and through ripgrep.

What it measures
    A git repository is built in a temporary folder: ``--files`` files in all (50,000 by
    default), four fifths of them in ``node_modules/`` (ignored by the ``.gitignore``), the rest
    source files (``src/``: Python, JavaScript, Markdown, 30 lines each). Then each search below
    runs ``--runs`` times (the median is reported) through swarm's `Glob` and `Grep` tools
    (`teammate.tools.search`, called in this process as the teammate calls them), once with the
    engine they choose (``rg`` when it is on PATH) and once with the pure-Python engine
    (``SWARM_SEARCH_ENGINE=python``, what a machine without rg runs), and through ``rg``; the
    three take turns in each round, so a machine busy with something else slows them alike:

    * Glob ``**/*.js`` (Claude Code's Glob does not honour ignore files: it lists node_modules),
      ``src/**/*.py``, ``*.md``;
    * Grep ``TODO`` (files with matches), ``def \\w+\\(`` (content, line numbers, every line),
      ``import`` (count), ``class`` with ``-i`` and ``type: py``.

Baseline
    ``rg`` run directly with the command line Claude Code 2.1.330 runs for the same search
    (``rg --no-config --files --null --glob P --sort=modified --no-ignore --hidden`` for Glob;
    ``rg --no-config --hidden --no-follow --glob !.git ... --max-columns 500`` with ``-l``,
    ``-c -H`` or ``--json -n`` for Grep), its output read whole, in the same run on the same
    tree. The ratio is swarm's time over ripgrep's; the target is within 2x. The results are
    checked against ripgrep's (the same files, counts or lines; Glob's 100 oldest and its total):
    ``mismatches`` counts the searches whose results differ.

Everything runs in a temporary folder, removed at the end. The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from teammate.tools.base import ToolContext, ToolOutput, text_of
from teammate.tools.patterns import VCS_DIRECTORIES
from teammate.tools.search import glob, grep

VCS = [arg for name in VCS_DIRECTORIES for arg in ("--glob", f"!{name}")]
GREP_FLAGS = ["--no-config", "--hidden", "--no-follow", *VCS, "--max-columns", "500"]


def build_tree(root: Path, files: int) -> None:
    """A git repository of `files` files: 80% in node_modules/ (ignored), 20% in src/."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("node_modules/\n*.log\n")
    ignored = files * 4 // 5
    for index in range(ignored):
        folder = root / "node_modules" / f"pkg{index // 100}" / ("lib" if index % 2 else "dist")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{index}.js").write_text(f"module.exports = {index}; // TODO vendored\n")
    for index in range(files - ignored):
        folder = root / "src" / f"area{index % 20}" / f"part{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = ("py", "js", "md")[index % 3]
        (folder / f"f{index}.{kind}").write_text(source(index, kind))


def source(index: int, kind: str) -> str:
    lines = []
    for line in range(30):
        if kind == "py":
            text = f"def handler_{index}_{line}(value):" if line % 5 == 0 else "    return value"
            text = "import os" if line == 0 else text
        elif kind == "js":
            text = f"export function f{index}_{line}() {{ return {line}; }}"
        else:
            text = f"Notes {index}: line {line} of the class of things"
        lines.append(text + (" # TODO: tidy" if (index + line) % 97 == 0 else ""))
    return "\n".join(lines) + "\n"


@dataclass
class Search:
    key: str  # its figures' names in the key=value line
    label: str
    run: Callable[[ToolContext], ToolOutput]
    rg_args: list[str]
    parse: Callable[[str, Path], set[str]]  # the tool's output as comparable items
    rg_parse: Callable[[bytes, Path], set[str]]


def _glob_items(out: str, root: Path) -> set[str]:
    """The files Glob listed, and how many matched in all (its note says when over 100)."""
    items = {line for line in out.splitlines() if line.startswith("/")}
    found = re.search(r"\(Showing \d+ of (\d+) matching files", out)
    return {*items, f"total={found.group(1) if found else len(items)}"}


def _rg_files(out: bytes, root: Path) -> set[str]:
    return {str(root / name) for name in out.decode().split("\0") if name}


def _rg_glob(out: bytes, root: Path) -> set[str]:
    """rg's files, cut as Glob cuts them: the 100 oldest (ties by path), and the total."""
    files = sorted(_rg_files(out, root), key=lambda path: (os.lstat(path).st_mtime_ns, path))
    return {*files[:100], f"total={len(files)}"}


def _files_items(out: str, root: Path) -> set[str]:
    return {line for line in out.splitlines()[1:] if line.startswith("/")}


def _count_items(out: str, root: Path) -> set[str]:
    return {line for line in out.splitlines() if line.startswith("/")}


def _rg_counts(out: bytes, root: Path) -> set[str]:
    items = set()
    for line in out.decode().splitlines():
        name, _, count = line.partition("\0")
        items.add(f"{root / name}:{count}")
    return items


def _content_items(out: str, root: Path) -> set[str]:
    return {line for line in out.splitlines() if line.startswith("/")}


def _rg_json_lines(out: bytes, root: Path) -> set[str]:
    """The matching lines of rg's --json output, as Grep writes them (path:number:text)."""
    lines = set()
    for raw in out.splitlines():
        event = json.loads(raw)
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = root / data["path"]["text"]
        texts = data["lines"]["text"].removesuffix("\n").split("\n")
        for offset, text in enumerate(texts):
            lines.add(f"{path}:{data['line_number'] + offset}:{text}")
    return lines


def searches() -> list[Search]:
    def globber(key: str, pattern: str) -> Search:
        return Search(
            key,
            f"Glob {pattern}",
            lambda ctx: glob.run(ctx, {"pattern": pattern}),
            [
                "--no-config",
                "--files",
                "--null",
                "--glob",
                pattern,
                "--sort=modified",
                "--no-ignore",
                "--hidden",
            ],
            _glob_items,
            _rg_glob,
        )

    content = {"pattern": r"def \w+\(", "output_mode": "content", "head_limit": 0}
    return [
        globber("glob_js", "**/*.js"),
        globber("glob_src_py", "src/**/*.py"),
        globber("glob_md", "*.md"),
        Search(
            "grep_files",
            "Grep TODO (files)",
            lambda ctx: grep.run(ctx, {"pattern": "TODO", "head_limit": 0}),
            [*GREP_FLAGS, "-l", "--null", "TODO"],
            _files_items,
            _rg_files,
        ),
        Search(
            "grep_content",
            r"Grep def \w+\( (content)",
            lambda ctx: grep.run(ctx, content),
            [*GREP_FLAGS, "--json", "-n", r"def \w+\("],
            _content_items,
            _rg_json_lines,
        ),
        Search(
            "grep_count",
            "Grep import (count)",
            lambda ctx: grep.run(
                ctx, {"pattern": "import", "output_mode": "count", "head_limit": 0}
            ),
            [*GREP_FLAGS, "-c", "-H", "--null", "import"],
            _count_items,
            _rg_counts,
        ),
        Search(
            "grep_type",
            "Grep -i class, type py",
            lambda ctx: grep.run(
                ctx, {"pattern": "class", "-i": True, "type": "py", "head_limit": 0}
            ),
            [*GREP_FLAGS, "-l", "--null", "-i", "--type", "py", "class"],
            _files_items,
            _rg_files,
        ),
    ]


def text(output: ToolOutput) -> str:
    return output if isinstance(output, str) else text_of(output)


def with_engine(engine: str, action: Callable[[], str]) -> Callable[[], str]:
    def run() -> str:
        os.environ["SWARM_SEARCH_ENGINE"] = engine
        try:
            return action()
        finally:
            os.environ.pop("SWARM_SEARCH_ENGINE", None)

    return run


def interleaved(actions: dict[str, Callable[[], Any]], runs: int) -> dict[str, tuple[float, Any]]:
    """Each action's median time over `runs` rounds, the actions taking turns in each round (a
    machine busy with something else slows them alike), and its last result."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    results: dict[str, Any] = {}
    for _ in range(runs):
        for name, action in actions.items():
            started = time.perf_counter()
            results[name] = action()
            times[name].append(time.perf_counter() - started)
    return {name: (statistics.median(times[name]), results[name]) for name in actions}


def _variants(item: Search, ctx: ToolContext, rg: str | None) -> dict[str, Callable[[], Any]]:
    root = ctx.cwd
    variants: dict[str, Callable[[], Any]] = {}
    if rg is not None:
        variants["rg"] = lambda: (
            subprocess.run(
                [rg, *item.rg_args, "."], cwd=root, capture_output=True, check=False
            ).stdout
        )
    variants["auto"] = with_engine("auto", lambda: text(item.run(ctx)))
    variants["python"] = with_engine("python", lambda: text(item.run(ctx)))
    return variants


def measure(root: Path, rg: str | None, runs: int) -> dict[str, Any]:
    ctx = ToolContext(cwd=root, output_limit=1 << 30)
    pairs: dict[str, Any] = {}
    worst = {"auto": 0.0, "python": 0.0}
    mismatches = 0
    print(f"{'search':32} {'rg':>9} {'swarm':>9} {'ratio':>6} {'python':>9} {'ratio':>6}")
    for item in searches():
        timings = interleaved(_variants(item, ctx, rg), runs)
        rg_time, rg_output = timings.get("rg", (None, None))
        rg_items = item.rg_parse(rg_output, root) if rg_output is not None else None
        row = [f"{item.label:32}", f"{rg_time * 1000:7.1f}ms" if rg_time else f"{'-':>9}"]
        if rg_time is not None:
            pairs[f"{item.key}_rg_ms"] = round(rg_time * 1000, 1)
        for engine in ("auto", "python"):
            took, out = timings[engine]
            if rg_items is not None and item.parse(out, root) != rg_items:
                mismatches += 1
                print(f"  mismatch ({engine}): not what rg found")
            ratio = took / rg_time if rg_time else None
            row += [f"{took * 1000:7.1f}ms", f"{ratio:5.2f}x" if ratio is not None else f"{'-':>6}"]
            key = item.key if engine == "auto" else f"{item.key}_python"
            pairs[f"{key}_ms"] = round(took * 1000, 1)
            worst[engine] = max(worst[engine], ratio or 0.0)
        print(" ".join(row))
    pairs["worst_ratio"] = round(worst["auto"], 2)
    pairs["python_worst_ratio"] = round(worst["python"], 2)
    pairs["mismatches"] = mismatches
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50_000, help="files in the tree")
    parser.add_argument("--runs", type=int, default=5, help="runs of each search (median)")
    args = parser.parse_args()
    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory(prefix="swarm-bench-search-") as scratch:
        root = Path(scratch) / "repo"
        started = time.perf_counter()
        build_tree(root, args.files)
        print(
            f"a git repository of {args.files} files ({args.files * 4 // 5} in node_modules/, "
            f"ignored), built in {time.perf_counter() - started:.1f} s"
        )
        print(f"ripgrep: {rg or 'not installed (no baseline)'}; median of {args.runs} runs\n")
        pairs = {"files": args.files, **measure(root, rg, args.runs)}
        verdict = "n/a" if rg is None else ("ok" if pairs["worst_ratio"] <= 2.0 else "MISSED")
        print(f"\ntarget: swarm's tools within 2x of rg: {verdict}")
    print(" ".join(f"{key}={value}" for key, value in pairs.items()))


if __name__ == "__main__":
    main()
