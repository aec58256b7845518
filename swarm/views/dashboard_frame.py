"""One frame of `swarm watch`, laid out for a terminal of a given width and height (a page of
one request in full, or of a member's log: `swarm.views.dashboard_pages`).

Top to bottom: a header line; the members (one row each, a row per running sub-agent under
its member, the team's total); the task board; the requests waiting for you; the last messages
to the lead; a note, if there is one; the key line (or the prompt being typed).

It fits the terminal rather than the other way round. Columns go by priority as the width
shrinks: member and state always, then the current task, the activity, the cost and the
context window's use, the tokens,
and turns and calls last; a long value is cut with an ellipsis, never drawn in a column one
character wide (`swarm.views.layout`). Lines go by priority as the height shrinks: the key line
and the requests waiting for you always stay (at least the selected one), then the members,
the tasks in progress, failed and pending, the last few messages; completed tasks fold into
one line (``✓ 37 completed``) unless there is room for them. A tall screen is filled with more:
the older messages the view holds, then more completed tasks. Whatever is cut says
``… N more``.

Every line is one `Text` that never wraps. What teammates wrote reaches rich only as `Text`
(never parsed as markup), escaped with `protocols.printable.printable_line`; a colour from a
file is used only when it names a colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text

from protocols.names import LEAD_NAME
from protocols.printable import printable_line
from protocols.tasks.task import TaskLike
from swarm.views.dashboard_keys import KEYS
from swarm.views.layout import Column, Section, allot, cell, clip, fit_columns
from swarm.views.snapshot import MemberView, SubAgentView, TeamView
from swarm.views.table import (
    HEADERS,
    SUBAGENT_INDENT,
    ago,
    context_cell,
    money,
    shell_cells,
    state_label,
    tokens,
    turns_and_calls,
)

STATE_STYLE = {
    "working": "bold green",
    "waiting": "bold yellow",
    "idle": "cyan",
    "dead": "bold red",
    "stopped": "dim",
    "starting": "magenta",
    "lead": "bold",
}
COLOR = {"purple": "magenta", "orange": "dark_orange", "pink": "hot_pink"}
NAMED = frozenset({"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"})
MIN_WIDTH = 30
UNLIMITED = 1_000_000  # lines, for a frame printed once rather than fitted to a screen
COMPLETED_SHOWN = 10  # completed tasks listed at most (the rest fold into one line)
MESSAGES_FIRST = 8  # messages shown before the board's pending and completed tasks get room
NUMBER = 1000  # a numeric column's minimum: never cut, it is kept whole or left out
# in the order of table.HEADERS: member, state, task, activity, turns, calls, ctx, tokens, cost
MEMBER_COLUMNS = (
    Column(HEADERS[0], 0, 6, cap=16),
    Column(HEADERS[1], 0, 7, cap=20),
    Column(HEADERS[2], 1, 12, weight=2, comfort=28),
    Column(HEADERS[3], 2, 16, weight=3, comfort=36),
    Column(HEADERS[4], 5, NUMBER, right=True),
    Column(HEADERS[5], 5, NUMBER, right=True),
    Column(HEADERS[6], 3, NUMBER, right=True),
    Column(HEADERS[7], 4, NUMBER, right=True),
    Column(HEADERS[8], 3, NUMBER, right=True),
)
REQUEST_COLUMNS = (
    Column("", 0, 1),
    Column("id", 3, 12, weight=1),
    Column("from", 0, 6, cap=24),
    Column("asks", 1, 16, weight=3, comfort=40),
    Column("age", 2, NUMBER, right=True),
)
MESSAGE_COLUMNS = (
    Column("from", 0, 6, cap=24),
    Column("message", 0, 12, weight=1),
    Column("age", 1, NUMBER, right=True),
)
ACTIVITY = 3  # the activity column: its age is kept when the text is cut


@dataclass(frozen=True)
class Row:
    """One table row: its cells (a cell may be (text, suffix): the suffix survives a cut), a
    style per cell, and one for the whole row."""

    cells: tuple[str | tuple[str, str], ...]
    styles: tuple[str, ...] = ()
    style: str = ""


def _color(name: str | None) -> str:
    """A member's colour as a rich style, "" unless it names a colour (a style from a file
    could blink, or link the name to anywhere)."""
    style = COLOR.get(name or "", name or "")
    return style if style in NAMED or style in COLOR.values() else ""


def _plain(value: str | tuple[str, str]) -> str:
    return value if isinstance(value, str) else value[0] + value[1]


def _fit(value: str | tuple[str, str], width: int) -> str:
    """A cell's text in `width` cells: a (text, suffix) cell cuts its text, keeping the suffix
    while the text keeps a few cells of its own."""
    if isinstance(value, str) or cell_len(_plain(value)) <= width:
        return _plain(value)
    text, suffix = value
    if width - cell_len(suffix) < 8:
        return clip(_plain(value), width)
    return clip(text, width - cell_len(suffix)) + suffix


def _table(
    columns: Sequence[Column], header: bool, rows: list[Row], width: int, drawn: slice = slice(None)
) -> list[Text]:
    """`rows` (with a header line if `header`) as lines of at most `width` cells; only the
    lines in `drawn` are drawn, with the widths every row would need."""
    head = Row(tuple(c.name for c in columns), style="bold") if header else None
    every = [head, *rows] if head else rows
    widths = fit_columns(columns, [[_plain(v) for v in r.cells] for r in every], width)
    lines = []
    for row in every[drawn]:
        line = Text(style=row.style, no_wrap=True, overflow="ellipsis")
        first = True
        for i, (column, w) in enumerate(zip(columns, widths, strict=True)):
            if not w:
                continue
            if not first:
                line.append("  ")
            first = False
            style = row.styles[i] if i < len(row.styles) else ""
            line.append(cell(_fit(row.cells[i], w), w, column.right), style=style)
        line.rstrip()
        lines.append(line)
    return lines


def _more(count: int, what: str) -> Text:
    return Text(f"  … {count} more {what}".rstrip(), style="dim", no_wrap=True)


def title_line(text: str, style: str = "bold") -> Text:
    return Text(printable_line(text), style=style, no_wrap=True, overflow="ellipsis")


# the members


def _member_row(m: MemberView, selected: bool = False) -> Row:
    activity: str | tuple[str, str] = "-"
    if m.activity:
        activity = (printable_line(m.activity), f" ({ago(m.activity_age_s)})")
    return Row(
        (
            printable_line(m.name),
            printable_line(state_label(m.state)),
            printable_line(m.task) if m.task else "-",
            activity,
            str(m.turns),
            str(m.requests),
            context_cell(m),
            tokens(m.usage),
            money(m.cost_usd),
        ),
        (_color(m.color), STATE_STYLE.get(m.state, "")),
        style="reverse" if selected else "",
    )


def _subagent_row(sub: SubAgentView) -> Row:
    return Row(
        (
            SUBAGENT_INDENT + printable_line(sub.label),
            printable_line(sub.state),
            printable_line(sub.description) if sub.description else "-",
            printable_line(sub.activity) if sub.activity else "-",
            str(sub.turns),
            str(sub.requests),
            "-",
            tokens(sub.usage),
            money(sub.cost_usd),
        ),
        (_color(sub.color), STATE_STYLE["working"]),
    )


def _shell_row(m: MemberView, shell: dict[str, Any]) -> Row:
    name, state, what, command = shell_cells(m, shell)
    return Row(
        (SUBAGENT_INDENT + name, state, what, command, "", "", "", "", ""),
        (_color(m.color), STATE_STYLE["working"]),
    )


def _member_rows(view: TeamView, selected: str | None = None) -> list[Row]:
    """Each member's row (`selected`'s highlighted), then its sub-agents' and commands'."""
    rows = []
    for m in view.members:
        rows.append(_member_row(m, m.name == selected))
        rows += [_subagent_row(s) for s in m.running_subagents]  # counted in the member's row
        rows += [_shell_row(m, s) for s in m.running_shells]
    return rows


def _members(view: TeamView, rows: list[Row], width: int, lines: int) -> list[Text]:
    """The header, as many `rows` as fit (then ``… N more``), and the total if there is room."""
    turns, calls = turns_and_calls(view)
    total = Row(
        (
            "total",
            "",
            "",
            "",
            str(turns),
            str(calls),
            "",
            tokens(view.usage),
            money(view.cost_usd),
        ),
        style="bold",
    )
    every = [*rows, total]
    if lines >= len(every) + 1:
        return _table(MEMBER_COLUMNS, True, every, width)
    if lines > len(rows):  # every row, no room for the total
        return _table(MEMBER_COLUMNS, True, every, width, slice(0, len(rows) + 1))
    if lines <= 1:
        return _table(MEMBER_COLUMNS, True, every, width, slice(0, lines))
    shown = lines - 2  # the rows drawn: the header, these, and a line saying how many more
    table = _table(MEMBER_COLUMNS, True, every, width, slice(0, shown + 1))
    return [*table, _more(len(rows) - shown, "members and sub-agents")]


# the task board


def _task_text(task: TaskLike, failed: bool = False, tail: Sequence[str] = ()) -> str:
    owner = f" ({task.owner})" if task.owner else ""
    blockers = ", ".join("#" + b for b in task.blockedBy)
    blocked = f" [blocked by {blockers}]" if blockers and not failed else ""
    failure = f": {task.failure}" if failed else ""
    last = f" | {tail[-1]}" if failed and tail else ""  # the last line of its output
    return printable_line(f"#{task.id} {task.subject}{owner}{blocked}{failure}{last}")


def _task_groups(view: TeamView) -> list[tuple[str, str, list[TaskLike], str]]:
    """(mark, style, tasks, word) per group, in the order they get lines."""
    return [
        ("▸", "green", view.tasks.get("in_progress", []), "in progress"),
        ("✗", "red", view.failed, "failed"),
        ("·", "", view.tasks.get("pending", []), "pending"),
        ("✓", "dim", view.tasks.get("completed", []), "completed"),
    ]


def _tasks_want(view: TeamView) -> tuple[int, int, int]:
    """Lines the board needs: (the first part: in progress, failed, a few pending and one
    line for the completed; everything, completed up to COMPLETED_SHOWN; the completed beyond
    those)."""
    inp, failed, pending, done = (len(g[2]) for g in _task_groups(view))
    first = 1 + inp + failed + min(pending, 5) + (pending > 5) + (done > 0)
    every = 1 + inp + failed + pending + min(done, COMPLETED_SHOWN) + (done > COMPLETED_SHOWN)
    return first, every, max(0, done - COMPLETED_SHOWN - 1)  # the fold line: one more


def _tasks(view: TeamView, width: int, lines: int, completed: int = COMPLETED_SHOWN) -> list[Text]:
    """The board in `lines`, at most `completed` completed tasks listed (the rest folded)."""
    groups = _task_groups(view)
    counts = " · ".join(f"{len(t)} {word}" for _, _, t, word in groups if t)
    title = Text("tasks", style="bold", no_wrap=True, overflow="ellipsis")
    title.append(f"  {counts or 'none'}", style="")
    if lines <= 1:
        return [title][:lines]
    room = lines - 1
    sizes = []
    for index, (_, _, listed, _) in enumerate(groups):
        later = sum(1 for g in groups[index + 1 :] if g[2])  # one line each, kept for them
        size = min(len(listed), max(0, room - later)) if listed else 0
        if listed and size == 0 and room > 0:
            size = 1
        size = min(size, completed + 1) if groups[index][3] == "completed" else size
        sizes.append(size)
        room -= size
    out = [title]
    for (mark, style, listed, word), size in zip(groups, sizes, strict=True):
        if not size:
            continue
        if size >= len(listed):
            shown, hidden = listed, 0
        else:
            shown, hidden = (
                (listed[len(listed) - size + 1 :] if word == "completed" else listed[: size - 1]),
                len(listed) - size + 1,
            )
        texts = [
            Text(
                f"  {mark} {_task_text(t, word == 'failed', view.failure_tails.get(t.id, ()))}",
                style=style,
                no_wrap=True,
                overflow="ellipsis",
            )
            for t in shown
        ]
        if hidden and word == "completed":
            folded = f"{hidden} completed" if not shown else f"{hidden} more completed"
            texts.insert(0, Text(f"  ✓ {folded}", style="dim", no_wrap=True))
        elif hidden:
            texts.append(_more(hidden, word))
        out += texts
    return out


# requests and messages


def _requests(
    view: TeamView,
    width: int,
    lines: int,
    selected: int,
    holding: dict[str, str],
    focused: bool = True,
) -> list[Text]:
    waiting = len(view.requests)
    if not waiting:
        return [title_line("waiting for you: nothing is waiting", "")][:lines]
    title = title_line(f"waiting for you ({waiting})", "bold yellow")
    rows = [
        Row(
            (
                ">" if index == selected else "",
                printable_line(r.id),
                printable_line(r.agent or r.teammate),
                printable_line(f"{r.tool}: {r.summary}"),
                holding.get(r.id, ago(r.age_s)),
            ),
            style="reverse" if index == selected and focused else "",
        )
        for index, r in enumerate(view.requests)
    ]
    table = _table(REQUEST_COLUMNS, False, rows, width)
    if lines >= waiting + 1:
        return [title, *table]
    shown = max(1, lines - 2)  # the selected one always, with the ones around it
    start = max(0, min(selected - shown // 2, waiting - shown))
    part = table[start : start + shown]
    rest = [_more(waiting - shown, "(j/k)")] if lines - 1 > shown else []
    return [title, *part, *rest][:lines]


def _messages(view: TeamView, width: int, lines: int) -> list[Text]:
    if lines <= 0 or not view.messages:
        return []
    rows = [
        Row(
            (printable_line(m.sender), printable_line(m.text), ago(m.age_s)),
            (_color(m.color),),
        )
        for m in view.messages
    ]
    table = _table(MESSAGE_COLUMNS, False, rows, width)
    return [title_line(f"last messages to {LEAD_NAME}"), *table[len(table) - (lines - 1) :]][:lines]


def _header(view: TeamView) -> Text:
    waiting = len(view.requests)
    text = (
        f"team {view.team} · {len(view.members)} members · {waiting} "
        f"request{'s' if waiting != 1 else ''} waiting · cost {money(view.cost_usd)}"
    )
    return title_line(text)


# the frame


def frame(
    view: TeamView,
    width: int,
    height: int | None = None,
    *,
    selected: int = 0,
    note: str = "",
    bottom: str = KEYS,
    holding: dict[str, str] | None = None,
    member: str | None = None,
) -> Group:
    """One frame of the dashboard for `view` in `width` columns and `height` lines (None: as
    many as it takes, completed tasks folded past the last few), the `selected` request
    highlighted (or, when the members have the keys, the `member` named), a `note` (already
    escaped) over the `bottom` line (the keys, or a prompt); `holding` marks requests whose
    answer is held (id -> "approving…")."""
    width = max(width, MIN_WIDTH)
    lines = UNLIMITED if height is None else max(height, 1)
    waiting = len(view.requests)
    request_want = 1 + waiting if waiting else 1
    member_rows = _member_rows(view, member)
    members_want = 2 + len(member_rows)
    tasks_first, tasks_every, completed_more = _tasks_want(view)
    messages_want = 1 + len(view.messages) if view.messages else 0
    messages_first = min(messages_want, 1 + MESSAGES_FIRST)
    foot = (1 if note else 0) + (1 if bottom else 0)
    # floors in order of need: the keys and the requests are always there
    sections = [
        Section("foot", foot, foot, 0),
        Section("requests", min(request_want, 2), min(request_want, max(2, lines // 3)), 0),
        Section("header", 1, 1, 0),
        Section("members", min(members_want, 3), members_want, 1),
        Section("tasks", 1, tasks_first, 2),
        Section("messages", 0, messages_first, 3),
        Section("tasks_more", 0, tasks_every - tasks_first, 4),
        Section("requests_more", 0, request_want - min(request_want, max(2, lines // 3)), 5),
    ]
    shown = {"header", "members", "tasks", "requests", "messages"}
    gaps = sum(1 for s in sections if s.name in shown and s.want) - 1
    sections.append(Section("gaps", 0, gaps, 6))
    if height is not None:  # a screen to fill: older messages, then older completed tasks
        sections.append(Section("messages_more", 0, messages_want - messages_first, 7))
        sections.append(Section("completed_more", 0, completed_more, 8))
    got = allot(sections, lines)
    tasks_lines = got["tasks"] + got["tasks_more"] + got.get("completed_more", 0)
    completed = COMPLETED_SHOWN + got.get("completed_more", 0)
    parts: list[list[Text]] = [
        [_header(view)][: got["header"]],
        _members(view, member_rows, width, got["members"]),
        _tasks(view, width, tasks_lines, completed),
        _requests(
            view,
            width,
            got["requests"] + got["requests_more"],
            selected,
            holding or {},
            focused=member is None,
        ),
        _messages(view, width, got["messages"] + got.get("messages_more", 0)),
    ]
    out: list[Text] = []
    blanks = got["gaps"]
    for part in parts:
        if not part:
            continue
        if out and blanks > 0:
            out.append(Text(""))
            blanks -= 1
        out += part
    if note:
        out.append(Text(note, style="dim", no_wrap=True, overflow="ellipsis"))
    if bottom:
        out.append(Text(bottom, style="dim", no_wrap=True, overflow="ellipsis"))
    for line in out:
        line.truncate(width, overflow="ellipsis")
    return Group(*out)
