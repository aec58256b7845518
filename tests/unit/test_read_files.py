"""Read on every kind of file, as Claude Code 2.1.330's reads them, and NotebookEdit: text
streamed in bounded memory (a multi-hundred-MB file read by offset and limit in a process whose
memory is measured), one truthful marker, escapes for what is not text; images of each type
as image blocks (decoded back with Pillow), downscaled within the limits, a fake one refused;
PDFs whole or by pages (made with pypdf); notebooks shown and edited; binary files refused
saying what they are. Real files in tmp_path throughout."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, features
from pypdf import PdfReader, PdfWriter

from teammate.permissions.policy import PermissionPolicy, parse_rule
from teammate.tools import file_lines, media
from teammate.tools.base import ToolContext, ToolError, ToolOutput
from teammate.tools.files import MAX_READ_BYTES, read
from teammate.tools.notebook import NOTEBOOK_TOOLS, notebook_edit

REPO = Path(__file__).resolve().parents[2]


def run(ctx: ToolContext, path: Path, **fields: Any) -> ToolOutput:
    return read.run(ctx, {"file_path": str(path), **fields})


def text(ctx: ToolContext, path: Path, **fields: Any) -> str:
    out = run(ctx, path, **fields)
    assert isinstance(out, str), out
    return out


def blocks(ctx: ToolContext, path: Path, **fields: Any) -> list[dict[str, Any]]:
    out = run(ctx, path, **fields)
    assert isinstance(out, list), out
    return out


def refusal(ctx: ToolContext, path: Path, **fields: Any) -> str:
    with pytest.raises(ToolError) as caught:
        run(ctx, path, **fields)
    return str(caught.value)


def decoded(block: dict[str, Any]) -> bytes:
    return base64.b64decode(block["source"]["data"], validate=True)


# --- text, in bounded memory ---

MEMORY_SCRIPT = r"""
import json, resource, sys
from pathlib import Path
from teammate.tools.base import ToolContext
from teammate.tools.files import read

big, one_line, lines = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
ctx = ToolContext(cwd=big.parent)
read.run(ctx, {"file_path": str(big), "offset": 1, "limit": 5})  # imports, first use
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outs = [
    read.run(ctx, {"file_path": str(big), "offset": at, "limit": 100})
    for at in (1, lines // 2, lines - 49)
]
outs.append(read.run(ctx, {"file_path": str(big), "offset": lines // 2}))
outs.append(read.run(ctx, {"file_path": str(one_line), "limit": 1}))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kb": after - before, "outs": outs}))
"""


def line_of(number: int) -> str:
    return f"{number:09d} " + "x" * 89  # 100 bytes with its newline


def test_a_300_mb_file_is_read_by_offset_and_limit_in_bounded_memory(tmp_path: Path) -> None:
    lines = 3_000_000
    big = tmp_path / "big.log"
    with big.open("w") as out:
        for start in range(1, lines + 1, 100_000):
            out.write("".join(line_of(n) + "\n" for n in range(start, start + 100_000)))
    one_line = tmp_path / "one-line.txt"
    with one_line.open("wb") as out:
        for _ in range(64):
            out.write(b"y" * (1 << 20))  # 64 MB and no newline at all
    assert big.stat().st_size == 300_000_000
    try:
        result = subprocess.run(
            [sys.executable, "-c", MEMORY_SCRIPT, str(big), str(one_line), str(lines)],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=True,
        )
    finally:  # 364 MB: not left for pytest's temporary directories to keep
        big.unlink()
        one_line.unlink()
    report = json.loads(result.stdout)
    assert report["growth_kb"] < 32 * 1024, report["growth_kb"]  # a correctness bound
    start, middle, end, offset_only, longest = report["outs"]
    assert start.split("\n") == [f"{n:>6}\t{line_of(n)}" for n in range(1, 101)]
    half = lines // 2
    assert middle.split("\n") == [f"{n:>7}\t{line_of(n)}" for n in range(half, half + 100)]
    assert end.split("\n") == [f"{n:>7}\t{line_of(n)}" for n in range(lines - 49, lines + 1)]
    shown = offset_only.split("\n")
    assert shown[0] == f"{half:>7}\t{line_of(half)}"
    last = half + len(shown) - 3
    assert shown[-3] == f"{last:>7}\t{line_of(last)}"
    # the rest (over 64 MB) is not counted in lines, only sized, and said so
    assert shown[-1] == (
        f"[Stopped after line {last:,} to keep this result within 29,400 characters. The file "
        f"goes on after line {last:,} for {file_lines.human_size((lines - last) * 100)} more "
        f"(not counted in lines). Read with offset={last + 1} to see more.]"
    )
    assert longest == "     1\t" + "y" * 2000 + (
        f"\n\n[1 line was longer than 2,000 characters and cut ({64 * 2**20 - 2000:,} bytes "
        "left out): use Grep, or Bash with cut -c, to see them whole.]"
    )


def test_a_large_file_read_whole_is_refused_naming_its_size(ctx: ToolContext) -> None:
    path = ctx.cwd / "log.txt"
    path.write_text("".join(f"line {n}\n" for n in range(60_000)))
    size = path.stat().st_size
    assert size > MAX_READ_BYTES
    refused = refusal(ctx, path)
    assert f"{path} is {file_lines.human_size(size)} ({size:,} bytes)" in refused
    assert "more than Read shows whole (256 KB)" in refused
    assert "offset and limit" in refused and "allow_large=true" in refused
    assert text(ctx, path, limit=3) == "     1\tline 0\n     2\tline 1\n     3\tline 2"
    assert text(ctx, path, offset=59_999).startswith(" 59999\tline 59998\n")
    whole = text(ctx, path, allow_large=True)
    assert whole.startswith("     1\tline 0\n") and len(whole) <= ctx.output_limit


def test_the_marker_tells_the_truth_and_the_loop_never_cuts_a_read(ctx: ToolContext) -> None:
    path = ctx.cwd / "wide.txt"
    path.write_text("".join(f"{n:04d}" + "w" * 96 + "\n" for n in range(1, 1001)))
    out = text(ctx, path, limit=900)
    assert len(out) <= ctx.output_limit  # within the result limit: one marker, the loop's none
    shown = out.split("\n\n[")[0].split("\n")
    last = len(shown)
    assert shown[-1] == f"{last:>6}\t{last:04d}" + "w" * 96
    marker = out.split("\n")[-1]
    assert marker == (
        f"[Stopped after line {last} to keep this result within 29,400 characters. "
        f"{1000 - last} more lines not shown (the file has 1,000 lines). Read with "
        f"offset={last + 1} to see more.]"
    )
    following = text(ctx, path, offset=last + 1, limit=2)
    assert following.split("\n")[0] == f"{last + 1:>6}\t{last + 1:04d}" + "w" * 96
    # an explicit range read in full needs no marker; the default range says what is left
    assert "[" not in text(ctx, path, offset=10, limit=5)
    assert text(ctx, path, offset=999).endswith("1000\t1000" + "w" * 96)


def test_the_read_budget_follows_the_claude_code_token_setting(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ctx.cwd / "a.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 501)))
    monkeypatch.setenv("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "500")  # 2,000 characters
    out = text(ctx, path)
    assert len(out) <= 2000 + 600
    assert "Stopped after line" in out.split("\n")[-1]


def test_control_characters_and_invalid_utf8_are_escaped(ctx: ToolContext) -> None:
    path = ctx.cwd / "odd.txt"
    data = b"\xef\xbb\xbfbom first\r\n" + b"esc \x1b[31mred\x1b[0m bell\x07 tab\tkept\n"
    data += b"latin-1 caf\xe9, cut utf-8 \xe2\x9c, lone \rreturn, del \x7f, c1 \xc2\x85\n"
    data += b"x" * 9000 + b"\n" + b"nul \x00 after the sniffed start\n"
    path.write_bytes(data)
    lines = text(ctx, path).split("\n")
    assert lines[0] == "     1\tbom first"
    assert lines[1] == "     2\tesc \\x1b[31mred\\x1b[0m bell\\x07 tab\tkept"
    assert lines[2] == (
        "     3\tlatin-1 caf\\xe9, cut utf-8 \\xe2\\x9c, lone \\x0dreturn, del \\x7f, c1 \\u0085"
    )
    assert lines[4] == "     5\tnul \\x00 after the sniffed start"
    json.dumps(lines).encode("utf-8")  # what reaches the API encodes


def test_utf16_text_behind_its_byte_order_mark_is_read(ctx: ToolContext) -> None:
    path = ctx.cwd / "wide.txt"
    path.write_bytes("héllo\r\nwörld\r\n".encode("utf-16"))
    assert text(ctx, path) == "     1\théllo\n     2\twörld"


def test_offsets_past_the_end_count_a_last_line_without_newline(ctx: ToolContext) -> None:
    path = ctx.cwd / "short.txt"
    path.write_text("a\nb\nc")
    assert text(ctx, path, offset=0) == "     1\ta\n     2\tb\n     3\tc"
    assert "The file has 3 lines." in text(ctx, path, offset=5)
    assert "The file has 3 lines." in text(ctx, path, offset=4)
    assert text(ctx, path, offset=3) == "     3\tc"


def test_a_proc_file_of_size_zero_is_read_as_the_text_it_has(ctx: ToolContext) -> None:
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    assert text(ctx, status, limit=1).startswith("     1\tName:\t")


def test_binary_files_are_refused_saying_what_they_look_like(ctx: ToolContext) -> None:
    archive = ctx.cwd / "report.docx"
    with zipfile.ZipFile(archive, "w") as made:
        made.writestr("word/document.xml", "<w:document/>")
    size = archive.stat().st_size
    refused = refusal(ctx, archive)
    assert refused.startswith(f"Cannot read {archive}: it is binary, not text: a ZIP archive")
    assert f"({size:,} bytes)" in refused and ".docx" in refused
    elf = ctx.cwd / "tool"
    elf.write_bytes(b"\x7fELF\x02\x01\x01" + b"\x00" * 100)
    assert "an ELF executable or shared library, 107 bytes (107 bytes)" in refusal(ctx, elf)
    gzipped = ctx.cwd / "notes.txt.gz"
    gzipped.write_bytes(b"\x1f\x8b\x08\x08\xb1\x9e\xd4e\x02\xffnotes.txt")
    assert "gzip-compressed data" in refusal(ctx, gzipped)
    csv = ctx.cwd / "ids.csv"
    csv.write_text("ID3,name\n1,a\n")  # starts like MP3 audio, and is text
    assert text(ctx, csv) == "     1\tID3,name\n     2\t1,a"
    blob = ctx.cwd / "blob.dat"
    blob.write_bytes(bytes([0x13, 0x37, 0, 1, 2, 3, 4, 5, 6]))
    assert "its first bytes: 13 37 00 01 02 03 04 05" in refusal(ctx, blob)


# --- images ---


def image_bytes(kind: str, size: tuple[int, int] = (40, 30)) -> bytes:
    """An image of two gradients (it compresses, but not to nothing), saved as `kind`."""
    down = Image.linear_gradient("L").resize(size)
    across = Image.linear_gradient("L").rotate(90).resize(size)
    out = io.BytesIO()
    Image.merge("RGB", (down, across, down)).save(out, kind)
    return out.getvalue()


@pytest.mark.parametrize(
    ("suffix", "kind", "media_type"),
    [
        (".png", "PNG", "image/png"),
        (".jpg", "JPEG", "image/jpeg"),
        (".jpeg", "JPEG", "image/jpeg"),
        (".gif", "GIF", "image/gif"),
        pytest.param(
            ".webp",
            "WEBP",
            "image/webp",
            marks=pytest.mark.skipif(not features.check("webp"), reason="Pillow without WebP"),
        ),
    ],
)
def test_each_image_type_round_trips_as_an_image_block(
    ctx: ToolContext, suffix: str, kind: str, media_type: str
) -> None:
    path = ctx.cwd / f"picture{suffix}"
    path.write_bytes(image_bytes(kind))
    (block,) = blocks(ctx, path)
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    assert block["source"]["media_type"] == media_type
    assert decoded(block) == path.read_bytes()  # small enough: sent as it is
    with Image.open(io.BytesIO(decoded(block))) as back:
        assert back.size == (40, 30)


def test_the_media_type_comes_from_the_bytes_not_the_name(ctx: ToolContext) -> None:
    misnamed = ctx.cwd / "photo.jpg"
    misnamed.write_bytes(image_bytes("PNG"))
    assert blocks(ctx, misnamed)[0]["source"]["media_type"] == "image/png"
    nameless = ctx.cwd / "screenshot"
    nameless.write_bytes(image_bytes("GIF"))
    assert blocks(ctx, nameless)[0]["source"]["media_type"] == "image/gif"


def test_a_huge_image_is_downscaled_within_the_limits(ctx: ToolContext) -> None:
    path = ctx.cwd / "poster.png"
    path.write_bytes(image_bytes("PNG", (6000, 4000)))
    image, note = blocks(ctx, path)
    with Image.open(io.BytesIO(decoded(image))) as back:
        width, height = back.size
    assert width <= media.MAX_IMAGE_SIDE and height <= media.MAX_IMAGE_SIDE
    assert media.image_tokens(width, height) <= media.MAX_IMAGE_TOKENS
    assert abs(width / height - 1.5) < 0.01
    assert len(decoded(image)) <= media.IMAGE_BYTES
    assert note["text"] == (
        f"[Image {path}: 6000x4000 pixels, shown downscaled to {width}x{height}; multiply "
        f"coordinates in it by {6000 / width:.2f} for the original.]"
    )


def test_an_image_over_the_byte_budget_is_reencoded_to_fit(ctx: ToolContext) -> None:
    noise = Image.effect_noise((1800, 1200), 100).convert("RGB")
    path = ctx.cwd / "noise.png"
    noise.save(path)
    assert path.stat().st_size > media.IMAGE_BYTES
    image = blocks(ctx, path)[0]
    assert len(decoded(image)) <= media.IMAGE_BYTES
    with Image.open(io.BytesIO(decoded(image))) as back:
        back.load()
        assert image["source"]["media_type"] == Image.MIME[back.format or ""]


def test_a_photo_turned_by_its_exif_is_shown_upright(ctx: ToolContext) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: turn a quarter to see it
    path = ctx.cwd / "phone.jpg"
    Image.new("RGB", (3000, 1000), (200, 10, 10)).save(path, exif=exif)
    image, note = blocks(ctx, path)
    with Image.open(io.BytesIO(decoded(image))) as back:
        assert back.size[1] > back.size[0]
    assert "1000x3000 pixels" in note["text"]


def test_a_fake_png_is_refused_saying_what_it_is(ctx: ToolContext) -> None:
    fake = ctx.cwd / "logo.png"
    fake.write_text("<!DOCTYPE html><html><body>Sign in</body></html>")
    refused = refusal(ctx, fake)
    assert "its bytes are not a PNG, JPEG, GIF or WebP image" in refused
    assert 'an HTML document (it starts "<!DOCTYPE html><html><bo")' in refused
    empty = ctx.cwd / "empty.gif"
    empty.write_bytes(b"")
    assert "it looks like an empty file (0 bytes)" in refusal(ctx, empty)
    broken = ctx.cwd / "broken.png"
    broken.write_bytes(image_bytes("PNG")[:60])
    assert "damaged or unsupported image/png" in refusal(ctx, broken)


# --- PDFs ---


def make_pdf(path: Path, pages: int) -> None:
    writer = PdfWriter()
    for number in range(1, pages + 1):
        writer.add_blank_page(width=100 + number, height=200)
    with path.open("wb") as out:
        writer.write(out)


def pdf_widths(block: dict[str, Any]) -> list[float]:
    reader = PdfReader(io.BytesIO(decoded(block)))
    return [float(page.mediabox.width) for page in reader.pages]


def test_a_short_pdf_is_sent_whole_as_a_document_block(ctx: ToolContext) -> None:
    path = ctx.cwd / "memo.pdf"
    make_pdf(path, 3)
    note, document = blocks(ctx, path)
    assert document["type"] == "document"
    assert document["source"]["media_type"] == "application/pdf"
    assert decoded(document) == path.read_bytes()
    assert note["text"].startswith(f"PDF {path}: 3 pages, ")


def test_pages_select_pages_and_a_long_pdf_needs_them(ctx: ToolContext) -> None:
    path = ctx.cwd / "book.pdf"
    make_pdf(path, 30)
    refused = refusal(ctx, path)
    assert f"{path} has 30 pages, more than Read takes at once (10)" in refused
    assert 'pages: "1-5"' in refused and "at most 20 pages a read" in refused
    note, document = blocks(ctx, path, pages="3-5")
    assert pdf_widths(document) == [103, 104, 105]
    assert note["text"].startswith(f"PDF {path}: pages 3-5 of 30 (")
    assert pdf_widths(blocks(ctx, path, pages=" 7 ")[1]) == [107]
    assert pdf_widths(blocks(ctx, path, pages="25-")[1]) == [125, 126, 127, 128, 129, 130]
    assert pdf_widths(blocks(ctx, path, pages="29-40")[1]) == [129, 130]
    assert "covers 21 pages; a read takes at most 20" in refusal(ctx, path, pages="1-21")
    assert "outside the document: it has 30 pages" in refusal(ctx, path, pages="31")
    for bad in ("1,3", "0", "5-2", "x", "-4"):
        assert refusal(ctx, path, pages=bad).startswith(f'Invalid pages "{bad}"')


def test_a_damaged_or_fake_pdf_is_refused(ctx: ToolContext) -> None:
    damaged = ctx.cwd / "damaged.pdf"
    damaged.write_bytes(b"%PDF-1.7\nnothing else here\n")
    assert "is a damaged PDF" in refusal(ctx, damaged)
    fake = ctx.cwd / "invoice.pdf"
    fake.write_text("<html>login</html>")
    assert "has a PDF's name but is not a PDF" in refusal(ctx, fake)
    nameless = ctx.cwd / "scan"
    make_pdf(nameless, 2)
    assert blocks(ctx, nameless)[1]["type"] == "document"  # a PDF by its bytes


# --- notebooks ---


def png_base64() -> str:
    return base64.b64encode(image_bytes("PNG", (8, 6))).decode()


def notebook(minor: int = 5, as_lines: bool = True) -> dict[str, Any]:
    def source(text: str) -> str | list[str]:
        if not as_lines:
            return text
        parts = text.split("\n")
        return [p + "\n" for p in parts[:-1]] + [parts[-1]]

    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": source("# Title\nText")},
        {
            "cell_type": "code",
            "id": "load",
            "execution_count": 1,
            "metadata": {},
            "source": source("import math\nprint(math.pi)"),
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["3.14159\n"]},
                {
                    "output_type": "display_data",
                    "data": {"text/plain": ["<Figure>"], "image/png": png_base64()},
                    "metadata": {},
                },
            ],
        },
        {
            "cell_type": "code",
            "id": "oops",
            "execution_count": 2,
            "metadata": {},
            "source": source("1/0"),
            "outputs": [
                {
                    "output_type": "error",
                    "ename": "ZeroDivisionError",
                    "evalue": "division by zero",
                    "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
                },
                {"output_type": "stream", "name": "stderr", "text": "10%\r50%\r100%\n"},
            ],
        },
    ]
    if minor < 5:
        for cell in cells:
            del cell["id"]
    return {
        "cells": cells,
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    }


def write_notebook(path: Path, content: dict[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_a_notebook_is_read_as_cells_with_outputs_and_images(ctx: ToolContext) -> None:
    path = ctx.cwd / "analysis.ipynb"
    write_notebook(path, notebook())
    first, image, rest = blocks(ctx, path, offset=50, limit=1)  # a range means nothing here
    assert first == {
        "type": "text",
        "text": '<cell id="intro"><cell_type>markdown</cell_type># Title\nText</cell id="intro">\n'
        '<cell id="load">import math\nprint(math.pi)</cell id="load">\n\n3.14159\n\n\n<Figure>',
    }
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert decoded(image) == base64.b64decode(png_base64())
    assert rest["text"] == (
        '<cell id="oops">1/0</cell id="oops">\n\nZeroDivisionError: division by zero\n'
        "ZeroDivisionError: division by zero\n\n100%\n"
    )


def test_cells_without_ids_are_numbered_and_other_languages_named(ctx: ToolContext) -> None:
    content = notebook(minor=4)
    content["metadata"]["language_info"]["name"] = "julia"
    path = ctx.cwd / "old.ipynb"
    write_notebook(path, content)
    shown = blocks(ctx, path)[0]["text"]
    assert shown.startswith('<cell id="cell-0"><cell_type>markdown</cell_type># Title')
    assert '<cell id="cell-1"><language>julia</language>import math' in shown


def test_a_long_notebook_stops_at_the_limit_and_says_how_to_see_the_rest(
    ctx: ToolContext,
) -> None:
    cells = [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": "x" * 3000, "outputs": []}
        for i in range(20)
    ]
    path = ctx.cwd / "long.ipynb"
    write_notebook(path, {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    (shown,) = blocks(ctx, path)
    assert len(shown["text"]) <= ctx.output_limit
    kept = shown["text"].count("</cell id=")
    assert shown["text"].endswith(
        f"[Cells 0-{kept - 1} of 20 shown; the other {20 - kept} cells (from cell-{kept}) would "
        f"pass 29,400 characters. See them with Bash and jq, e.g. jq '.cells[{kept}:"
        f"{kept + 10}]' {path}]"
    )


def test_notebook_images_are_capped_and_odd_outputs_are_told_not_crashed_on(
    ctx: ToolContext,
) -> None:
    figure = {"output_type": "display_data", "metadata": {}, "data": {"image/png": png_base64()}}
    outputs: list[Any] = [
        {"output_type": "display_data", "data": {"image/png": "not base64!"}},
        {"output_type": "execute_result", "data": "not a dict"},
        "not an output",
    ]
    outputs += [figure] * 9
    cell = {"cell_type": "code", "id": "plots", "metadata": {}, "source": "", "outputs": outputs}
    path = ctx.cwd / "plots.ipynb"
    write_notebook(path, {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    shown = blocks(ctx, path)
    assert [b["type"] for b in shown] == ["text"] + ["image"] * 8 + ["text"]
    assert shown[0]["text"] == (
        '<cell id="plots"></cell id="plots">\n'
        "[An image output of cell-0 is not valid base64 image/png.]"
    )
    assert shown[-1]["text"] == (
        "[An image output of cell-0 not shown: a read shows at most 8 images.]"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"cells": [', "is not valid JSON, so not a notebook"),
        ('{"worksheets": []}', "is not a Jupyter notebook Read and NotebookEdit understand"),
        ('{"cells": [{"source": 3}]}', "is not a Jupyter notebook Read and NotebookEdit"),
    ],
)
def test_a_broken_notebook_is_refused(ctx: ToolContext, content: str, why: str) -> None:
    path = ctx.cwd / "broken.ipynb"
    path.write_text(content)
    assert why in refusal(ctx, path)
    with pytest.raises(ToolError, match=re.escape(why)):
        edit_notebook(ctx, path, cell_id="cell-0", new_source="x")
    assert path.read_text() == content  # untouched


# --- NotebookEdit ---


def edit_notebook(ctx: ToolContext, path: Path, **fields: Any) -> str:
    out = notebook_edit.run(ctx, {"notebook_path": str(path), **fields})
    assert isinstance(out, str)
    return out


def cells_of(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8-sig"))["cells"]  # type: ignore[no-any-return]


def test_notebook_edit_is_claude_codes_tool() -> None:
    assert (notebook_edit,) == NOTEBOOK_TOOLS
    assert (notebook_edit.name, notebook_edit.kind) == ("NotebookEdit", "edit")
    schema = notebook_edit.schema()["input_schema"]
    assert set(schema["properties"]) == {
        "notebook_path",
        "cell_id",
        "new_source",
        "cell_type",
        "edit_mode",
    }
    assert schema["required"] == ["notebook_path", "new_source"]
    assert schema["properties"]["cell_type"]["enum"] == ["code", "markdown"]
    assert schema["properties"]["edit_mode"]["enum"] == ["replace", "insert", "delete"]


def test_replace_keeps_the_layout_and_clears_outputs(ctx: ToolContext) -> None:
    path = ctx.cwd / "nb.ipynb"
    write_notebook(path, notebook())
    before = path.read_text()
    out = edit_notebook(ctx, path, cell_id="load", new_source="import os\nprint(os.sep)")
    assert out == "Cell load now holds:\nimport os\nprint(os.sep)"
    cells = cells_of(path)
    assert cells[1]["source"] == ["import os\n", "print(os.sep)"]  # the file's list form
    assert (cells[1]["outputs"], cells[1]["execution_count"]) == ([], None)
    assert [c["id"] for c in cells] == ["intro", "load", "oops"]
    after = path.read_text()
    assert (
        after.startswith('{\n "cells": [\n  {\n   "cell_type": "markdown"') and after[-2:] == "}\n"
    )
    assert before.count("\n") - after.count("\n") > 5  # outputs gone, nothing else reflowed
    edit_notebook(ctx, path, cell_id="intro", new_source="x = 1", cell_type="code")
    assert cells_of(path)[0] | {"source": None} == {
        "cell_type": "code",
        "id": "intro",
        "metadata": {},
        "source": None,
        "execution_count": None,
        "outputs": [],
    }
    edit_notebook(ctx, path, cell_id="intro", new_source="# back", cell_type="markdown")
    assert set(cells_of(path)[0]) == {"cell_type", "id", "metadata", "source"}


def test_insert_after_a_cell_or_at_the_start_and_delete(ctx: ToolContext) -> None:
    path = ctx.cwd / "nb.ipynb"
    write_notebook(path, notebook(as_lines=False))
    out = edit_notebook(
        ctx, path, cell_id="intro", new_source="y = 2", edit_mode="insert", cell_type="code"
    )
    cells = cells_of(path)
    new = cells[1]
    assert (
        re.fullmatch(r"[0-9a-f]{8}", new["id"])
        and out == f"Inserted cell {new['id']}, holding:\ny = 2"
    )
    assert new == {
        "cell_type": "code",
        "id": new["id"],
        "metadata": {},
        "source": "y = 2",
        "execution_count": None,
        "outputs": [],
    }
    edit_notebook(ctx, path, new_source="# Top", edit_mode="insert", cell_type="markdown")
    assert cells_of(path)[0]["source"] == "# Top" and cells_of(path)[1]["id"] == "intro"
    assert edit_notebook(ctx, path, cell_id="oops", new_source="", edit_mode="delete") == (
        "Deleted cell oops."
    )
    assert [c["source"] for c in cells_of(path)][-1] == "import math\nprint(math.pi)"
    with pytest.raises(ToolError, match="cell_type is required"):
        edit_notebook(ctx, path, new_source="z", edit_mode="insert")


def test_cells_are_found_by_number_in_a_notebook_without_ids(ctx: ToolContext) -> None:
    path = ctx.cwd / "old.ipynb"
    write_notebook(path, notebook(minor=4))
    out = edit_notebook(ctx, path, cell_id="cell-2", new_source="2/1")
    assert out == "Cell cell-2 now holds:\n2/1"
    assert cells_of(path)[2]["source"] == ["2/1"]
    out = edit_notebook(
        ctx, path, cell_id="cell-0", new_source="n", edit_mode="insert", cell_type="code"
    )
    assert out == "Inserted cell cell-1, holding:\nn" and "id" not in cells_of(path)[1]
    with pytest.raises(ToolError, match=r"No cell cell-9 in the notebook: it has 4 cells"):
        edit_notebook(ctx, path, cell_id="cell-9", new_source="x")
    with pytest.raises(ToolError, match='No cell with id "nope"'):
        edit_notebook(ctx, path, cell_id="nope", new_source="x")
    with pytest.raises(ToolError, match="cell_id is required"):
        edit_notebook(ctx, path, new_source="x")


def test_notebook_edit_refuses_other_files_and_missing_ones(ctx: ToolContext) -> None:
    script = ctx.cwd / "script.py"
    script.write_text("x = 1\n")
    with pytest.raises(ToolError, match=r"not a Jupyter notebook \(\.ipynb\); use Edit"):
        edit_notebook(ctx, script, cell_id="cell-0", new_source="y")
    with pytest.raises(ToolError, match="does not exist"):
        edit_notebook(ctx, ctx.cwd / "gone.ipynb", cell_id="cell-0", new_source="y")


def test_a_bom_crlf_notebook_keeps_its_bytes_layout(ctx: ToolContext) -> None:
    path = ctx.cwd / "win.ipynb"
    body = json.dumps(notebook(as_lines=False), indent=1, ensure_ascii=False)
    path.write_bytes(("\ufeff" + body).replace("\n", "\r\n").encode("utf-8"))
    edit_notebook(ctx, path, cell_id="oops", new_source="2 ** 8")
    data = path.read_bytes()
    assert data.startswith("\ufeff{\r\n".encode()) and not data.endswith(b"\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert cells_of(path)[2]["source"] == "2 ** 8"


def test_the_policy_checks_notebook_edit_as_an_edit_of_its_notebook_path() -> None:
    cwd = Path("/work/project")
    accept = PermissionPolicy("acceptEdits", cwd)
    inside = {"notebook_path": str(cwd / "nb.ipynb"), "new_source": "x"}
    outside = {"notebook_path": "/etc/nb.ipynb", "new_source": "x"}
    assert accept.decide("NotebookEdit", notebook_edit.kind, inside).behavior == "allow"
    assert accept.decide("NotebookEdit", notebook_edit.kind, outside).behavior == "ask"
    denied = PermissionPolicy("bypassPermissions", cwd, deny=[parse_rule("Edit(secret/**)")])
    secret = {"notebook_path": str(cwd / "secret" / "nb.ipynb"), "new_source": "x"}
    assert denied.decide("NotebookEdit", "edit", secret).behavior == "deny"
    assert PermissionPolicy("default", cwd).decide("NotebookEdit", "edit", inside).behavior == "ask"
