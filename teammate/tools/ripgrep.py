"""The `rg` engine of `Glob` and `Grep`: ripgrep run with the flags Claude Code 2.1.330 runs it
with, its output read back into the shapes the pure-Python engine makes (`Listing`,
`GrepOutcome`), so the tools format both alike.

This module owns the command lines (``--no-config`` first, as Claude Code runs its own rg),
running ``rg`` under the search's deadline (it is killed there and what it printed so far is
kept), and reading its output: ``--files --null`` for Glob, ``-l --null`` and ``-c -H --null``
for Grep's files and counts, ``--json`` for its lines where Claude Code's reading of it matters
(a file named outright, ``-o``) and the plain ``path NUL number:text`` lines elsewhere (the same
lines, read several times faster); its notes on bad ignore files (stderr) and its errors (a bad
regex: a `ToolError`). Claude Code's Glob adds ``--sort=modified``; here the files are ordered
by their modification time after the run (as ripgrep 14's sort does), which lets ripgrep walk in
parallel.
"""

from __future__ import annotations

import base64
import json
import os
import re
import selectors
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from teammate.tools.base import ToolError
from teammate.tools.patterns import VCS_DIRECTORIES
from teammate.tools.scan import FileResult, GrepOutcome, GrepRequest, Hit
from teammate.tools.walk import Deadline, GlobRequest, Listing

MAX_COLUMNS = "500"
_IGNORE_ERROR = re.compile(r"^(.*): line (\d+): error parsing glob '(.*)': (.*)$")


def absolute(cwd: str, name: str) -> str:
    """A path ripgrep printed (``./a/b``, or absolute for a file named outright) made absolute
    against the folder it ran in (an absolute, normalised path)."""
    if name.startswith("/"):
        return name
    return f"{cwd.rstrip('/')}/{name.removeprefix('./')}"


def rg_executable() -> str | None:
    """The ``rg`` on PATH, if there is one."""
    return shutil.which("rg")


@dataclass
class _Run:
    stdout: bytes
    stderr: str
    code: int | None
    timed_out: bool


def _run(args: list[str], cwd: str, deadline: Deadline) -> _Run:
    """`args` run in `cwd` until they end or `deadline` (then killed)."""
    process = subprocess.Popen(
        args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.fileno(), process.stderr.fileno()
    output: dict[int, list[bytes]] = {out: [], err: []}
    timed_out = False
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            if deadline.expired():
                timed_out = True
                break
            for key, _ in selector.select(timeout=min(deadline.remaining(), 0.5)):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    output[key.fd].append(chunk)
                else:
                    selector.unregister(key.fileobj)
    if timed_out:
        process.kill()
    code = process.wait()
    process.stdout.close()
    process.stderr.close()
    stderr = b"".join(output[err]).decode("utf-8", errors="replace")
    stdout = b"".join(output[out])
    return _Run(stdout, stderr, None if timed_out else code, timed_out)


def _notes(stderr: str, cwd: str) -> list[str]:
    """ripgrep's complaints about ignore files, as the pure-Python walk words them."""
    notes = []
    for line in stderr.splitlines():
        found = _IGNORE_ERROR.match(line)
        if found:
            path = os.path.normpath(os.path.join(cwd, found.group(1)))
            notes.append(
                f"{path} line {found.group(2)}: the pattern '{found.group(3)}' is not valid "
                f"({found.group(4)}); that line is skipped, the rest of the file applies"
            )
    return notes


def _failure(run: _Run, pattern: str = "") -> ToolError | None:
    """The error ripgrep stopped on, if it printed nothing else (exit code 2)."""
    if run.code != 2 or run.stdout:
        return None
    lines = [line for line in run.stderr.splitlines() if not _IGNORE_ERROR.match(line)]
    text = "\n".join(lines).strip()
    if "regex parse error" in text or "literal" in text:
        reasons = [line for line in lines if line.startswith("error: ")] or lines or [text]
        reason = reasons[0].removeprefix("error: ")
        return ToolError(f"Invalid regular expression {pattern!r}: {reason}\n{text}")
    return ToolError(f"ripgrep failed: {text or 'exit code 2'}")


def rg_glob(rg: str, request: GlobRequest, deadline: Deadline) -> Listing:
    """Glob through ripgrep: ``rg --files --glob PATTERN`` in the searched folder."""
    args = [rg, "--no-config", "--files", "--null", "--glob", request.pattern]
    args += [] if request.ignore_files else ["--no-ignore"]
    args += ["--hidden"] if request.hidden else []
    for name in VCS_DIRECTORIES:
        args += ["--glob", f"!{name}"]
    run = _run([*args, "."], request.root, deadline)
    failure = _failure(run)
    if failure is not None:
        raise failure
    files = []
    for name in _complete(run.stdout, b"\0"):
        path = absolute(request.root, name)
        try:
            files.append((os.lstat(path).st_mtime_ns, path))
        except OSError:
            continue
    return Listing(files, run.timed_out, _notes(run.stderr, request.root))


def _complete(data: bytes, separator: bytes) -> list[str]:
    """The whole records of `data` (the last is cut when ripgrep was killed)."""
    records = data.split(separator)
    records.pop()  # what follows the last separator: empty, or a record ripgrep was writing
    return [record.decode("utf-8", errors="surrogateescape") for record in records if record]


def _json_output(request: GrepRequest) -> bool:
    """Whether content is read from ``--json`` (Claude Code's choice): for a file named
    outright (a binary one's lines) and for ``-o`` (its empty matches); elsewhere ripgrep's
    plain ``path NUL number:text`` lines say the same and read several times faster."""
    return request.mode == "content" and (not request.is_dir or request.only_matching)


def grep_args(rg: str, request: GrepRequest) -> list[str]:
    """Claude Code's command line for a Grep search (the pattern, then the filters)."""
    args = [rg, "--no-config", "--hidden", "--no-follow"]
    for name in VCS_DIRECTORIES:
        args += ["--glob", f"!{name}"]
    mode = request.mode
    if mode != "content" or _json_output(request):
        args += ["--max-columns", MAX_COLUMNS]  # the plain lines are cut here, not by rg
    args += ["-U", "--multiline-dotall"] if request.multiline else []
    args += ["-i"] if request.ignore_case else []
    args += {"files_with_matches": ["-l"], "count": ["-c", "-H"], "content": []}[mode]
    if mode == "content":
        args += ["--json"] if _json_output(request) else ["--null", "--no-heading", "-H"]
        args += ["-n", "-o"] if request.only_matching else ["-n"]
        args += ["-B", str(request.before), "-A", str(request.after)]
    else:
        args += ["--null"]
    args += ["-e", request.pattern]
    args += ["--type", request.file_type] if request.file_type else []
    for glob in request.globs:
        args += ["--glob", glob]
    return args


def rg_grep(rg: str, request: GrepRequest, deadline: Deadline) -> GrepOutcome:
    """Grep through ripgrep, in the searched folder (or the named file's)."""
    cwd = request.root if request.is_dir else os.path.dirname(request.root)
    target = "." if request.is_dir else request.root
    run = _run([*grep_args(rg, request), target], cwd, deadline)
    failure = _failure(run, request.pattern)
    if failure is not None:
        raise failure
    if _json_output(request):
        results = _json_results(run.stdout, cwd, request.only_matching)
    elif request.mode == "content":
        results = _plain_results(run.stdout, cwd)
    else:
        results = _listed(run.stdout, cwd, request.mode == "count")
    return GrepOutcome(results, run.timed_out, _notes(run.stderr, cwd))


_LINE = re.compile(rb"([^\0\n]*)\0(\d+)([:-])(.*)")
_STOPPED = re.compile(
    rb"(.*): WARNING: stopped searching binary file after match "
    rb'\(found "\\0" byte around offset (\d+)\)'
)


def _plain_results(stdout: bytes, cwd: str) -> list[FileResult]:
    """``--null --no-heading -n`` content lines (``path NUL number:text``, context with
    ``-``) as results; ripgrep's note on a binary file it stopped searching sets its offset."""
    results: dict[bytes, FileResult] = {}
    for line in stdout.split(b"\n")[:-1]:  # the last: empty, or cut by a kill
        found = _LINE.fullmatch(line)
        if found is None:
            stopped = _STOPPED.fullmatch(line)
            if stopped is not None:
                _result(results, stopped.group(1), cwd).binary_offset = int(stopped.group(2))
            continue  # "--" between groups, or a line cut by a kill
        path, number, mark, text = found.groups()
        result = _result(results, path, cwd)
        match = mark == b":"
        result.count += match
        decoded = text.decode("utf-8", errors="replace")
        result.hits.append(Hit(int(number), match, decoded.rstrip("\r")))
    return list(results.values())


def _result(results: dict[bytes, FileResult], raw: bytes, cwd: str) -> FileResult:
    result = results.get(raw)
    if result is None:
        name = raw.decode("utf-8", errors="surrogateescape")
        result = results[raw] = FileResult(absolute(cwd, name))
    return result


def _listed(stdout: bytes, cwd: str, count: bool) -> list[FileResult]:
    """``-l --null`` or ``-c -H --null`` output as results."""
    if not count:
        return [FileResult(absolute(cwd, name), 1) for name in _complete(stdout, b"\0")]
    results = []
    text = stdout.decode("utf-8", errors="surrogateescape")
    for found in re.finditer(r"([^\0]*)\0(\d+)\n", text):
        if found.group(2) != "0":
            path = absolute(cwd, found.group(1))
            results.append(FileResult(path, int(found.group(2))))
    return results


def _text(value: dict[str, Any] | None) -> str:
    """A ripgrep JSON string: ``{"text": ...}`` or ``{"bytes": base64}`` (not UTF-8)."""
    if not value:
        return ""
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


def _json_results(stdout: bytes, cwd: str, only_matching: bool) -> list[FileResult]:
    """``--json`` output as results, one per file (a file cut by a kill included)."""
    results: dict[str, FileResult] = {}
    for line in stdout.split(b"\n"):
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill, or not JSON
        data = event.get("data") or {}
        kind = event.get("type")
        if kind not in ("match", "context", "end"):
            continue
        path = absolute(cwd, _text(data.get("path")))
        result = results.setdefault(path, FileResult(path))
        if kind == "end":
            result.binary_offset = data.get("binary_offset")
        else:
            _add_lines(result, data, kind == "match", only_matching)
    return [result for result in results.values() if result.hits or result.count]


def _add_lines(result: FileResult, data: dict[str, Any], match: bool, only: bool) -> None:
    number = int(data.get("line_number") or 0)
    text = _text(data.get("lines"))
    text = text[:-1] if text.endswith("\n") else text
    if match:
        result.count += 1
    submatches = data.get("submatches") or []
    if match and only:
        raw = text.encode("utf-8", errors="surrogateescape")
        for sub in submatches:
            first = number + raw.count(b"\n", 0, int(sub.get("start") or 0))
            matched = _text(sub.get("match"))
            if not matched:
                continue  # -o shows the non-empty matches
            pieces = matched.split("\n")
            result.hits.extend(
                Hit(first + offset, True, piece.rstrip("\r")) for offset, piece in enumerate(pieces)
            )
        return
    result.hits.extend(
        Hit(number + offset, match, piece.rstrip("\r"))
        for offset, piece in enumerate(text.split("\n"))
    )
