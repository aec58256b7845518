"""The shape of the code: how long its modules and functions are, and how tangled.

For the packages `protocols`, `teammate` and `swarm`: lines per module (max, median), the
functions longer than 60 lines, and radon's cyclomatic-complexity grades D and worse (radon is a
dev dependency). Repeated blocks are counted by the `duplicates` tool of the development
environment, not here. The last line is ``key=value`` pairs.

    .venv/bin/python bench/code_shape.py
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocols", "teammate", "swarm")
LONG_FUNCTION = 60


def modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def long_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > LONG_FUNCTION:
                found.append((node.name, length))
    return found


def main() -> None:
    files = modules()
    lines = {p: len(p.read_text().splitlines()) for p in files}
    longest = max(lines, key=lambda p: lines[p])
    median = statistics.median(lines.values())
    over = sum(n > 300 for n in lines.values())
    where = longest.relative_to(ROOT)
    print(f"{len(files)} modules; lines per module: max {lines[longest]} ({where}),")
    print(f"  median {median:.0f}, over 300 lines: {over}")
    long = [(p, name, n) for p in files for name, n in long_functions(p)]
    print(f"functions over {LONG_FUNCTION} lines: {len(long)}")
    for path, name, n in sorted(long, key=lambda item: -item[2]):
        print(f"  {n:4} {path.relative_to(ROOT)}:{name}")
    graded = [
        (p, block.name, block.complexity)
        for p in files
        for block in cc_visit(p.read_text())
        if cc_rank(block.complexity) in ("D", "E", "F")
    ]
    print(f"radon grade D or worse: {len(graded)}")
    for path, name, complexity in sorted(graded, key=lambda item: -item[2]):
        print(f"  {cc_rank(complexity)} {complexity:3} {path.relative_to(ROOT)}:{name}")
    print(
        f"modules={len(files)} max_lines={lines[longest]} "
        f"median_lines={statistics.median(lines.values()):.0f} "
        f"functions_over_{LONG_FUNCTION}={len(long)} radon_d_or_worse={len(graded)}"
    )


if __name__ == "__main__":
    main()
