"""Claude Code's file tools for the Claude teammate: `Read`, `Write` and `Edit`.

This module owns the Read tool (its fields are Claude Code 2.1.330's: ``file_path``,
``offset``, ``limit``, ``pages``, ``allow_large``) and which reader a file goes to: a notebook
(`teammate.tools.notebook`), an image or a PDF (`teammate.tools.media`, by name or by bytes),
else text (`teammate.tools.file_lines`: streamed in bounded memory, ``cat -n`` form, one marker
for what was left out), a binary file refused saying what it looks like. It also owns writing
a file atomically (a temporary file in the same directory, then ``os.replace``, keeping the old
file's mode and writing through symlinks), exact-string edits, and `clip`, the head-and-tail cut
that the other tools use to keep a result within `ToolContext.output_limit`.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Annotated, BinaryIO

from pydantic import Field

from protocols.fs import safefs
from teammate.tools.atomic import atomic_write
from teammate.tools.base import ToolContext, ToolError, ToolOutput, tool
from teammate.tools.file_lines import (
    MAX_LINE_CHARS,
    count_rest,
    human_size,
    open_regular,
    read_page,
    read_whole,
    text_source,
)
from teammate.tools.media import (
    IMAGE_SUFFIXES,
    MAX_IMAGE_FILE_BYTES,
    PDF_PAGES_PER_READ,
    PDF_WHOLE_PAGES,
    describe,
    image_content,
    image_type,
    is_binary,
    is_pdf,
    pdf_content,
)
from teammate.tools.notebook import MAX_NOTEBOOK_BYTES, notebook_content

__all__ = ["MAX_LINE_CHARS", "atomic_write", "clip", "edit", "read", "split_lines", "write"]

DEFAULT_READ_LIMIT = 2000
MAX_READ_BYTES = 262_144  # Claude Code's: a larger text file is not read whole unless asked
SNIFF_BYTES = 8192  # what is looked at to tell text from binary and formats apart
MARKER_ROOM = 600  # of a result's characters, kept for the marker line


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


READ_DESCRIPTION = f"""Reads a file from the local filesystem. file_path should be an absolute path.
- Text: up to {DEFAULT_READ_LIMIT} lines from the start by default, in cat -n form (each line \
prefixed by its number and a tab); lines longer than {MAX_LINE_CHARS} characters are cut. A \
file over {MAX_READ_BYTES // 1024} KB is refused unless you pass offset (the line to start at) \
and/or limit (how many lines), or allow_large. Bytes that are not UTF-8 and control characters \
are shown as \\xNN escapes. When lines are left out, a last line in [brackets] says how many \
and the offset to go on from.
- Images (PNG, JPEG, GIF, WebP) are shown to you as images, downscaled when large.
- PDFs: up to {PDF_WHOLE_PAGES} pages can be read whole; for a longer PDF pass pages (e.g. \
"1-5", "3", "10-20"), at most {PDF_PAGES_PER_READ} pages a read.
- Jupyter notebooks (.ipynb): every cell with its outputs; edit them with NotebookEdit.
It reads files, not directories: use Glob, or Bash with ls, for a directory. Other binary \
files are refused, saying what they look like."""


@tool("Read", READ_DESCRIPTION, kind="read")
def read(
    ctx: ToolContext,
    file_path: Annotated[str, Field(description="The absolute path to the file to read")],
    offset: Annotated[
        int | None,
        Field(
            ge=0,
            description="The line to start at (1 is the first). Give it, with limit, only for a "
            "file too large to read at once",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        Field(
            gt=0,
            description="How many lines to read. Give it, with offset, only for a file too "
            "large to read at once",
        ),
    ] = None,
    pages: Annotated[
        str | None,
        Field(
            description='PDFs only: the page or pages to read, e.g. "3", "1-5" or "10-20"; at '
            f"most {PDF_PAGES_PER_READ} pages a read"
        ),
    ] = None,
    allow_large: Annotated[
        bool | None,
        Field(
            description="Set to true to read a text file over the usual size limit whole "
            f"({MAX_READ_BYTES // 1024} KB); what is shown is still cut at the result's "
            "length. Only when you need all of it: otherwise read parts with offset and "
            "limit, or search it."
        ),
    ] = None,
) -> ToolOutput:
    path = _existing_file(ctx, file_path)
    try:
        with open_regular(path) as handle:
            return _read_open(ctx, path, handle, offset, limit, pages, bool(allow_large))
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None


def _read_open(
    ctx: ToolContext,
    path: Path,
    handle: BinaryIO,
    offset: int | None,
    limit: int | None,
    pages: str | None,
    allow_large: bool,
) -> ToolOutput:
    """Read an open file by what it is: notebook, image, PDF (by name or by bytes), or text."""
    size = os.fstat(handle.fileno()).st_size
    head = os.pread(handle.fileno(), SNIFF_BYTES, 0)
    suffix = path.suffix.lower()
    name = str(path)
    if suffix == ".ipynb":
        return notebook_content(read_whole(handle, MAX_NOTEBOOK_BYTES, name), name, _budget(ctx))
    if suffix in IMAGE_SUFFIXES or (suffix != ".pdf" and image_type(head)):
        return image_content(read_whole(handle, MAX_IMAGE_FILE_BYTES, name), name)
    if suffix == ".pdf" or is_pdf(head):
        return pdf_content(handle, size, (pages or "").strip() or None, name)
    return _read_text_file(ctx, path, handle, size, head, offset, limit, allow_large)


def _read_text_file(
    ctx: ToolContext,
    path: Path,
    handle: BinaryIO,
    size: int,
    head: bytes,
    offset: int | None,
    limit: int | None,
    allow_large: bool,
) -> str:
    if not head:  # (a file of /proc says it has size 0, and has text)
        return (
            f"<system-reminder>Warning: the file {path} exists but its contents are empty."
            "</system-reminder>"
        )
    wide = head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    if is_binary(head) and not wide:
        raise ToolError(
            f"Cannot read {path}: it is binary, not text: {describe(head)}, "
            f"{human_size(size)} ({size:,} bytes). Read shows text, images (PNG, JPEG, GIF, "
            "WebP), PDFs and notebooks; for this file use a command that knows its format "
            "(Bash: file, xxd | head, unzip -l, ...)."
        )
    if offset is None and limit is None and not allow_large and size > MAX_READ_BYTES:
        raise ToolError(
            f"{path} is {human_size(size)} ({size:,} bytes), more than Read shows whole "
            f"({human_size(MAX_READ_BYTES)}). Read part of it with offset and limit (e.g. "
            "offset=1, limit=500), search it with Grep, or pass allow_large=true if you need "
            "all of it."
        )
    source, size = text_source(handle, head, size, str(path))
    budget = _budget(ctx)
    page = read_page(source, max(offset or 1, 1), limit or DEFAULT_READ_LIMIT, budget)
    if not page.lines:
        total = page.total or 0
        count = "1 line" if total == 1 else f"{total} lines"
        return (
            f"<system-reminder>Warning: the file {path} is shorter than the offset given "
            f"({page.start}). The file has {count}.</system-reminder>"
        )
    if page.stopped == "budget" or (page.stopped == "limit" and limit is None):
        count_rest(source, size, page)
    marker = page.marker(budget)
    body = "\n".join(page.lines)
    return f"{body}\n\n{marker}" if marker else body


def _budget(ctx: ToolContext) -> int:
    """The characters a Read result may hold: the tool result limit (the agent loop cuts any
    result beyond it), or CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS (at 4 characters a token) if
    smaller; less room for the marker."""
    limit = ctx.output_limit
    tokens = os.environ.get("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "").strip()
    if tokens.isdigit() and int(tokens) > 0:
        limit = min(limit, int(tokens) * 4)
    return max(limit - MARKER_ROOM, limit // 2, 1)


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
