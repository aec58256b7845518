"""Fitting text into a terminal: columns into a width, sections into a height (`swarm watch`).

Widths are counted in terminal cells (a CJK letter or an emoji takes two), never characters.
`fit_columns` picks the columns a width has room for, by priority (the lowest go first; a column
is never squeezed below its minimum, so nothing is drawn one character wide) and shares what is
left between the flexible ones by weight; `cell` cuts a value to its column with an ellipsis.
`allot` shares a height between sections: each gets its floor, then more in priority order.
Nothing here knows about teams; `swarm.views.dashboard` says what the columns and sections are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

ELLIPSIS = "…"
GAP = 2  # cells between two columns


@dataclass(frozen=True)
class Column:
    """One column: its `priority` (0 is never dropped; higher numbers go first), its `minimum`
    width (a value cut shorter would say nothing), the widest it gets when the width is short
    (`cap`, 0 for no cap) and its `weight` when it shares spare width (0: it takes only what
    its values need)."""

    name: str
    priority: int
    minimum: int
    cap: int = 0
    weight: int = 0
    right: bool = False  # right-aligned (numbers)
    comfort: int = 0  # a lower-priority column is shown only if this one keeps this much

    def floor(self, natural: int) -> int:
        return min(self.minimum, natural)

    def room(self, natural: int) -> int:
        """What it keeps before a lower-priority column may take width."""
        return min(natural, max(self.comfort, self.minimum))


def clip(text: str, width: int) -> str:
    """`text` cut to `width` cells, its last cell an ellipsis when cut."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + ELLIPSIS


def cell(text: str, width: int, right: bool = False) -> str:
    """`text` clipped and padded to exactly `width` cells."""
    clipped = clip(text, width)
    pad = " " * (width - cell_len(clipped))
    return pad + clipped if right else clipped + pad


def fit_columns(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """The width of each column in `width` cells for `rows` (header included); 0 for a column
    left out. Columns are kept in priority order while their minimums fit, then each takes
    what its widest value needs (up to its cap); when that is too much, the flexible ones
    shrink first (by weight), then the others, never below their minimums. A column is left
    out, with every column of lower priority, when it would squeeze the ones before it below
    their `comfort`."""
    natural = [max((cell_len(row[i]) for row in rows), default=0) for i in range(len(columns))]
    floor = [c.floor(n) for c, n in zip(columns, natural, strict=True)]
    keep = _kept(columns, natural, floor, width)
    want = [natural[i] if i in keep else 0 for i in range(len(columns))]
    room = width - GAP * (len(keep) - 1)
    if sum(want) > room:  # short of width: the capped columns give up their long values first
        want = [min(w, c.cap) if c.cap else w for w, c in zip(want, columns, strict=True)]
    flexible = [i for i in keep if columns[i].weight]
    fixed = [i for i in keep if not columns[i].weight]
    # the fixed columns shrink only when the flexible ones, at their minimums, would not fit
    _shrink(columns, fixed, want, floor, room - sum(floor[i] for i in flexible))
    _share_flexible(columns, flexible, want, floor, room - sum(want[i] for i in fixed))
    return want


def _share_flexible(
    columns: Sequence[Column], flexible: list[int], want: list[int], floor: list[int], room: int
) -> None:
    """Fit the `flexible` columns' `want` into `room`, by weight, never below their floor."""
    if sum(want[i] for i in flexible) <= room:
        return
    widths = _share(
        [floor[i] for i in flexible],
        [want[i] for i in flexible],
        [columns[i].weight for i in flexible],
        room,
    )
    for i, w in zip(flexible, widths, strict=True):
        want[i] = w


def _kept(columns: Sequence[Column], natural: list[int], floor: list[int], width: int) -> set[int]:
    """The columns kept, a priority at a time, while the next one's minimums still fit beside
    the kept ones at their comfortable widths."""
    keep: set[int] = set()
    used = -GAP  # the columns kept, each at its comfortable width
    for priority in sorted({c.priority for c in columns}):
        group = [i for i, c in enumerate(columns) if c.priority == priority]
        if keep and used + sum(floor[i] + GAP for i in group) > width:
            break
        keep.update(group)
        used += sum(columns[i].room(natural[i]) + GAP for i in group)
    return keep


def _shrink(
    columns: Sequence[Column], fixed: list[int], want: list[int], floor: list[int], room: int
) -> None:
    """Shrink the `fixed` columns' `want` (lowest priority first, never below their floor)
    until they fit in `room`."""
    spare = room - sum(want[i] for i in fixed)
    for i in sorted(fixed, key=lambda i: -columns[i].priority):
        if spare >= 0:
            break
        give = min(want[i] - floor[i], -spare)
        want[i] -= give
        spare += give


def _share(low: list[int], high: list[int], weights: list[int], total: int) -> list[int]:
    """Widths between `low` and `high` summing to at most `total`, spare shared by weight."""
    widths = list(low)
    spare = total - sum(widths)
    while spare > 0:
        open_ = [i for i in range(len(widths)) if widths[i] < high[i]]
        if not open_:
            break
        weight = sum(weights[i] for i in open_)
        given = 0
        for i in open_:
            add = min(high[i] - widths[i], spare * weights[i] // weight)
            widths[i] += add
            given += add
        if not given:  # rounding left less than one cell each: one to the heaviest
            i = max(open_, key=lambda i: weights[i])
            widths[i] += 1
            given = 1
        spare -= given
    return widths


@dataclass(frozen=True)
class Section:
    """A part of the screen for `allot`: it needs `floor` lines, would use `want`, and gets
    lines beyond its floor in `priority` order (lower first)."""

    name: str
    floor: int
    want: int
    priority: int


def allot(sections: Sequence[Section], height: int) -> dict[str, int]:
    """Lines for each section out of `height`: the floors first, in the order given (when even
    they do not fit, the sections given last lose theirs), then each section up to what it
    wants, by priority."""
    lines = {s.name: 0 for s in sections}
    left = height
    for s in sections:
        lines[s.name] = min(s.floor, s.want, max(0, left))
        left -= lines[s.name]
    for s in sorted(sections, key=lambda s: s.priority):
        more = min(s.want - lines[s.name], max(0, left))
        lines[s.name] += more
        left -= more
    return lines
