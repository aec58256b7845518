"""Render a terminal screen (text with ANSI colour codes, as `tmux capture-pane -e -p` prints
it) to a PNG: one monospace cell per character, the colours of rich's Monokai terminal theme.

    .venv/bin/python docs/ansi_png.py screen.ansi screen.png

rich parses the escape codes (`Text.from_ansi`); Pillow draws the cells with DejaVu Sans Mono
(Debian's fonts-dejavu-core). Wide characters are not handled: the dashboard draws none.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from rich.console import Console
from rich.style import Style
from rich.terminal_theme import MONOKAI, TerminalTheme
from rich.text import Text

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
THEME: TerminalTheme = MONOKAI
SIZE = 15
PADDING = 12


def _rgb(style: Style, foreground: bool) -> tuple[int, int, int]:
    color = style.color if foreground else style.bgcolor
    if color is None or color.is_default:
        triplet = THEME.foreground_color if foreground else THEME.background_color
    else:
        triplet = color.get_truecolor(THEME, foreground=foreground)
    return (triplet.red, triplet.green, triplet.blue)


def render(screen: str, out: Path, size: int = SIZE) -> None:
    """Draw `screen` (lines of ANSI text) into the PNG `out`."""
    regular = ImageFont.truetype(str(FONT_DIR / "DejaVuSansMono.ttf"), size)
    bold = ImageFont.truetype(str(FONT_DIR / "DejaVuSansMono-Bold.ttf"), size)
    cell_w = round(regular.getlength("M"))
    cell_h = round(size * 1.3)
    lines = [Text.from_ansi(line) for line in screen.rstrip("\n").split("\n")]
    columns = max((len(line.plain) for line in lines), default=1)
    image = Image.new(
        "RGB",
        (columns * cell_w + 2 * PADDING, len(lines) * cell_h + 2 * PADDING),
        _rgb(Style(), foreground=False),
    )
    draw = ImageDraw.Draw(image)
    console = Console(file=io.StringIO())  # only to resolve the parsed styles
    for row, line in enumerate(lines):
        y = PADDING + row * cell_h
        for column, char in enumerate(line.plain):
            style = line.get_style_at_offset(console, column)
            fg, bg = _rgb(style, True), _rgb(style, False)
            if style.reverse:
                fg, bg = bg, fg
            if style.dim:
                fg = tuple((c + b) // 2 for c, b in zip(fg, bg, strict=True))  # type: ignore[assignment]
            x = PADDING + column * cell_w
            if bg != _rgb(Style(), foreground=False):
                draw.rectangle((x, y, x + cell_w - 1, y + cell_h - 1), fill=bg)
            if char != " ":
                draw.text((x, y), char, font=bold if style.bold else regular, fill=fg)
    image.save(out)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: ansi_png.py SCREEN.ansi OUT.png", file=sys.stderr)
        return 2
    render(Path(argv[0]).read_text(), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
