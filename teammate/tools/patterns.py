"""The glob dialect and file walk shared by the `Glob` and `Grep` tools (`teammate.tools.search`).

Globs have ``*``, ``?``, ``[...]``, ``**`` for any number of directories and ``{a,b}``
alternatives. The walk of a directory tree never enters a ``.git`` directory. This module also
owns Grep's file filters: its ``glob`` option and the table of file types for its ``type``.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from teammate.tools.base import ToolError

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


def split_literal_prefix(pattern: str) -> tuple[str, str]:
    """``src/app/**/*.ts`` as (``src/app``, ``**/*.ts``): the leading directories without glob
    characters, where the walk can start, and the rest (always at least the last segment)."""
    parts = pattern.split("/")
    literal = 0
    while literal < len(parts) - 1 and not any(c in parts[literal] for c in "*?[{\\"):
        literal += 1
    prefix = "/".join(parts[:literal]) or ("/" if pattern.startswith("/") else "")
    return prefix, "/".join(parts[literal:])


class FileFilter:
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
