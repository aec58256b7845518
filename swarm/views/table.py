"""The text of `swarm status`: a `TeamView` as plain, aligned text (no colours, no terminal codes).

Sections: a header line; one row per member (state, current task, last activity and its age,
turns and model calls, how full its context window is and how often it was compacted (``ctx``:
``62%``, ``8% ↻3``), tokens in (cached) / out, estimated cost), each followed by an indented
row per running sub-agent (``alice \u203a Explore``: its description as the task, its last tool
call, its own turns, calls, tokens and cost, which the member's row already counts) and per
background command running (``alice \u203a $ b1a2c3d4``: its description, its command); the task
board by status (every in-progress and pending task, the last `COMPLETED_SHOWN` completed ones);
the requests waiting for the lead (each with its real input in full, the sub-agent that asked,
if one did, and under it the teammate's description when it says something else, labelled as
unverified: what a loop or stall guard asks shows there); the last messages to the lead; the
team's totals; how to see the teammates' tmux panes (`swarm.views.panes`: a private server is
not in ``tmux ls``). Every string read from a file is escaped with
`protocols.printable.printable_line`.
"""

from __future__ import annotations

from typing import Any

from protocols.member.prices import usd
from protocols.member.status_keys import subagent_label
from protocols.names import LEAD_NAME
from protocols.printable import printable_line, printable_lines
from protocols.tasks.task import list_line
from swarm.team.approvals import LABELLED_KINDS
from swarm.team.request_text import details
from swarm.views.panes import pane_servers
from swarm.views.snapshot import MemberView, SubAgentView, TeamView

COMPLETED_SHOWN = 10
TASK_WIDTH = 32
ACTIVITY_WIDTH = 48
HEADERS = (
    "member",
    "state",
    "task",
    "activity",
    "turns",
    "calls",
    "ctx",
    "tokens in (cached) / out",
    "cost",
)
NUMERIC = frozenset(HEADERS[4:])  # turns, calls, ctx, tokens, cost: right-aligned
STATE_LABEL = {"waiting": "waiting for approval"}
SUBAGENT_INDENT = "  "  # a sub-agent's row, under its member's


def turns_and_calls(view: TeamView) -> tuple[int, int]:
    """The team's turns and model calls, summed over its members."""
    return sum(m.turns for m in view.members), sum(m.requests for m in view.members)


def state_label(state: str) -> str:
    """What a person reads for a member's state (``waiting`` means a request is open)."""
    return STATE_LABEL.get(state, state)


def ago(seconds: float | None) -> str:
    """``12s ago``, ``3m ago``, ``1.5h ago``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def tokens(usage: dict[str, int]) -> str:
    """``1,200 (900) / 40``: every prompt token (of which cache reads) / output tokens."""
    cached = usage.get("cache_read_input_tokens", 0)
    prompt = usage.get("input_tokens", 0) + cached + usage.get("cache_creation_input_tokens", 0)
    return f"{prompt:,} ({cached:,}) / {usage.get('output_tokens', 0):,}"


def context_cell(member: MemberView) -> str:
    """How full its context window is, and how often it was compacted: ``62%``, ``8% ↻3``
    (``-`` for a member with no conversation, a shell worker)."""
    if not member.context_window or member.context_tokens is None:
        return "-"
    share = f"{100 * member.context_tokens / member.context_window:.0f}%"
    return f"{share} ↻{member.compactions}" if member.compactions else share


def money(value: float | None) -> str:
    """``$0.0123``, or ``-`` when there is no price."""
    return "-" if value is None else f"${value:.4f}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _row(member: MemberView) -> tuple[str, ...]:
    activity = (
        f"{_clip(printable_line(member.activity), ACTIVITY_WIDTH)} ({ago(member.activity_age_s)})"
        if member.activity
        else "-"
    )
    return (
        printable_line(member.name),
        printable_line(state_label(member.state)),
        _clip(printable_line(member.task), TASK_WIDTH) if member.task else "-",
        activity,
        str(member.turns),
        str(member.requests),
        context_cell(member),
        tokens(member.usage),
        cost_cell(member),
    )


def cost_cell(member: MemberView) -> str:
    """``$0.0123``; against its cost limit, what the member counts: ``$0.4200/$1.00``."""
    limit = member.budget.get("maxCostUsd") if member.budget else None
    if member.budget is None or limit is None:
        return money(member.cost_usd)
    return f"{money(member.budget['costUsd'])}/{usd(limit)}"


def _subagent_row(sub: SubAgentView) -> tuple[str, ...]:
    return (
        SUBAGENT_INDENT + printable_line(sub.label),
        printable_line(sub.state),
        _clip(printable_line(sub.description), TASK_WIDTH) if sub.description else "-",
        _clip(printable_line(sub.activity), ACTIVITY_WIDTH) if sub.activity else "-",
        str(sub.turns),
        str(sub.requests),
        "-",
        tokens(sub.usage),
        money(sub.cost_usd),
    )


def shell_cells(member: MemberView, shell: dict[str, Any]) -> tuple[str, str, str, str]:
    """A running background command's name, state, task and activity cells: ``alice \u203a $
    b1a2c3d4``, ``running``, its description (or command), its command."""
    kind = "monitor" if shell.get("kind") == "monitor" else "$"
    name = subagent_label(member.name, f"{kind} {shell.get('id', '?')}")
    command = printable_line(str(shell.get("command") or ""))
    what = printable_line(str(shell.get("description") or "")) or command
    return name, printable_line(str(shell.get("state", ""))), what, command


def _shell_row(member: MemberView, shell: dict[str, Any]) -> tuple[str, ...]:
    name, state, what, command = shell_cells(member, shell)
    return (
        SUBAGENT_INDENT + name,
        state,
        _clip(what, TASK_WIDTH),
        _clip(command, ACTIVITY_WIDTH),
        "",
        "",
        "",
        "",
        "",
    )


def member_rows(member: MemberView) -> list[tuple[str, ...]]:
    """The member's row, then one per running sub-agent and background command."""
    return [
        _row(member),
        *(_subagent_row(s) for s in member.running_subagents),
        *(_shell_row(member, s) for s in member.running_shells),
    ]


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    numeric = {i for i, header in enumerate(HEADERS) if header in NUMERIC}
    lines = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def render(view: TeamView) -> str:
    """The static text of `swarm status` for `view`."""
    counts = {s: len(view.tasks.get(s, [])) for s in ("pending", "in_progress", "completed")}
    waiting = len(view.requests)
    lines = [
        f"team {view.team}: {len(view.members)} members; tasks {counts['pending']} pending, "
        f"{counts['in_progress']} in progress, {counts['completed']} completed, "
        f"{len(view.failed)} failed ({len(view.blocked)} blocked); "
        f"{waiting} request{'s' if waiting != 1 else ''} waiting"
    ]
    lines += _table([HEADERS, *(row for m in view.members for row in member_rows(m))])
    for member in view.members:  # a failed MCP server is worth a line; connected ones are not
        for server in member.failed_mcp_servers:
            name, error = server.get("name"), server.get("error")
            problem = f"{member.name}: MCP server {name} failed: {error}"
            lines.append(f"  {printable_line(_clip(problem, 160))}")

    lines.append("")
    lines.append("tasks")
    for status in ("in_progress", "pending", "completed"):
        listed = view.tasks.get(status, [])
        lines.append(f"  {status.replace('_', ' ')} ({len(listed)})")
        shown = listed[-COMPLETED_SHOWN:] if status == "completed" else listed
        if len(shown) < len(listed):
            lines.append(f"    ... {len(listed) - len(shown)} earlier")
        lines += ["    " + line for line in printable_lines([list_line(t) for t in shown])]
    if view.failed:
        lines.append(f"  failed ({len(view.failed)}): swarm task retry ID puts one back")
        for t in view.failed:
            lines.append(f"    {printable_line(list_line(t) + ': ' + t.failure)}")
            tail = view.failure_tails.get(t.id, [])
            lines += [f"      | {printable_line(line)}" for line in tail]

    lines.append("")
    lines.append(f"requests waiting ({waiting})")
    for r in view.requests:
        asks = printable_line(f"{r.id}  {r.agent or r.teammate}  {r.tool}: {r.summary}")
        lines.append(f"  {asks}  ({ago(r.age_s)})")
        if r.pending is not None and r.kind in LABELLED_KINDS:  # why, if not the input
            lines += [f"    {line}" for line in details(r.pending)]  # ("a loop? ...")
    if not view.requests:
        lines.append("  none")

    lines.append("")
    lines.append(f"last messages to {LEAD_NAME}")
    for m in view.messages:
        lines.append(f"  {printable_line(f'{m.sender}: {m.text}')}  ({ago(m.age_s)})")
    if not view.messages:
        lines.append("  none")

    turns, calls = turns_and_calls(view)
    lines.append("")
    lines.append(
        f"total: {turns} turns, {calls} calls, tokens {tokens(view.usage)}, "
        f"cost {money(view.cost_usd)}" + (" (estimate)" if view.cost_usd is not None else "")
    )
    for panes in pane_servers(view.team, view.members):  # how to see them: not in `tmux ls`
        lines.append(printable_line(f"panes of {panes.line()}"))
    return "\n".join(lines)
