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

import json
from typing import TYPE_CHECKING, Any

from protocols.printable import printable, printable_line

if TYPE_CHECKING:
    from swarm.team.approvals import Pending

FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead"})
PLAN_KIND = "plan_approval_request"
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
    """``Bash: <the full command>``, ``Write: <path>``, ``ExitPlanMode: a plan``: one line,
    escaped."""
    what = "a plan" if pending.kind == PLAN_KIND else target(pending.tool, pending.input)
    return f"{printable_line(pending.tool)}: {printable_line(what)}"


def details(pending: Pending) -> list[str]:
    """The lines shown under `ask_line`, escaped: a plan's content (its lines kept), or the
    teammate's description of a permission request when it says something else than the
    input does (without the label of the sub-agent that asked: `Pending.agent`)."""
    if pending.kind == PLAN_KIND:
        return printable(pending.description).splitlines() or ["(an empty plan)"]
    asked = pending.asked  # without the label of the sub-agent that asked
    if pending.kind not in ("permission_request", "file") or not asked:
        return []  # a sandbox request's description is swarm's own ("connect to HOST")
    if asked == target(pending.tool, pending.input):
        return []
    return [f"{DESCRIPTION_LABEL}: {printable_line(asked)}"]
