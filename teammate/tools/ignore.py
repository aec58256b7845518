"""Ignore files as ripgrep reads them, for the pure-Python walk of `Glob` and `Grep`
(`teammate.tools.walk`): gitignore-style glob lists, and which of them apply where.

This module owns the glob-list semantics (pattern syntax from `pathspec`'s `GitIgnoreSpec`,
matched the way ripgrep matches: a pattern matches the path itself, never "a file because its
folder matches"; ``{a,b}`` alternatives as ripgrep's globs have them) and ripgrep's rules for
ignore files (its defaults, which Claude Code keeps for Grep):

* ``.rgignore`` then ``.ignore`` files in every folder, up to ``/``, inside a git repository
  or not; then ``.gitignore`` files, ``.git/info/exclude`` and the global excludes file
  (git's ``core.excludesFile``, else ``~/.config/git/ignore``) only for a path inside a git
  repository (a folder above it has ``.git``: ripgrep's ``--no-require-git`` is off), and no
  ``.gitignore`` above the repository's root. The first of those kinds with a verdict wins;
  within a kind the deepest folder's file does, and within a file the last matching line.
* A bad line (an unclosed ``[`` or ``{``, a reversed range, a trailing ``\\``) is skipped, as
  ripgrep skips it, and reported in the search's notes with the file's name; the rest of the
  file applies. A file that cannot be read is reported too.
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from protocols.errors import Error

_ANY_END = "(?:(?P<ps_d>/)|$)"  # pathspec's ending for "this path, or below it"
_DIR_END = "(?P<ps_d>/)"  # pathspec's ending for "this folder, or below it"
IGNORE_FILES = (".rgignore", ".ignore")  # ripgrep's, in precedence order
GIT_IGNORE = ".gitignore"


class GlobError(Error):
    """A glob ripgrep's glob parser refuses."""


def expand_alternates(glob: str) -> list[str]:
    """``*.{ts,tsx}`` as ``["*.ts", "*.tsx"]``, as ripgrep's globs read ``{a,b}``: no nesting,
    an unclosed group is an error, ``\\{`` and ``[{]`` are literal."""
    start = _find_unescaped(glob, "{")
    if start < 0:
        return [glob]
    end = _find_unescaped(glob, "}", start + 1)
    if end < 0:
        raise GlobError("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
    body = glob[start + 1 : end]
    if _find_unescaped(body, "{") >= 0:
        raise GlobError("nested alternate groups are not allowed")
    head, tail = glob[:start], glob[end + 1 :]
    return [
        head + choice + rest
        for choice in _split_unescaped(body, ",")
        for rest in expand_alternates(tail)
    ]


def _find_unescaped(text: str, char: str, start: int = 0) -> int:
    """The index of the first `char` in `text` from `start` that is neither escaped nor inside
    a ``[...]`` class; -1 if none."""
    index = start
    while index < len(text):
        current = text[index]
        if current == "\\":
            index += 2
            continue
        if current == "[":
            index = _class_end(text, index) + 1
            continue
        if current == char:
            return index
        index += 1
    return -1


def _split_unescaped(text: str, char: str) -> list[str]:
    parts, start = [], 0
    while (index := _find_unescaped(text, char, start)) >= 0:
        parts.append(text[start:index])
        start = index + 1
    return [*parts, text[start:]]


def _class_end(text: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at `start`; `GlobError` if none, or if
    a range in it is reversed."""
    index = start + 1
    if index < len(text) and text[index] in "!^":
        index += 1
    if index < len(text) and text[index] == "]":
        index += 1  # a leading "]" is a member
    close = text.find("]", index)
    if close < 0:
        raise GlobError("unclosed character class; missing ']'")
    members = text[index:close]
    for low, high in re.findall(r"(.)-(.)", members):
        if low > high:
            raise GlobError(f"invalid range; '{low}' > '{high}'")
    return close


def check_glob(glob: str) -> None:
    """`GlobError` for what ripgrep's glob parser refuses: a dangling ``\\``, an unclosed
    class or group, a reversed range, nested groups."""
    if re.search(r"(?<!\\)(?:\\\\)*\\$", glob):
        raise GlobError("dangling '\\'")
    expand_alternates(glob)


def _line_parts(line: str) -> tuple[str, str, bool] | None:
    """A gitignore line as (the ``!``, the glob, whether it ends with ``/``), or None for a
    blank line or a comment."""
    text = line.rstrip("\n\r")
    if not text.endswith("\\ "):
        text = text.rstrip(" ")
    if not text or text.startswith("#"):
        return None
    bang = "!" if text.startswith("!") else ""
    text = text[len(bang) :]
    directory = text.endswith("/") and not text.endswith("\\/")
    return bang, text[:-1] if directory else text, directory


def compile_line(line: str) -> list[tuple[str, bool]]:
    """A gitignore line as (regex, flag) pairs, one per ``{a,b}`` alternative: the regex
    matches a path (with a trailing ``/`` for a folder) the way ripgrep does; the flag is True
    for a plain line, False for a ``!`` line. `GlobError` for a line ripgrep refuses."""
    parts = _line_parts(line)
    if parts is None:
        return []
    bang, glob, directory = parts
    check_glob(glob)
    anchored = "/" in glob.removeprefix("/") and not glob.startswith("/")
    compiled = []
    for variant in expand_alternates(glob):
        if anchored and "/" not in variant:
            variant = "/" + variant  # a line with a "/" is anchored in every alternative
        regex, include = _pathspec_regex(bang + variant)
        if regex is not None and include is not None:
            compiled.append((_checked(_itself(regex, directory)), include))
    return compiled


def _compile(regex: str) -> re.Pattern[str]:
    """`regex` compiled, quietly: pathspec writes ``[[]`` as a class Python warns about."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(regex)


def _checked(regex: str) -> str:
    try:
        _compile(regex)
    except re.error as exc:
        raise GlobError(str(exc)) from None
    return regex


def _pathspec_regex(line: str) -> tuple[str | None, bool | None]:
    # imported at first use: a teammate that never searches does not load it
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    try:
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
    except (ValueError, re.error) as exc:
        raise GlobError(str(exc)) from None
    return regex, include


def _itself(regex: str, directory: bool) -> str:
    """pathspec's regex (which also matches everything below a matching folder) made to match
    only the path itself, ripgrep's way, anchored at the start for `re.match`."""
    if regex.endswith(_ANY_END):
        core, end = regex[: -len(_ANY_END)], "/?\\Z"
    elif regex.endswith(_DIR_END):
        core, end = regex[: -len(_DIR_END)], "/\\Z"
    elif regex.endswith("/"):
        core, end = regex, ".+"  # "dir/**": what is below the folder, not the folder
    elif regex == ".":
        core, end = "", "."  # "*" and "**": everything
    else:
        core, end = regex, ""
    if directory:
        end = "/\\Z" if end in ("/?\\Z", "/\\Z", ".") else end + "/\\Z"
    if not core.startswith("^"):
        core = "^(?s:.*?)" + core
    return core + end


class GlobList:
    """Gitignore-style lines, matched ripgrep's way: `match` gives the flag of the last line
    matching a path (True for a plain line, False for a ``!`` line), or None. Bad lines are
    skipped and kept in `errors` as (line number, text, why)."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.errors: list[tuple[int, str, str]] = []
        compiled: list[tuple[str, bool]] = []
        for number, line in enumerate(lines, 1):
            try:
                compiled.extend(compile_line(line))
            except GlobError as exc:
                self.errors.append((number, line.rstrip("\n\r"), str(exc)))
        self.flags = [include for _, include in reversed(compiled)]
        self.plain = sum(self.flags)  # how many lines are not `!` lines
        alternatives = "|".join(f"({regex})" for regex, _ in reversed(compiled))
        self.regex = _compile(alternatives) if compiled else None

    def __bool__(self) -> bool:
        return self.regex is not None

    def match(self, path: str) -> bool | None:
        """The verdict on `path` (relative, ``/``-separated, a folder with a trailing ``/``)."""
        if self.regex is None:
            return None
        found = self.regex.match(path)
        return None if found is None else self.flags[(found.lastindex or 1) - 1]


@dataclass(frozen=True)
class _Stamp:
    path: str
    mtime_ns: int
    size: int
    inode: int


@lru_cache(maxsize=4096)
def _parsed(stamp: _Stamp) -> GlobList | OSError:
    try:
        with open(stamp.path, "rb") as file:
            data = file.read()
    except OSError as exc:
        return exc
    return GlobList(data.decode("utf-8", errors="replace").splitlines())


def load_glob_file(path: str) -> GlobList | OSError | None:
    """The glob list in the file at `path` (parsed once while it is unchanged), the error
    that kept it from being read, or None where there is no file."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc
    if not stat.S_ISREG(info.st_mode):
        return None
    return _parsed(_Stamp(path, info.st_mtime_ns, info.st_size, info.st_ino))


@dataclass
class IgnoreNotes:
    """What the search says about the ignore files it read: bad lines, unreadable files."""

    lines: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def file(self, path: str, loaded: GlobList | OSError | None) -> GlobList | None:
        if isinstance(loaded, OSError):
            self.add(path, f"{path} could not be read ({loaded.strerror or loaded}); not applied")
            return None
        if loaded is not None:
            for number, line, why in loaded.errors:
                self.add(
                    f"{path}:{number}",
                    f"{path} line {number}: the pattern '{line}' is not valid ({why}); "
                    "that line is skipped, the rest of the file applies",
                )
        return loaded if loaded else None

    def add(self, key: str, text: str) -> None:
        if key not in self.seen:
            self.seen.add(key)
            self.lines.append(text)


# (the length of a folder's path, its list), deepest folder first
Matchers = tuple[tuple[int, GlobList], ...]


@dataclass(eq=False)
class IgnoreDir:
    """One folder's ignore files, chained to its parent's. `groups` are the lists a path in
    this folder is matched against, in ripgrep's order: .rgignore files, .ignore files, then
    inside a repository its .gitignore files (from here up to its root), its
    .git/info/exclude and the global excludes file."""

    path: str
    git_root: str | None  # the nearest folder at or above this one with `.git`
    custom: Matchers = ()
    dot_ignore: Matchers = ()
    git: Matchers = ()
    exclude: GlobList | None = None
    groups: tuple[Matchers, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.groups = (self.custom, self.dot_ignore)

    def with_git(self, global_excludes: GlobList | None) -> IgnoreDir:
        if self.git_root is not None:
            root = _prefix_length(self.git_root)
            extra = tuple(((root, lst),) for lst in (self.exclude, global_excludes) if lst)
            self.groups = (self.custom, self.dot_ignore, self.git, *extra)
        self.groups = tuple(group for group in self.groups if group)
        return self


def _prefix_length(path: str) -> int:
    """How much of a path below `path` to cut to make it relative (with its ``/``)."""
    return len(path.rstrip("/")) + 1


class IgnoreRules:
    """Builds the `IgnoreDir` chain of a walk and matches paths against it."""

    def __init__(self, notes: IgnoreNotes) -> None:
        self.notes = notes
        self.global_excludes = self._global_excludes()

    def _load(self, path: str) -> GlobList | None:
        return self.notes.file(path, load_glob_file(path))

    def _global_excludes(self) -> GlobList | None:
        path = global_excludes_path()
        return self._load(path) if path else None

    def top(self, directory: str) -> IgnoreDir:
        """The chain for `directory` with all its ancestors' files, from ``/`` down."""
        node: IgnoreDir | None = None
        parts = [part for part in os.path.abspath(directory).split("/") if part]
        for depth in range(len(parts) + 1):
            path = "/" + "/".join(parts[:depth])
            names = {
                name
                for name in (".git", GIT_IGNORE, *IGNORE_FILES)
                if os.path.lexists(os.path.join(path, name))
            }
            node = self.child(node, path, names)
        assert node is not None
        return node

    def child(self, parent: IgnoreDir | None, path: str, names: Iterable[str]) -> IgnoreDir:
        """The chain for folder `path` (below `parent`) whose entries are `names`."""
        names = set(names)
        has_git = ".git" in names and os.path.exists(os.path.join(path, ".git"))
        length = _prefix_length(path)
        own = {
            name: self._load(os.path.join(path, name))
            for name in (GIT_IGNORE, *IGNORE_FILES)
            if name in names
        }

        def chained(name: str, above: Matchers) -> Matchers:
            mine = own.get(name)
            return (((length, mine),) if mine else ()) + above

        git_above = () if parent is None or has_git else parent.git
        return IgnoreDir(
            path=path,
            git_root=path if has_git else (parent.git_root if parent else None),
            custom=chained(".rgignore", parent.custom if parent else ()),
            dot_ignore=chained(".ignore", parent.dot_ignore if parent else ()),
            git=chained(GIT_IGNORE, git_above),
            exclude=self._exclude(path) if has_git else (parent.exclude if parent else None),
        ).with_git(self.global_excludes)

    def _exclude(self, path: str) -> GlobList | None:
        git_dir = resolve_git_dir(os.path.join(path, ".git"))
        return self._load(os.path.join(git_dir, "info", "exclude")) if git_dir else None


def ignored(node: IgnoreDir, path: str, is_dir: bool) -> bool | None:
    """The ignore files' verdict on `path` (absolute), an entry of `node`'s folder: True
    ignored, False whitelisted (a ``!`` line), None no line matches."""
    suffix = "/" if is_dir else ""
    for group in node.groups:
        for length, globs in group:
            verdict = globs.match(path[length:] + suffix)
            if verdict is not None:
                return verdict
    return None


def resolve_git_dir(dot_git: str) -> str | None:
    """The git directory a ``.git`` entry stands for: itself, or for a ``.git`` file
    (worktrees, submodules) the ``gitdir:`` it names (its ``commondir`` if it has one)."""
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as file:
            first = file.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = os.path.join(os.path.dirname(dot_git), first.removeprefix("gitdir:").strip())
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as file:
            return os.path.normpath(os.path.join(git_dir, file.read().strip()))
    except OSError:
        return git_dir


def global_excludes_path() -> str | None:
    """git's global excludes file as ripgrep finds it: ``core.excludesFile`` in
    ``~/.gitconfig``, else in ``$XDG_CONFIG_HOME/git/config``; else
    ``$XDG_CONFIG_HOME/git/ignore`` (``~/.config`` without XDG_CONFIG_HOME)."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    configs = [os.path.join(home, ".gitconfig")] if home else []
    configs += [os.path.join(xdg, "git", "config")] if xdg else []
    for config in configs:
        named = _excludes_file_in(config)
        if named:
            return os.path.join(home, named[2:]) if named.startswith("~/") and home else named
    return os.path.join(xdg, "git", "ignore") if xdg else None


def _excludes_file_in(config: str) -> str | None:
    try:
        with open(config, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    found = re.search(r'(?im)^\s*excludesfile\s*=\s*"?(.*?)"?\s*$', text)
    return found.group(1) if found and found.group(1) else None
