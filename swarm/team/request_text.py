"""How a request waiting for the lead is shown to a person: the tool and the real input it would
act on, apart from the description the teammate wrote about it.

A teammate may be hostile, and the description of a permission request is its own words: it
may say ``Run: ls docs`` of ``rm -rf ~``. So what a person approves is always shown from the
request's input (`target`: a Bash command, a file tool's path, a host, else the whole input as
JSON), in full and escaped (`protocols.printable`); the description follows on a line of its own,
labelled as the teammate's. `target` is raw text (for JSON and for callers that escape it
themselves); `ask_line` and `details` are escaped, ready to print.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.printable import printable, printable_line

if TYPE_CHECKING:
    from swarm.team.approvals import Pending

FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead"})
PLAN_KIND = "plan_approval_request"
QUESTION_TOOL = "AskUserQuestion"  # teammate.tools.questions' request: its questions are shown
DESCRIPTION_LABEL = "the teammate's description (unverified)"


def target(tool: str, tool_input: dict[str, Any]) -> str:
    """What a call of `tool` with `tool_input` acts on, unescaped: a Bash command, a file tool's
    path, a network host; the whole input as JSON for anything else."""
    for key, tools in (
        ("command", {"Bash"}),
        ("file_path", FILE_TOOLS),
        ("notebook_path", FILE_TOOLS),
        ("host", {"network"}),
    ):
        value = tool_input.get(key)
        if tool in tools and isinstance(value, str):
            return value
    return json.dumps(tool_input, ensure_ascii=False, default=str)


def ask_line(pending: Pending) -> str:
    """``Bash: <the full command>``, ``Write: <path>``, ``ExitPlanMode: a plan``,
    ``AskUserQuestion: 2 questions``: one line, escaped."""
    what = "a plan" if pending.kind == PLAN_KIND else target(pending.tool, pending.input)
    if pending.tool == QUESTION_TOOL:
        count = len(pending.input.get("questions") or [])
        what = f"{count} question{'s' if count != 1 else ''} (swarm answer {pending.id} ...)"
    return f"{printable_line(pending.tool)}: {printable_line(what)}"


def details(pending: Pending) -> list[str]:
    """The lines shown under `ask_line`, escaped: a plan's content (its lines kept), or the
    teammate's description of a permission request when it says something else than the
    input does (without the label of the sub-agent that asked: `Pending.agent`)."""
    if pending.kind == PLAN_KIND:
        return printable(pending.description).splitlines() or ["(an empty plan)"]
    if pending.tool == QUESTION_TOOL:
        return [printable_line(line) for line in question_lines(pending.input)]
    asked = pending.asked  # without the label of the sub-agent that asked
    if pending.kind not in ("permission_request", "file") or not asked:
        return []  # a sandbox request's description is swarm's own ("connect to HOST")
    if asked == target(pending.tool, pending.input):
        return []
    return [f"{DESCRIPTION_LABEL}: {printable_line(asked)}"]


def question_lines(tool_input: dict[str, Any]) -> list[str]:
    """A question request (`teammate.tools.questions`) as a person reads it, unescaped: each
    question, then its options, numbered (what `swarm answer` takes)."""
    lines: list[str] = []
    questions = tool_input.get("questions")
    for number, question in enumerate(questions if isinstance(questions, list) else [], 1):
        if not isinstance(question, dict):
            continue
        several = " (several may be chosen: 1,3)" if question.get("multiSelect") else ""
        lines.append(f"{number}. {question.get('question', '')}{several}")
        for index, option in enumerate(question.get("options") or [], 1):
            if isinstance(option, dict):
                label, about = option.get("label", ""), option.get("description", "")
                lines.append(f"   {index}) {label}: {about}")
    return lines


SHOWN_LINES = 400  # of a request's content in a detail view (the rest is counted)
READ_LIMIT = 2_000_000  # bytes of a file read to show the diff of a Write or an Edit


def content_lines(pending: Pending, cwd: Path | None = None, most: int = SHOWN_LINES) -> list[str]:
    """What approving `pending` lets the teammate do, in full and escaped: the diff a Write or
    an Edit makes to the file as it is now (its path taken from the teammate's working
    directory `cwd`), a Bash command, a plan, the questions; the input as JSON otherwise. At
    most `most` lines, then how many more."""
    if pending.kind == PLAN_KIND:
        lines = _split(pending.description) or ["(an empty plan)"]
    elif pending.tool == QUESTION_TOOL:
        lines = question_lines(pending.input)
    elif pending.tool == "Bash" and isinstance(pending.input.get("command"), str):
        lines = ["$ " + line for line in _split(str(pending.input["command"]))]
    elif pending.tool in ("Write", "Edit") and isinstance(pending.input.get("file_path"), str):
        lines = _diff(pending.tool, pending.input, cwd)
    else:
        lines = json.dumps(pending.input, ensure_ascii=False, indent=2, default=str).splitlines()
    shown = [printable_line(line) for line in lines[:most]]
    if len(lines) > most:
        shown.append(f"... {len(lines) - most} more lines")
    return shown


def _diff(tool: str, tool_input: dict[str, Any], cwd: Path | None) -> list[str]:
    """The unified diff `tool` would make to its file (a new file: all of it, added)."""
    path = Path(str(tool_input["file_path"])).expanduser()
    if not path.is_absolute() and cwd is not None:
        path = cwd / path
    before, note = _current(path)
    if tool == "Write":
        after = str(tool_input.get("content", ""))
    else:
        old, new = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
        if before is None or not old or old not in before:
            where = "the file does not exist" if before is None else "it is not in the file now"
            return [
                f"(an edit of {path}: the text to replace was not found: {where})",
                *("- " + line for line in _split(old)),
                *("+ " + line for line in _split(new)),
            ]
        count = -1 if tool_input.get("replace_all") else 1
        after = before.replace(old, new, count)
    diff = difflib.unified_diff(
        _split(before or "", keepends=True),
        _split(after, keepends=True),
        fromfile=str(path) if before is not None else "/dev/null",
        tofile=str(path),
    )
    lines = [line.rstrip("\n") for line in diff]
    return ([note] if note else []) + (lines or [f"(no change to {path})"])


def _split(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines, split at newlines only: a carriage return, a form feed or a Unicode line
    separator stays in its line (shown escaped), as the shell and the file have it."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [part + "\n" for part in parts] if keepends else parts


def _current(path: Path) -> tuple[str | None, str]:
    """The file's text now (None: there is none), and a note if it could not be read whole.
    Only a regular file is read: a FIFO or a device planted at the path is never opened for
    a blocking read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"({path} cannot be read: {exc.strerror or exc}: shown as a new file)"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"({path} is not a regular file: shown as a new file)"
        data = handle.read(READ_LIMIT + 1)
    note = (
        f"(only the first {READ_LIMIT:,} bytes of {path} compared)"
        if len(data) > READ_LIMIT
        else ""
    )
    return data[:READ_LIMIT].decode("utf-8", errors="replace"), note
