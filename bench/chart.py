"""A small line chart drawn with Pillow, for benchmarks that plot curves (log-log axes).

`line_chart(path, title, x_label, y_label, series)` writes a PNG: each series is a name, a colour,
a dash flag and its (x, y) points; both axes are logarithmic, with ticks at powers of ten (and
2 and 5 between them on the y axis). A target can be drawn as a horizontal line.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
WIDTH, HEIGHT = 900, 560
LEFT, RIGHT, TOP, BOTTOM = 90, 230, 50, 70


@dataclass
class Series:
    name: str
    colour: str
    points: Sequence[tuple[float, float]]
    dashed: bool = False


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype(str(FONT), size)
    except OSError:
        return ImageFont.load_default()


def _log_ticks(low: float, high: float, steps: Sequence[int]) -> list[float]:
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for step in steps:
            value = step * 10.0**exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def _label(value: float) -> str:
    return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"


def line_chart(
    path: Path,
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    target: tuple[str, float] | None = None,
) -> None:
    """Draw `series` on log-log axes into the PNG at `path`."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if y > 0] + ([target[1]] if target else [])
    x_low, x_high = min(xs) / 1.3, max(xs) * 1.3
    y_low = 10.0 ** math.floor(math.log10(min(ys)))
    y_high = 10.0 ** math.ceil(math.log10(max(ys)))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def at(x: float, y: float) -> tuple[float, float]:
        fx = (math.log10(x) - math.log10(x_low)) / (math.log10(x_high) - math.log10(x_low))
        fy = (math.log10(max(y, y_low)) - math.log10(y_low)) / (
            math.log10(y_high) - math.log10(y_low)
        )
        return LEFT + fx * plot_w, TOP + (1 - fy) * plot_h

    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    small, big = _font(13), _font(16)
    draw.text((LEFT, 14), title, fill="black", font=big)
    for y in _log_ticks(y_low, y_high, (1, 2, 5)):
        _, py = at(x_low, y)
        draw.line([(LEFT, py), (LEFT + plot_w, py)], fill="#e4e4e4")
        draw.text((LEFT - 8, py), _label(y), fill="black", font=small, anchor="rm")
    for x in sorted(set(xs)):
        px, _ = at(x, y_low)
        draw.line([(px, TOP), (px, TOP + plot_h)], fill="#e4e4e4")
        draw.text((px, TOP + plot_h + 8), _label(x), fill="black", font=small, anchor="mt")
    draw.rectangle([LEFT, TOP, LEFT + plot_w, TOP + plot_h], outline="black")
    draw.text((LEFT + plot_w / 2, HEIGHT - 28), x_label, fill="black", font=small, anchor="mm")
    draw.text((14, TOP + plot_h / 2), y_label, fill="black", font=small, anchor="lm")
    if target is not None:
        _, py = at(x_low, target[1])
        for start in range(LEFT, LEFT + plot_w, 12):
            draw.line([(start, py), (min(start + 6, LEFT + plot_w), py)], fill="#c00000", width=2)
        draw.text((LEFT + plot_w - 4, py - 4), target[0], fill="#c00000", font=small, anchor="rb")
    for row, one in enumerate(series):
        points = [at(x, y) for x, y in sorted(one.points)]
        if one.dashed:
            for a, b in itertools.pairwise(points):
                _dashed(draw, a, b, one.colour)
        elif len(points) > 1:
            draw.line(points, fill=one.colour, width=3)
        for px, py in points:
            draw.ellipse([px - 4, py - 4, px + 4, py + 4], fill=one.colour)
        ly = TOP + 10 + row * 24
        lx = LEFT + plot_w + 16
        if one.dashed:
            _dashed(draw, (lx, ly), (lx + 30, ly), one.colour)
        else:
            draw.line([(lx, ly), (lx + 30, ly)], fill=one.colour, width=3)
        draw.text((lx + 38, ly), one.name, fill="black", font=small, anchor="lm")
    image.save(path, optimize=True)


def _dashed(
    draw: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float], colour: str
) -> None:
    length = math.dist(a, b)
    steps = max(1, int(length // 10))
    for k in range(0, steps, 2):
        t0, t1 = k / steps, min((k + 1) / steps, 1.0)
        start = (a[0] + (b[0] - a[0]) * t0, a[1] + (b[1] - a[1]) * t0)
        end = (a[0] + (b[0] - a[0]) * t1, a[1] + (b[1] - a[1]) * t1)
        draw.line([start, end], fill=colour, width=3)
