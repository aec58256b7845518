"""Claude Code 2.1.330's search tools for the Claude teammate: `Glob` (files by name) and `Grep`
(files by content), as Claude Code runs them: ripgrep with its flags.

This module owns the two tools: their schemas (Claude Code's `GlobInput` and `GrepInput`), the
choice of engine, the time limit, and the results' text, which is Claude Code's. The engines
make the same results: ``rg`` when it is on PATH (`teammate.tools.ripgrep`, what Claude Code
runs), else the pure-Python walk and search (`teammate.tools.walk`, `teammate.tools.scan`);
``SWARM_SEARCH_ENGINE`` (``auto``, ``rg``, ``python``) chooses.

* Glob is ``rg --files --glob PATTERN --no-ignore --hidden``: ignore files are not honoured
  and hidden files are listed (Claude Code's defaults; ``CLAUDE_CODE_GLOB_NO_IGNORE=false`` and
  ``CLAUDE_CODE_GLOB_HIDDEN=false`` change them); version-control folders (``.git`` ...) are
  never listed. The files come oldest first (``--sort=modified``), at most 100.
* Grep is ``rg --hidden`` with ignore files honoured, version-control folders left out, the
  pattern in ripgrep's regex dialect; files newest first, counts and lines by path.
* Both stop at ``CLAUDE_CODE_GLOB_TIMEOUT_SECONDS`` (20 s by default, as Claude Code) and
  return what they found with a note saying so; nothing found by then is an error.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from teammate.tools.base import ToolContext, ToolError, tool
from teammate.tools.files import clip
from teammate.tools.patterns import FileTypes, Overrides, file_passes_globs, grep_globs
from teammate.tools.rg_regex import RegexDialectError
from teammate.tools.ripgrep import rg_executable, rg_glob, rg_grep
from teammate.tools.scan import FileResult, GrepOutcome, GrepRequest, OutputMode, python_grep
from teammate.tools.walk import Deadline, GlobRequest, Listing, python_glob

GLOB_LIMIT = 100
HEAD_LIMIT = 250
MAX_COLUMNS = 500
DEFAULT_TIMEOUT = 20.0
WSL_TIMEOUT = 60.0
TIMED_OUT = (
    "The search stopped before it finished, most likely at its time limit, so these results "
    "are incomplete: more matches may exist. Search a more specific path or pattern."
)


def timeout_seconds() -> float:
    """``CLAUDE_CODE_GLOB_TIMEOUT_SECONDS`` when it is a positive number, else Claude Code's
    default: 20 s (60 s under WSL, whose file system is slower)."""
    try:
        value = float(os.environ.get("CLAUDE_CODE_GLOB_TIMEOUT_SECONDS", ""))
    except ValueError:
        value = 0
    if value > 0:
        return value
    return WSL_TIMEOUT if "microsoft" in platform.uname().release.lower() else DEFAULT_TIMEOUT


def new_deadline() -> Deadline:
    return Deadline(timeout_seconds())


make_deadline: Callable[[], Deadline] = new_deadline  # a test's seam: its own clock


def engine() -> str | None:
    """The ``rg`` to run, or None for the pure-Python engine (``SWARM_SEARCH_ENGINE``)."""
    choice = os.environ.get("SWARM_SEARCH_ENGINE", "auto").strip().lower()
    if choice == "python":
        return None
    rg = rg_executable()
    if rg is None and choice == "rg":
        raise ToolError("SWARM_SEARCH_ENGINE=rg, and there is no rg on PATH")
    return rg


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    return value in ("1", "true", "yes", "on")


def _timed_out_error() -> ToolError:
    seconds = timeout_seconds()
    shown = f"{seconds:g} {'second' if seconds == 1 else 'seconds'}"
    return ToolError(
        f"Ripgrep search timed out after {shown}. The search may have matched files but did "
        "not complete in time. Try searching a more specific path or pattern."
    )


def _with_notes(text: str, notes: list[str], timed_out: bool) -> str:
    head = f"{TIMED_OUT}\n" if timed_out else ""
    tail = "".join(f"\nNote: {note}" for note in notes)
    return head + text + ("\n" + tail if tail else "")


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


# --- Glob ---


def _glob_root(base: Path, pattern: str) -> tuple[Path, str]:
    """Where an absolute pattern's search starts and its pattern below that folder, as Claude
    Code splits it (the folders before the first glob character); a relative pattern's own."""
    if not os.path.isabs(pattern):
        return base, pattern
    first = re.search(r"[*?\[{]", pattern)
    if first is None:
        return Path(os.path.dirname(pattern)), os.path.basename(pattern)
    cut = pattern.rfind("/", 0, first.start())
    return Path(pattern[:cut] or "/"), pattern[cut + 1 :]


def _directory(ctx: ToolContext, path: str | None) -> Path:
    directory = ctx.resolve(path) if path else ctx.cwd
    if not directory.exists():
        raise ToolError(f"Directory does not exist: {directory}")
    if not directory.is_dir():
        raise ToolError(f"Not a directory: {directory}")
    return directory


def _glob_listing(request: GlobRequest) -> Listing:
    deadline = make_deadline()
    rg = engine()
    return rg_glob(rg, request, deadline) if rg else python_glob(request, deadline)


def _truncation(shown: int, total: int, complete: bool) -> str:
    if complete:
        return (
            f"(Showing {shown} of {total} matching files; {total - shown} more are not "
            "listed. Narrow the pattern or path to see the rest.)"
        )
    return (
        f"(Showing the first {shown} files; there are more than {total} matches. Narrow the "
        "pattern or path to see the rest.)"
    )


@tool(
    "Glob",
    "- Fast file pattern matching tool that works with any codebase size\n"
    '- Supports glob patterns like "**/*.js" or "src/**/*.ts"\n'
    "- Returns matching file paths sorted by modification time\n"
    "- Use this tool when you need to find files by name patterns\n"
    "- When you are doing an open ended search that may require multiple rounds of globbing "
    "and grepping, use the Agent tool instead (if available)",
    kind="read",
)
def glob(
    ctx: ToolContext,
    pattern: Annotated[str, Field(description="The glob pattern to match files against")],
    path: Annotated[
        str | None,
        Field(
            description="The directory to search in. If not specified, the current working "
            "directory will be used. IMPORTANT: Omit this field to use the default directory. "
            'DO NOT enter "undefined" or "null" - simply omit it for the default behavior. '
            "Must be a valid directory path if provided."
        ),
    ] = None,
) -> str:
    root, relative = _glob_root(_directory(ctx, path), pattern)
    if not root.is_dir():
        return "No files found"
    request = GlobRequest(
        os.path.abspath(root),
        relative,
        ignore_files=not _env_flag("CLAUDE_CODE_GLOB_NO_IGNORE", True),
        hidden=_env_flag("CLAUDE_CODE_GLOB_HIDDEN", True),
    )
    listing = _glob_listing(request)
    if listing.timed_out and not listing.files:
        raise _timed_out_error()
    if not listing.files:
        return _with_notes("No files found", listing.notes, listing.timed_out)
    ordered = [path for _, path in sorted(listing.files)]  # oldest first, as --sort=modified
    lines = ordered[:GLOB_LIMIT]
    if len(ordered) > GLOB_LIMIT:
        lines.append(_truncation(GLOB_LIMIT, len(ordered), not listing.timed_out))
    return _with_notes("\n".join(lines), listing.notes, listing.timed_out)


# --- Grep: the search ---


def _grep_outcome(request: GrepRequest) -> GrepOutcome:
    deadline = make_deadline()
    rg = engine()
    if rg is not None:
        return rg_grep(rg, request, deadline)
    try:
        return python_grep(request, deadline)
    except (RegexDialectError, re.error) as exc:
        raise ToolError(f"Invalid regular expression {request.pattern!r}: {exc}") from None


def _excluded_outright(request: GrepRequest) -> bool:
    """Claude Code's check of a file Grep is given outright: a ``type``, or globs it fails,
    leave nothing to search."""
    if request.file_type:
        return True
    return not file_passes_globs(request.root, list(request.globs), request.ignore_case)


# --- Grep: the text of the results ---


def _page(entries: list[str], offset: int, limit: int | None) -> tuple[list[str], str]:
    """`entries` after `offset`, at most `limit` (None: 250; 0: all), and Claude Code's
    pagination words (``limit: N`` when some were left out, ``offset: M``)."""
    size = HEAD_LIMIT if limit is None else limit
    shown = entries[offset:] if size == 0 else entries[offset : offset + size]
    applied = size != 0 and len(entries) - offset > size
    words = ([f"limit: {size}"] if applied else []) + ([f"offset: {offset}"] if offset else [])
    return shown, ", ".join(words)


def _js_length(text: str) -> int:
    """`text`'s length as JavaScript counts it (UTF-16 code units), which Claude Code's line
    limit uses."""
    if len(text) <= MAX_COLUMNS // 2:
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _content_lines(result: FileResult, directory: bool, numbers: bool, breaks: bool) -> list[str]:
    """One file's lines as Claude Code writes them (``path:N:text``, ``path-N-text``)."""
    out: list[str] = []
    last: int | None = None
    prefix = f"{result.path}" if directory else ""
    for hit in result.hits:
        if breaks and last is not None and hit.number > last + 1:
            out.append("--")
        last = hit.number
        if result.binary_offset is not None and "\0" in hit.text:
            continue
        mark = ":" if hit.match else "-"
        text = hit.text
        if _js_length(text) > MAX_COLUMNS:
            text = "[Omitted long matching line]" if hit.match else "[Omitted long context line]"
        number = f"{hit.number}{mark}" if numbers else ""
        out.append(f"{prefix}{mark}{number}{text}" if directory else f"{number}{text}")
    if result.binary_offset is not None and result.hits:
        note = f'binary file matches (found "\\0" byte around offset {result.binary_offset})'
        out.append(f"{prefix}:{note}" if directory else note)
    return out


def _tidy_breaks(lines: list[str]) -> list[str]:
    """No ``--`` at the start or end, nor two in a row."""
    kept: list[str] = []
    for line in lines:
        if line != "--" or (kept and kept[-1] != "--"):
            kept.append(line)
    if kept and kept[-1] == "--":
        kept.pop()
    return kept


def _content(outcome: GrepOutcome, directory: bool, numbers: bool, breaks: bool) -> list[str]:
    lines: list[str] = []
    for result in sorted(outcome.results, key=lambda result: result.path):
        file_lines = _content_lines(result, directory, numbers, breaks)
        if breaks and lines and file_lines:
            lines.append("--")
        lines.extend(file_lines)
    return _tidy_breaks(lines)


def _content_text(lines: list[str], offset: int, limit: int | None) -> str:
    shown, words = _page(lines, offset, limit)
    text = "\n".join(shown) or (
        "No entries at this offset" if offset and lines else "No matches found"
    )
    return f"{text}\n\n[Showing results with pagination = {words}]" if words else text


def _count_text(outcome: GrepOutcome, offset: int, limit: int | None) -> str:
    results = sorted(outcome.results, key=lambda result: result.path)
    entries = [f"{result.path}:{result.count}" for result in results]
    shown, words = _page(entries, offset, limit)
    total = sum(result.count for result in results)
    text = "\n".join(shown) or ("No entries at this offset" if total else "No matches found")
    summary = (
        f"\n\nFound {total} total {_plural(total, 'occurrence')} across {len(results)} "
        f"{_plural(len(results), 'file')}."
    )
    return text + summary + (f" with pagination = {words}" if words else "")


def _newest_first(paths: list[str]) -> list[str]:
    stamped = []
    for path in paths:
        try:
            stamped.append((-os.stat(path).st_mtime_ns, path))
        except OSError:
            stamped.append((0, path))
    return [path for _, path in sorted(stamped)]


def _files_text(outcome: GrepOutcome, offset: int, limit: int | None) -> str:
    ordered = _newest_first([result.path for result in outcome.results])
    shown, words = _page(ordered, offset, limit)
    if not shown:
        if offset and ordered:
            return f"No entries at this offset. [Showing results with pagination = {words}]"
        return "No files found"
    head = f"Found {len(shown)} {_plural(len(shown), 'file')}" + (f" {words}" if words else "")
    return head + "\n" + "\n".join(shown)


# --- Grep: the tool ---


def _context(
    before: int | None, after: int | None, around: int | None, context: int | None
) -> tuple[int, int]:
    """Claude Code's reading of the context options: ``context``, else ``-C``, else ``-B``
    and ``-A``."""
    spread = context if context is not None else around
    if spread is not None:
        return spread, spread
    return before or 0, after or 0


GREP_DESCRIPTION = (
    "A powerful search tool built on ripgrep\n\n"
    "  Usage:\n"
    "  - ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command. "
    "The Grep tool has been optimized for correct permissions and access.\n"
    '  - Supports full regex syntax (e.g., "log.*Error", "function\\s+\\w+")\n'
    '  - Filter files with glob parameter (e.g., "*.js", "**/*.tsx") or type parameter '
    '(e.g., "js", "py", "rust")\n'
    '  - Output modes: "content" shows matching lines, "files_with_matches" shows only file '
    'paths (default), "count" shows match counts\n'
    "  - Use Agent tool (if available) for open-ended searches requiring multiple rounds\n"
    "  - Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use "
    "`interface\\{\\}` to find `interface{}` in Go code)\n"
    "  - Multiline matching: By default patterns match within single lines only. For "
    "cross-line patterns like `struct \\{[\\s\\S]*?field`, use `multiline: true`"
)


def _grep_request(
    ctx: ToolContext, pattern: str, path: str | None, mode: OutputMode, globs: tuple[str, ...]
) -> GrepRequest:
    target = ctx.resolve(path) if path else ctx.cwd
    if not target.exists():
        raise ToolError(f"Path does not exist: {target}")
    Overrides(list(globs))  # a bad glob is an error, whichever engine runs
    return GrepRequest(pattern, os.path.abspath(target), target.is_dir(), mode, globs)


def _grep_text(
    outcome: GrepOutcome,
    request: GrepRequest,
    numbers: bool,
    breaks: bool,
    page: tuple[int, int | None],
) -> str:
    offset, limit = page
    if request.mode == "files_with_matches":
        return _files_text(outcome, offset, limit)
    if request.mode == "count":
        return _count_text(outcome, offset, limit)
    return _content_text(_content(outcome, request.is_dir, numbers, breaks), offset, limit)


# the fields of Claude Code's GrepInput
GrepPattern = Annotated[
    str, Field(description="The regular expression pattern to search for in file contents")
]
GrepPath = Annotated[
    str | None,
    Field(
        description="File or directory to search in (rg PATH). Defaults to current "
        "working directory."
    ),
]
GrepGlob = Annotated[
    str | None,
    Field(
        description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob'
    ),
]
GrepMode = Annotated[
    Literal["content", "files_with_matches", "count"],
    Field(
        description='Output mode: "content" shows matching lines (supports -A/-B/-C '
        'context, -n line numbers, head_limit), "files_with_matches" shows file paths '
        '(supports head_limit), "count" shows match counts (supports head_limit). '
        'Defaults to "files_with_matches".'
    ),
]
LinesBefore = Annotated[
    int | None,
    Field(
        alias="-B",
        ge=0,
        description="Number of lines to show before each match (rg -B). Requires "
        'output_mode: "content", ignored otherwise.',
    ),
]
LinesAfter = Annotated[
    int | None,
    Field(
        alias="-A",
        ge=0,
        description="Number of lines to show after each match (rg -A). Requires "
        'output_mode: "content", ignored otherwise.',
    ),
]
LinesAround = Annotated[int | None, Field(alias="-C", ge=0, description="Alias for context.")]
LinesContext = Annotated[
    int | None,
    Field(
        ge=0,
        description="Number of lines to show before and after each match (rg -C). "
        'Requires output_mode: "content", ignored otherwise.',
    ),
]
LineNumbers = Annotated[
    bool,
    Field(
        alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content", '
        "ignored otherwise. Defaults to true.",
    ),
]
IgnoreCase = Annotated[bool, Field(alias="-i", description="Case insensitive search (rg -i)")]
OnlyMatching = Annotated[
    bool,
    Field(
        alias="-o",
        description="Print only the matched (non-empty) parts of each matching line, one "
        "match per output line (rg -o / --only-matching). Requires output_mode: "
        '"content", ignored otherwise. Defaults to false.',
    ),
]
FileType = Annotated[
    str | None,
    Field(
        alias="type",
        description="File type to search (rg --type). Common types: js, py, rust, go, "
        "java, etc. More efficient than include for standard file types.",
    ),
]
HeadLimit = Annotated[
    int | None,
    Field(
        ge=0,
        description='Limit output to first N lines/entries, equivalent to "| head -N". '
        "Works across all output modes: content (limits output lines), files_with_matches "
        "(limits file paths), count (limits count entries). Defaults to 250 when "
        "unspecified. Pass 0 for unlimited (use sparingly \u2014 large result sets waste "
        "context).",
    ),
]
Offset = Annotated[
    int,
    Field(
        ge=0,
        description="Skip first N lines/entries before applying head_limit, equivalent to "
        '"| tail -n +N | head -N". Works across all output modes. Defaults to 0.',
    ),
]
Multiline = Annotated[
    bool,
    Field(
        description="Enable multiline mode where . matches newlines and patterns can span "
        "lines (rg -U --multiline-dotall). Default: false."
    ),
]


@tool("Grep", GREP_DESCRIPTION, kind="read")
def grep(
    ctx: ToolContext,
    pattern: GrepPattern,
    path: GrepPath = None,
    glob: GrepGlob = None,
    output_mode: GrepMode = "files_with_matches",
    before: LinesBefore = None,
    after: LinesAfter = None,
    around: LinesAround = None,
    context: LinesContext = None,
    line_numbers: LineNumbers = True,
    ignore_case: IgnoreCase = False,
    only_matching: OnlyMatching = False,
    file_type: FileType = None,
    head_limit: HeadLimit = None,
    offset: Offset = 0,
    multiline: Multiline = False,
) -> str:
    request = _grep_request(ctx, pattern, path, output_mode, tuple(grep_globs(glob)))
    content = output_mode == "content"
    before, after = _context(before, after, around, context) if content else (0, 0)
    if file_type is not None:
        FileTypes(file_type)  # an unknown type is an error, whichever engine runs
    request = replace(
        request,
        file_type=file_type,
        ignore_case=ignore_case,
        multiline=multiline,
        before=before,
        after=after,
        only_matching=only_matching and content,
    )
    if request.is_dir or not _excluded_outright(request):
        outcome = _grep_outcome(request)
    else:
        outcome = GrepOutcome([], False, [])
    if outcome.timed_out and not outcome.results:
        raise _timed_out_error()
    breaks = any(value for value in (before, after, around, context))
    text = _grep_text(outcome, request, line_numbers, breaks, (offset, head_limit))
    return clip(_with_notes(text, outcome.notes, outcome.timed_out), ctx.output_limit)
