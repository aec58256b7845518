"""Claude Code's file tools for the Claude teammate: `Read`, `Write` and `Edit`.

This module owns reading a text file in ``cat -n`` form, writing one atomically (a temporary
file in the same directory, then ``os.replace``, keeping the old file's mode and writing through
symlinks) and exact-string edits. It also holds `clip`, the head-and-tail cut that the other
tools use to keep a result within `ToolContext.output_limit`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Annotated

from pydantic import Field

from protocols import safefs
from teammate.tools.base import ToolContext, ToolError, tool

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its head and tail around a marker line."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} characters truncated] ...\n{text[len(text) - tail :]}"


def split_lines(text: str) -> list[str]:
    """The lines of `text`, without their ends (``\\n`` or ``\\r\\n``); no empty last line for a
    text that ends with a newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path`'s contents with `data` in one step: readers see the old file or the new
    one, never half of it. An existing file keeps its mode; a symlink keeps pointing at the
    file it names, which is the one rewritten."""
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # 0o666 filtered by the umask, as for any new file; chmod below for an existing one
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _existing_file(ctx: ToolContext, file_path: str) -> Path:
    path = ctx.resolve(file_path)
    if not path.exists():
        raise ToolError(f"File does not exist: {path}")
    if path.is_dir():
        raise ToolError(
            f"{path} is a directory, not a file. Use Glob to find files in it, "
            "or Bash with ls to list it."
        )
    return path


def _read_text(path: Path) -> str:
    """A file's text; bytes that are not UTF-8 survive a round trip (``surrogateescape``)."""
    try:
        data = safefs.read_regular(path)
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise ToolError(f"Cannot read {path}: it is a binary file, not text.")
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"The content cannot be written as UTF-8: {exc.reason}") from None


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, _encode(text))
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None


@tool(
    "Read",
    "Reads a file from the local filesystem. file_path should be an absolute path. By default "
    f"it reads up to {DEFAULT_READ_LIMIT} lines from the start of the file; for a long file, "
    "pass offset (the line number to start at) and limit (how many lines). The result is in "
    "cat -n format: each line prefixed by its number and a tab. Lines longer than "
    f"{MAX_LINE_CHARS} characters are cut. It reads files, not directories: use Glob or "
    "Bash ls for a directory.",
    kind="read",
)
def read(
    ctx: ToolContext,
    file_path: Annotated[str, Field(description="The absolute path to the file to read")],
    offset: Annotated[
        int | None,
        Field(ge=0, description="The line number to start reading from (1 is the first line)"),
    ] = None,
    limit: Annotated[int | None, Field(gt=0, description="The number of lines to read")] = None,
) -> str:
    path = _existing_file(ctx, file_path)
    lines = split_lines(_read_text(path))
    if not lines:
        return (
            f"<system-reminder>Warning: the file {path} exists but its contents are empty."
            "</system-reminder>"
        )
    start = max(offset or 1, 1)
    if start > len(lines):
        count = "1 line" if len(lines) == 1 else f"{len(lines)} lines"
        return (
            f"<system-reminder>Warning: the file {path} is shorter than the offset given "
            f"({start}). The file has {count}.</system-reminder>"
        )
    shown = lines[start - 1 : start - 1 + (limit or DEFAULT_READ_LIMIT)]
    return "\n".join(
        f"{number:>6}\t{line[:MAX_LINE_CHARS]}" for number, line in enumerate(shown, start)
    )


@tool(
    "Write",
    "Writes a file to the local filesystem, replacing it if it exists and creating missing "
    "parent directories. file_path must be an absolute path. Prefer Edit for changing part of "
    "an existing file.",
    kind="edit",
)
def write(
    ctx: ToolContext,
    file_path: Annotated[
        str, Field(description="The absolute path to the file to write (must be absolute)")
    ],
    content: Annotated[str, Field(description="The content to write to the file")],
) -> str:
    path = ctx.resolve(file_path)
    if path.is_dir():
        raise ToolError(f"{path} is a directory; give the path of a file to write.")
    existed = path.exists()
    _write(path, content)
    if existed:
        return f"The file {path} has been updated successfully."
    return f"File created successfully at: {path}"


@tool(
    "Edit",
    "Performs exact string replacements in a file. old_string must match the file's text "
    "exactly (indentation included; do not include the line-number prefix of Read's output) "
    "and be unique in the file, unless replace_all is true, which replaces every occurrence. "
    "An empty old_string on a file that does not exist creates it with new_string.",
    kind="edit",
)
def edit(
    ctx: ToolContext,
    file_path: Annotated[str, Field(description="The absolute path to the file to modify")],
    old_string: Annotated[str, Field(description="The text to replace")],
    new_string: Annotated[
        str, Field(description="The text to replace it with (must be different from old_string)")
    ],
    replace_all: Annotated[
        bool, Field(description="Replace all occurrences of old_string (default false)")
    ] = False,
) -> str:
    if old_string == new_string:
        raise ToolError("No changes to make: old_string and new_string are exactly the same.")
    path = ctx.resolve(file_path)
    if old_string == "" and not path.exists():
        _write(path, new_string)
        return f"The file {path} has been updated successfully."
    path = _existing_file(ctx, file_path)
    text = _read_text(path)
    if old_string == "":
        if text.strip():
            raise ToolError("Cannot create new file - file already exists.")
        updated = new_string
    else:
        wanted = old_string
        count = text.count(old_string)
        if count == 0 and "\r\n" in text and "\n" in old_string:
            # the model writes "\n"; a file with Windows line ends is matched in its own terms
            old_string, new_string = (s.replace("\n", "\r\n") for s in (old_string, new_string))
            count = text.count(old_string)
        if count == 0:
            raise ToolError(f"String to replace not found in file.\nString: {wanted}")
        if count > 1 and not replace_all:
            raise ToolError(
                f"Found {count} matches of the string to replace, but replace_all is false. "
                "To replace all occurrences, set replace_all to true. To replace only one "
                "occurrence, please provide more context to uniquely identify the instance.\n"
                f"String: {wanted}"
            )
        updated = text.replace(old_string, new_string, -1 if replace_all else 1)
    _write(path, updated)
    return f"The file {path} has been updated successfully."
