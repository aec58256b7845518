"""The pure-Python walk of a folder tree for `Glob` and `Grep`, deciding each entry as ripgrep
does, and the deadline both tools search under.

This module owns the walk and its order of rules (ripgrep's): ``--glob`` overrides first (a
match takes or leaves out the path whatever the ignore files say), then the ignore files
(`teammate.tools.ignore`, when honoured), then the file type, then hidden names (a name
starting with ``.``) unless hidden entries are searched or a ``!`` line of an ignore file took
the path. Only regular files are yielded; a symbolic link is not followed nor yielded
(ripgrep's ``--no-follow``), nor is a FIFO, socket or device. The folder searched is never
itself filtered.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from teammate.tools.ignore import IgnoreDir, IgnoreNotes, IgnoreRules, ignored
from teammate.tools.patterns import (
    VCS_DIRECTORIES,
    FileTypes,
    Overrides,
    split_literal_prefix,
)


class Deadline:
    """When a search must stop: `expired` once `seconds` have passed on `clock`."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.at = clock() + seconds
        self.reached = False

    def expired(self) -> bool:
        if not self.reached and self.clock() >= self.at:
            self.reached = True
        return self.reached

    def remaining(self) -> float:
        return 0.0 if self.expired() else max(0.0, self.at - self.clock())


@dataclass(frozen=True)
class WalkRules:
    """What a walk leaves out: `overrides` (``--glob``), ignore files (`ignore_files`), other
    file types (`types`), hidden entries (unless `hidden`)."""

    overrides: Overrides | None = None
    types: FileTypes | None = None
    ignore_files: bool = True
    hidden: bool = True

    def admits(self, node: IgnoreDir | None, path: str, relative: str, is_dir: bool) -> bool:
        """Whether the entry at `path` (`relative` to the searched folder) is walked."""
        if self.overrides is not None:
            verdict = self.overrides.match(relative, is_dir)
            if verdict is not None:
                return verdict
        whitelisted = False
        if node is not None:
            verdict = ignored(node, path, is_dir)
            if verdict is True:
                return False
            whitelisted = verdict is False
        name = relative.rpartition("/")[2]
        if self.types is not None and not is_dir:
            if not self.types.matches(name):
                return False
            whitelisted = True
        return self.hidden or whitelisted or not name.startswith(".")


@dataclass(frozen=True)
class Found:
    """A regular file the walk yields: its path, its path below the searched folder, its
    entry (for its modification time)."""

    path: str
    relative: str
    entry: os.DirEntry[str]


def walk(
    root: str,
    rules: WalkRules,
    notes: IgnoreNotes,
    deadline: Deadline,
    start: str = "",
) -> Iterator[Found]:
    """The files below folder `root` that `rules` admit, until `deadline`; with `start` (a
    path below `root`, ``/``-separated) only those below it, its folders being admitted."""
    ignore = IgnoreRules(notes) if rules.ignore_files else None
    top = os.path.abspath(root)
    node = ignore.top(top) if ignore is not None else None
    if start:
        begun = _descend(top, start, rules, ignore, node)
        if begun is None:
            return
        top_dir, prefix, node = begun
    else:
        top_dir, prefix = top, ""
    stack: list[tuple[str, str, IgnoreDir | None, bool]] = [(top_dir, prefix, node, True)]
    while stack and not deadline.expired():
        directory, prefix, parent, first = stack.pop()
        entries = _entries(directory)
        if ignore is not None and not first:
            node = ignore.child(parent, directory, (entry.name for entry in entries))
        else:
            node = parent
        for entry in entries:
            relative = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if rules.admits(node, entry.path, relative, True):
                    stack.append((entry.path, relative + "/", node, False))
            elif entry.is_file(follow_symlinks=False) and rules.admits(
                node, entry.path, relative, False
            ):
                yield Found(entry.path, relative, entry)


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as listing:
            return list(listing)
    except OSError:
        return []  # gone, or not readable: ripgrep reports it and goes on


def _descend(
    top: str,
    start: str,
    rules: WalkRules,
    ignore: IgnoreRules | None,
    node: IgnoreDir | None,
) -> tuple[str, str, IgnoreDir | None] | None:
    """The folder `start` below `top` with its rules, if a walk from `top` would reach it."""
    directory, relative = top, ""
    for name in start.strip("/").split("/"):
        path = os.path.join(directory, name)
        relative += name
        if not os.path.isdir(path) or os.path.islink(path):
            return None
        if not rules.admits(node, path, relative, True):
            return None
        if ignore is not None:
            node = ignore.child(node, path, _names(path))
        directory, relative = path, relative + "/"
    return directory, relative, node


def _names(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


@dataclass(frozen=True)
class GlobRequest:
    """One Glob search: the folder, the pattern (a ripgrep ``--glob``), and whether ignore
    files are honoured and hidden entries listed."""

    root: str
    pattern: str
    ignore_files: bool
    hidden: bool


@dataclass
class Listing:
    """What a Glob search found: (modification time in ns, path) pairs, whether the deadline
    cut it, and its notes on ignore files."""

    files: list[tuple[int, str]]
    timed_out: bool
    notes: list[str]


def python_glob(request: GlobRequest, deadline: Deadline) -> Listing:
    """Glob by the pure-Python walk (ripgrep's ``--files --glob PATTERN``)."""
    excluded = [f"!{name}" for name in VCS_DIRECTORIES]
    rules = WalkRules(
        Overrides([request.pattern, *excluded]), None, request.ignore_files, request.hidden
    )
    start = split_literal_prefix(request.pattern)[0].strip("/")
    if any(part in (".", "..", "") for part in start.split("/")):
        start = ""  # no path the walk yields has them: the glob matches nothing, as in rg
    notes = IgnoreNotes()
    files = []
    for found in walk(request.root, rules, notes, deadline, start):
        try:
            files.append((found.entry.stat(follow_symlinks=False).st_mtime_ns, found.path))
        except OSError:
            continue
    return Listing(files, deadline.reached, notes.lines)
