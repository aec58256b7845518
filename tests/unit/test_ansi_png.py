"""docs/ansi_png.py, which draws the README's screenshots: cells, colours and reverse video."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))


from ansi_png import PADDING, THEME, render
from PIL import Image


def colours(image: Image.Image, box: tuple[int, int, int, int]) -> set[tuple[int, int, int]]:
    return {colour for _, colour in image.crop(box).getcolors(maxcolors=1 << 20) or []}


def test_a_screen_becomes_cells_with_their_colours(tmp_path: Path) -> None:
    out = tmp_path / "screen.png"
    render("\x1b[31mred\x1b[0m plain\n\x1b[7mrev\x1b[0m\n", out)
    image = Image.open(out).convert("RGB")
    background = (
        THEME.background_color.red,
        THEME.background_color.green,
        THEME.background_color.blue,
    )
    red = THEME.ansi_colors[1]
    width, height = image.size
    assert width > height > 2 * PADDING  # 9 columns, 2 lines
    cell_w = (width - 2 * PADDING) // 9
    cell_h = (height - 2 * PADDING) // 2
    first_word = colours(image, (PADDING, PADDING, PADDING + 3 * cell_w, PADDING + cell_h))
    assert (red.red, red.green, red.blue) in first_word and background in first_word
    # reverse video: the cell is filled with the foreground colour
    reversed_cell = colours(
        image, (PADDING, PADDING + cell_h, PADDING + cell_w, PADDING + 2 * cell_h)
    )
    foreground = (
        THEME.foreground_color.red,
        THEME.foreground_color.green,
        THEME.foreground_color.blue,
    )
    assert foreground in reversed_cell
    blank = colours(
        image, (PADDING + 4 * cell_w, PADDING + cell_h, width - PADDING, height - PADDING)
    )
    assert blank == {background}
