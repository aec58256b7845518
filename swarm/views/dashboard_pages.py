"""Pages of `swarm watch` that take the whole screen: one request in full, when the person
pressed Enter on it (`detail_frame`: the diff of a Write or an Edit, the command, the plan), and a
member's recent log lines (`page_frame`), each scrolled to where the person is.

Their lines arrive escaped; they are drawn as `Text` that never wraps, cut to the width.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from protocols.printable import printable_line
from swarm.views.dashboard_frame import MIN_WIDTH, title_line
from swarm.views.snapshot import RequestView


def detail_body(height: int, note: str, bottom: str) -> int:
    """How many lines of a request's content `detail_frame` shows in `height` lines."""
    return max(1, height - 2 - (1 if note else 0) - (1 if bottom else 0))


def detail_frame(
    request: RequestView,
    content: Sequence[str],
    width: int,
    height: int,
    *,
    scroll: int = 0,
    note: str = "",
    bottom: str = "",
) -> Group:
    """`request` in full: a title line, its `content` (escaped lines: the diff, the command,
    the plan) from line `scroll` on, as much as `height` lines hold, a note and the key line."""
    title = printable_line(
        f"{request.id} · {request.agent or request.teammate} · {request.tool}: {request.summary}"
    )
    return page_frame(
        title, content, width, height, scroll=scroll, note=note, bottom=bottom, diff=True
    )


def page_frame(
    title: str,
    content: Sequence[str],
    width: int,
    height: int,
    *,
    scroll: int = 0,
    note: str = "",
    bottom: str = "",
    diff: bool = False,
    style: str = "bold yellow",
) -> Group:
    """A page of escaped `content` lines under `title`, from line `scroll` on, as much as
    `height` lines hold (where it is in the whole said when it is not all shown), a note and
    the key line; with `diff`, added lines green and removed ones red."""
    width = max(width, MIN_WIDTH)
    body = detail_body(height, note, bottom)
    part = list(content[scroll : scroll + body])
    below = max(0, len(content) - scroll - len(part))
    where = f"lines {scroll + 1}-{scroll + len(part)} of {len(content)}" if below or scroll else ""
    out = [title_line(title, style), Text(where or " ", style="dim", no_wrap=True)]
    for text in part:
        shade = "green" if text.startswith("+") else "red" if text.startswith("-") else ""
        out.append(Text(text, style=shade if diff else "", no_wrap=True, overflow="ellipsis"))
    if note:
        out.append(Text(note, style="dim", no_wrap=True, overflow="ellipsis"))
    if bottom:
        out.append(Text(bottom, style="dim", no_wrap=True, overflow="ellipsis"))
    for line in out:
        line.truncate(width, overflow="ellipsis")
    return Group(*out)
