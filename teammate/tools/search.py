"""Claude Code's search tools for the Claude teammate: `Glob` (files by name) and `Grep` (files by
content, with Python regular expressions), both in pure Python.

This module owns the two tools and the three output forms of `Grep`; the glob dialect they share
and the walk of a directory tree are `teammate.tools.patterns`.
"""

from __future__ import annotations

import bisect
import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from protocols import safefs
from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.files import clip, split_lines
from teammate.tools.patterns import FileFilter, GlobPattern, split_literal_prefix, walk_files

GLOB_LIMIT = 100
MAX_COLUMNS = 500


def _newest_first(paths: list[str]) -> list[str]:
    stamped = []
    for path in paths:
        try:
            stamped.append((-os.stat(path).st_mtime, path))
        except OSError:
            continue
    return [path for _, path in sorted(stamped)]


def _directory(ctx: ToolContext, path: str | None) -> Path:
    directory = ctx.resolve(path) if path else ctx.cwd
    if not directory.exists():
        raise ToolError(f"Directory does not exist: {directory}")
    if not directory.is_dir():
        raise ToolError(f"Not a directory: {directory}")
    return directory


@tool(
    "Glob",
    "Fast file pattern matching for any codebase size. Supports glob patterns like "
    '"**/*.js", "src/**/*.ts" or "*.{ts,tsx}". Returns the absolute paths of matching files, '
    f"most recently modified first (at most {GLOB_LIMIT}). Use it to find files by name.",
    kind="read",
)
def glob(
    ctx: ToolContext,
    pattern: Annotated[str, Field(description="The glob pattern to match files against")],
    path: Annotated[
        str | None,
        Field(description="The directory to search in; omit it for the current working directory"),
    ] = None,
) -> str:
    base = _directory(ctx, path)
    literal, rest = split_literal_prefix(pattern)
    root = base / literal if literal else base  # an absolute prefix replaces `base`
    if not rest or not root.is_dir():
        return "No files found"
    matcher = GlobPattern(rest)
    found = [
        os.path.normpath(absolute)
        for absolute, relative in walk_files(root, matcher.max_depth)
        if matcher.matches(relative)
    ]
    if not found:
        return "No files found"
    ordered = _newest_first(found)
    lines = ordered[:GLOB_LIMIT]
    if len(ordered) > GLOB_LIMIT:
        lines.append("(Results are truncated. Consider using a more specific path or pattern.)")
    return "\n".join(lines)


def _matching_lines(
    regex: re.Pattern[str], text: str, lines: list[str], multiline: bool
) -> tuple[list[int], int]:
    """The (0-based, sorted) numbers of the `lines` of `text` with a match, and the count to
    report: the matching lines, or with `multiline` the matches (one may span several lines)."""
    if not multiline:
        found = [number for number, line in enumerate(lines) if regex.search(line)]
        return found, len(found)
    newlines = [index for index, char in enumerate(text) if char == "\n"]
    matched: set[int] = set()
    count = 0
    for match in regex.finditer(text):
        count += 1
        first = bisect.bisect_left(newlines, match.start())
        last = bisect.bisect_left(newlines, max(match.end() - 1, match.start()))
        matched.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(matched), count


def _read_text(path: str) -> str | None:
    """A file's text, or None for one that cannot be read or is binary (has a NUL byte)."""
    try:
        data = safefs.read_regular(path)
    except OSError:
        return None
    return None if b"\0" in data else data.decode("utf-8", errors="replace")


def _cut(line: str) -> str:
    return line if len(line) <= MAX_COLUMNS else line[:MAX_COLUMNS] + " [...]"


def _page(entries: list[str], offset: int, head_limit: int) -> tuple[list[str], str]:
    """`entries` after skipping `offset` and keeping `head_limit` (0: all), and a note saying
    how to see the rest when some were left out."""
    end = len(entries) if head_limit == 0 else offset + head_limit
    shown = entries[offset:end]
    if end >= len(entries):
        return shown, ""
    return shown, f"\n\n(Results truncated: pass offset={end} to see more.)"


def _search_targets(ctx: ToolContext, path: str | None, filter_: FileFilter) -> list[str]:
    target = ctx.resolve(path) if path else ctx.cwd
    if not target.exists():
        raise ToolError(f"Path does not exist: {target}")
    if not target.is_dir():
        return [os.path.abspath(target)]  # a file named outright is searched whatever the filters
    return [absolute for absolute, relative in walk_files(target) if filter_.accepts(relative)]


def _content_lines(
    path: str, lines: list[str], matched: list[int], before: int, after: int, numbers: bool
) -> list[list[str]]:
    """The output lines for one file, as groups of adjacent lines (a group per match, merged
    where their context touches)."""
    groups: list[list[str]] = []
    matched_set = set(matched)
    spans: list[list[int]] = []
    for line in matched:
        start, end = max(line - before, 0), min(line + after, len(lines) - 1)
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    for start, end in spans:
        group = []
        for line in range(start, end + 1):
            mark = ":" if line in matched_set else "-"
            number = f"{line + 1}{mark}" if numbers else ""
            group.append(f"{path}{mark}{number}{_cut(lines[line])}")
        groups.append(group)
    return groups


@tool(
    "Grep",
    "A powerful search tool over file contents, with Python regular expressions (re syntax, "
    'e.g. "log.*Error", "def \\w+"). Filter files with glob (e.g. "*.js", "**/*.{ts,tsx}") '
    'or type (e.g. "py", "js", "rust"). output_mode "content" shows matching lines (with -A, '
    '-B, -C context and -n line numbers), "files_with_matches" (the default) shows file '
    'paths, "count" shows the number of matching lines per file. Use multiline for patterns '
    "that span lines. Use it instead of running grep or rg with Bash.",
    kind="read",
)
def grep(
    ctx: ToolContext,
    pattern: Annotated[
        str, Field(description="The regular expression to search for in file contents")
    ],
    path: Annotated[
        str | None,
        Field(description="The file or directory to search in (default: the working directory)"),
    ] = None,
    glob: Annotated[
        str | None,
        Field(description='Glob pattern to filter files, e.g. "*.js" or "*.{ts,tsx}"'),
    ] = None,
    output_mode: Annotated[
        Literal["content", "files_with_matches", "count"],
        Field(
            description='"content" shows matching lines, "files_with_matches" shows file '
            'paths (the default), "count" shows match counts'
        ),
    ] = "files_with_matches",
    before: Annotated[
        int | None,
        Field(alias="-B", ge=0, description="Lines to show before each match (content mode)"),
    ] = None,
    after: Annotated[
        int | None,
        Field(alias="-A", ge=0, description="Lines to show after each match (content mode)"),
    ] = None,
    around: Annotated[
        int | None,
        Field(alias="-C", ge=0, description="Lines to show before and after each match"),
    ] = None,
    context: Annotated[
        int | None, Field(ge=0, description="Lines to show before and after each match")
    ] = None,
    line_numbers: Annotated[
        bool, Field(alias="-n", description="Show line numbers in content mode (default true)")
    ] = True,
    ignore_case: Annotated[bool, Field(alias="-i", description="Case-insensitive search")] = False,
    file_type: Annotated[
        str | None,
        Field(alias="type", description='File type to search, e.g. "py", "js", "go", "rust"'),
    ] = None,
    head_limit: Annotated[
        int,
        Field(ge=0, description="Show only the first N lines or entries (default 250; 0: all)"),
    ] = 250,
    offset: Annotated[
        int, Field(ge=0, description="Skip the first N lines or entries before head_limit")
    ] = 0,
    multiline: Annotated[
        bool,
        Field(description="Let patterns span lines; . also matches newlines (default false)"),
    ] = False,
) -> str:
    flags = (re.IGNORECASE if ignore_case else 0) | (re.DOTALL | re.MULTILINE if multiline else 0)
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from None
    files = _search_targets(ctx, path, FileFilter(glob, file_type))

    results: list[tuple[str, list[str], list[int], int]] = []
    for file in files:
        text = _read_text(file)
        if text is None:
            continue
        lines = split_lines(text)
        matched, count = _matching_lines(regex, text, lines, multiline)
        if matched:
            results.append((file, lines, matched, count))

    if output_mode == "files_with_matches":
        if not results:
            return "No files found"
        ordered = _newest_first([file for file, *_ in results])
        shown, note = _page(ordered, offset, head_limit)
        return clip(f"Found {len(ordered)} files\n" + "\n".join(shown) + note, ctx.output_limit)

    results.sort()
    if not results:
        return "No matches found"
    if output_mode == "count":
        entries = [f"{file}:{count}" for file, _, _, count in results]
        shown, note = _page(entries, offset, head_limit)
        total = sum(count for *_, count in results)
        summary = f"\n\nFound {total} total occurrences across {len(results)} files."
        return clip("\n".join(shown) + summary + note, ctx.output_limit)

    spread = around if around is not None else (context or 0)
    before = spread if before is None else before
    after = spread if after is None else after
    output: list[str] = []
    for file, lines, matched, _ in results:
        for group in _content_lines(file, lines, matched, before, after, line_numbers):
            if output and (before or after):
                output.append("--")
            output.extend(group)
    shown, note = _page(output, offset, head_limit)
    return clip("\n".join(shown) + note, ctx.output_limit)
