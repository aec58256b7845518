"""Claude Code's search tools for the Claude teammate: `Glob` (files by name) and `Grep` (files by
content, with Python regular expressions), both in pure Python.

This module owns the glob dialect the two share (``*``, ``?``, ``[...]``, ``**`` for any number
of directories, ``{a,b}`` alternatives), the walk of a directory tree (which never enters a
``.git`` directory) and the three output forms of `Grep`.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.files import clip, split_lines

GLOB_LIMIT = 100
MAX_COLUMNS = 500
SKIPPED_DIRECTORIES = frozenset({".git"})
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": (".py", ".pyi"),
    "js": (".js", ".jsx", ".mjs", ".cjs"),
    "ts": (".ts", ".tsx", ".mts", ".cts"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
    "md": (".md", ".markdown"),
    "json": (".json",),
    "yaml": (".yaml", ".yml"),
    "toml": (".toml",),
    "sh": (".sh", ".bash", ".zsh"),
    "html": (".html", ".htm"),
    "css": (".css", ".scss"),
    "txt": (".txt",),
}


def expand_braces(pattern: str) -> list[str]:
    """``a.{ts,tsx}`` as ``["a.ts", "a.tsx"]``; nested and repeated groups multiply out, and a
    brace group without a comma stays literal."""
    for start, char in enumerate(pattern):
        if char != "{":
            continue
        depth, commas = 0, []
        for index in range(start, len(pattern)):
            if pattern[index] == "{":
                depth += 1
            elif pattern[index] == "}":
                depth -= 1
                if depth == 0:
                    break
            elif pattern[index] == "," and depth == 1:
                commas.append(index)
        else:
            return [pattern]  # unclosed: the rest is literal
        if not commas:
            continue
        bounds = [start, *commas, index]
        head, tail = pattern[:start], pattern[index + 1 :]
        return [
            expanded
            for left, right in itertools.pairwise(bounds)
            for expanded in expand_braces(head + pattern[left + 1 : right] + tail)
        ]
    return [pattern]


def _segment_regex(segment: str) -> str:
    out, index = [], 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
            while index + 1 < len(segment) and segment[index + 1] == "*":
                index += 1
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and index + 1 < len(segment):
            index += 1
            out.append(re.escape(segment[index]))
        elif char == "[" and (close := _class_end(segment, index)) is not None:
            body = segment[index + 1 : close]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            index = close
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int | None:
    index = start + 1
    if index < len(segment) and segment[index] in "!^":
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1  # a leading "]" is a member of the class
    close = segment.find("]", index)
    return None if close < 0 else close


def _glob_regex(pattern: str) -> str:
    segments = pattern.split("/")
    out = []
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
        else:
            out.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(out)


class GlobPattern:
    """A glob matched against a relative path written with ``/``."""

    def __init__(self, pattern: str) -> None:
        variants = expand_braces(pattern)
        self.regex = re.compile("(?:" + "|".join(_glob_regex(v) for v in variants) + r")\Z")
        self.has_directories = any("/" in v for v in variants)
        # how deep a walk must go: unbounded with "**", else one level per "/"
        self.max_depth = None if "**" in pattern else max(v.count("/") for v in variants)

    def matches(self, relative: str) -> bool:
        return self.regex.match(relative) is not None


def walk_files(root: Path, max_depth: int | None = None) -> Iterator[tuple[str, str]]:
    """Each file under `root` as (absolute path, path relative to `root` with ``/``), never
    entering a ``.git`` directory nor following a symlinked directory."""
    top = os.path.abspath(root)
    for directory, dirnames, filenames in os.walk(top):
        relative_dir = os.path.relpath(directory, top).replace(os.sep, "/")
        prefix = "" if relative_dir == "." else relative_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRECTORIES)
        if max_depth is not None and (prefix.count("/") >= max_depth):
            dirnames[:] = []
        for name in sorted(filenames):
            yield os.path.join(directory, name), prefix + name


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


def _split_literal_prefix(pattern: str) -> tuple[str, str]:
    """``src/app/**/*.ts`` as (``src/app``, ``**/*.ts``): the leading directories without glob
    characters, where the walk can start, and the rest (always at least the last segment)."""
    parts = pattern.split("/")
    literal = 0
    while literal < len(parts) - 1 and not any(c in parts[literal] for c in "*?[{\\"):
        literal += 1
    prefix = "/".join(parts[:literal]) or ("/" if pattern.startswith("/") else "")
    return prefix, "/".join(parts[literal:])


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
    literal, rest = _split_literal_prefix(pattern)
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


class _FileFilter:
    """Grep's `glob` and `type` options. A glob without ``/`` is matched against the file
    name, one with ``/`` against the path below the searched directory; several globs may be
    given separated by spaces, and one starting with ``!`` excludes."""

    def __init__(self, globs: str | None, file_type: str | None) -> None:
        self.include: list[GlobPattern] = []
        self.exclude: list[GlobPattern] = []
        for word in (globs or "").split():
            negated = word.startswith("!")
            (self.exclude if negated else self.include).append(GlobPattern(word.lstrip("!")))
        self.extensions: tuple[str, ...] | None = None
        if file_type is not None:
            if file_type not in FILE_TYPES:
                known = ", ".join(sorted(FILE_TYPES))
                raise ToolError(f"Unknown file type {file_type!r}; known types: {known}")
            self.extensions = FILE_TYPES[file_type]

    def accepts(self, relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        if self.extensions is not None and not name.endswith(self.extensions):
            return False

        def hit(pattern: GlobPattern) -> bool:
            return pattern.matches(relative if pattern.has_directories else name)

        if any(hit(p) for p in self.exclude):
            return False
        return not self.include or any(hit(p) for p in self.include)


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
        with open(path, "rb") as handle:
            data = handle.read()
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


def _search_targets(ctx: ToolContext, path: str | None, filter_: _FileFilter) -> list[str]:
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
    files = _search_targets(ctx, path, _FileFilter(glob, file_type))

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
