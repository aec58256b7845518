"""Matching file paths against the path patterns of Read and Edit permission rules.

Patterns are gitignore-style: ``//`` is the filesystem root, ``~/`` the home directory, ``/``
and ``./`` the project root (cwd), a bare name matches at any depth; ``*``, ``?``, ``[...]`` and
``**`` (any number of directories) are wildcards, and a matched directory covers everything in
it. This module also owns which path a file tool's call works on (`target_path`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def target_path(tool_name: str, tool_input: Mapping[str, Any], cwd: Path) -> Path | None:
    """The resolved file or directory a file tool works on (Glob/Grep default to cwd)."""
    raw = _str(tool_input, "file_path") or _str(tool_input, "notebook_path")
    raw = raw or _str(tool_input, "filePath")  # LSP
    raw = raw or _str(tool_input, "path") or ("." if tool_name in ("Glob", "Grep", "LS") else "")
    if not raw:
        return None
    try:
        path = Path(raw).expanduser()
        return (path if path.is_absolute() else cwd / path).resolve()
    except (OSError, RuntimeError, ValueError):  # a NUL byte, a symlink loop, no home directory
        return None


def inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def path_matches(content: str, target: Path, cwd: Path) -> bool:
    """Whether the gitignore-style pattern `content` matches `target` (or a directory above
    it: a matched directory covers everything in it)."""
    parts = _absolute_pattern(content, cwd).rstrip("/").split("/")
    literal = next((i for i, p in enumerate(parts) if re.search(r"[*?\[]", p)), len(parts))
    base = Path(os.path.normpath("/" + "/".join(parts[1:literal])))
    with contextlib.suppress(OSError, RuntimeError):  # a symlink loop: the path as written
        base = base.resolve()
    if not inside(target, base):
        return False
    if literal == len(parts):
        return True
    regex = re.compile(_glob_regex("/".join(parts[literal:])), re.DOTALL)
    rel = target.relative_to(base).parts
    return any(regex.fullmatch("/".join(rel[:k])) for k in range(len(rel) + 1))


def _absolute_pattern(content: str, cwd: Path) -> str:
    if content.startswith("//"):
        return content[1:]
    if content.startswith("~/"):
        return os.path.expanduser("~") + content[1:]
    root = str(cwd).rstrip("/")
    if content.startswith("/"):
        # an absolute path already inside the project is taken as it is: Claude Code's own
        # team_permission_update rules look like Edit(/home/user/project/**)
        for prefix in {root, str(cwd.resolve()).rstrip("/")}:
            if prefix and (content == prefix or content.startswith(prefix + "/")):
                return content
        return root + content
    relative = content.removeprefix("./")
    if content == relative and "/" not in relative.rstrip("/"):
        relative = "**/" + relative  # gitignore: a bare name matches at any depth
    return f"{root}/{relative}"


def _glob_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] in "*?":
            out.append("[^/]*" if glob[i] == "*" else "[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end].replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _str(tool_input: Mapping[str, Any], key: str) -> str:
    value = tool_input.get(key)
    return value if isinstance(value, str) else ""
