"""The glob dialects of the `Glob` and `Grep` tools (`teammate.tools.search`) and Grep's file
filters.

* ripgrep's ``--glob`` (Glob's pattern, Grep's ``glob`` option): gitignore-style globs
  (`teammate.tools.ignore`) matched against the path below the searched folder; a glob without
  ``/`` matches a name at any depth (``*.py`` finds ``a/b/c.py``, as ``rg --files --glob``
  does), one with ``/`` the whole path (``src/*.ts``); ``**``, ``{a,b}``; a ``!glob``
  excludes. They override ignore files. `Overrides` holds them in order: the last match wins.
* Grep's ``glob`` option split as Claude Code splits it (`grep_globs`) and its ``type``
  option, ripgrep's file types (`FileTypes`, the table in `teammate.tools.file_types`).
* minimatch-style globs (`GlobPattern`: a full match of a name or a path) for what Claude
  Code checks itself: whether a file named outright passes Grep's ``glob``.
"""

from __future__ import annotations

import itertools
import os
import re

from teammate.tools.base import ToolError
from teammate.tools.file_types import file_types
from teammate.tools.ignore import GlobList

VCS_DIRECTORIES = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")  # Claude Code's Grep excludes


class Overrides:
    """ripgrep's ``--glob`` list: `match` says whether a path is taken (a plain glob matched
    last), left out (a ``!glob`` matched last, or there are plain globs and none matches a
    file), or neither (None: the ignore rules decide)."""

    def __init__(self, globs: list[str]) -> None:
        self.globs = globs
        self.list = GlobList(globs)
        for _line, glob, why in self.list.errors:
            raise ToolError(f"error parsing glob '{glob}': {why}")
        self.plain = self.list.plain

    def match(self, relative: str, is_dir: bool) -> bool | None:
        verdict = self.list.match(relative + "/" if is_dir else relative)
        if verdict is None and self.plain and not is_dir:
            return False
        return verdict


def grep_globs(option: str | None) -> list[str]:
    """Grep's ``glob`` option as ripgrep globs, split as Claude Code splits it: at
    whitespace, and a word without both ``{`` and ``}`` at commas too."""
    globs: list[str] = []
    for word in (option or "").split():
        globs.extend([word] if "{" in word and "}" in word else word.split(","))
    return [glob for glob in globs if glob]


class FileTypes:
    """Grep's ``type`` option: the names of files of one of ripgrep's file types."""

    def __init__(self, name: str) -> None:
        known = file_types()
        if name not in known:
            raise ToolError(
                f"unrecognized file type: {name} (ripgrep's types include "
                "py, js, ts, rust, go, java, c, cpp, md, json, yaml, html, css, sh)"
            )
        self.list = GlobList(known[name])

    def matches(self, name: str) -> bool:
        return self.list.match(name) is True


def expand_braces(pattern: str) -> list[str]:
    """``a.{ts,tsx}`` as ``["a.ts", "a.tsx"]``; nested and repeated groups multiply out, and a
    brace group without a comma stays literal (minimatch's reading)."""
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
    """A minimatch-style glob: a full match of a path written with ``/``."""

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        variants = expand_braces(pattern)
        flags = re.IGNORECASE if ignore_case else 0
        source = "(?:" + "|".join(_glob_regex(v) for v in variants) + r")\Z"
        self.regex = re.compile(source, flags | re.DOTALL)

    def matches(self, relative: str) -> bool:
        return self.regex.match(relative) is not None


def file_passes_globs(path: str, globs: list[str], ignore_case: bool) -> bool:
    """Claude Code's own check of a file Grep is given outright: no ``!glob`` matches its name
    or its path, and some plain glob does if there are any."""
    candidates = (os.path.basename(path), path, path.lstrip("/"))

    def hit(glob: str) -> bool:
        pattern = GlobPattern(glob, ignore_case)
        return any(pattern.matches(candidate) for candidate in candidates)

    excluded = [glob[1:] for glob in globs if glob.startswith("!") and len(glob) > 1]
    wanted = [glob for glob in globs if glob and not glob.startswith("!")]
    if any(hit(glob) for glob in excluded):
        return False
    return not wanted or any(hit(glob) for glob in wanted)


def split_literal_prefix(pattern: str) -> tuple[str, str]:
    """``src/app/**/*.ts`` as (``src/app``, ``**/*.ts``): the leading folders without glob
    characters, where a walk can start, and the rest (always at least the last segment)."""
    parts = pattern.split("/")
    literal = 0
    while literal < len(parts) - 1 and not any(c in parts[literal] for c in "*?[]{}!\\"):
        literal += 1
    prefix = "/".join(parts[:literal]) or ("/" if pattern.startswith("/") else "")
    return prefix, "/".join(parts[literal:])
