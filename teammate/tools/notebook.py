"""Jupyter notebooks for a Claude agent: how Read shows one, and Claude Code's `NotebookEdit`.

This module owns a notebook's JSON (nbformat 4: a ``cells`` list whose cells have a string or
list-of-strings ``source``; anything else is refused with what is wrong), showing its cells as
Claude Code 2.1.330 does (``<cell id="...">`` blocks with the cell's type when not code, its
outputs as text and its image outputs as image blocks: `notebook_content`), and editing one
cell (replace, insert after, delete: `notebook_edit`), written back atomically in the file's
own layout (one-space indent, key order, byte-order mark, final newline and line ends kept).

A cell is named by its ``id``, or ``cell-N`` (N counting from 0) when it has none or the name
is given that way.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from teammate.tools.base import Content, Tool, ToolContext, ToolError, tool
from teammate.tools.file_lines import escape, human_size, open_regular, read_whole
from teammate.tools.media import image_content

MAX_NOTEBOOK_BYTES = 100 << 20  # a larger notebook is not read, nor written by an edit
CELL_OUTPUT_CHARS = 10_000  # a cell's outputs shown as text, at most
SOURCE_CHARS = 15_000  # a cell's source shown, at most (a cell and its outputs fit a result)
MAX_NOTEBOOK_IMAGES = 8  # image outputs shown in one read
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
NOT_A_NOTEBOOK = (
    "is not a Jupyter notebook Read and NotebookEdit understand (nbformat 4: a top-level "
    '"cells" list of cells, each with a "source" that is a string or a list of strings)'
)


def parse_notebook(data: bytes, name: str) -> dict[str, Any]:
    """The notebook's JSON, checked; a `ToolError` saying what is wrong otherwise."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ToolError(
            f"{name} is {human_size(len(data))}, more than Read and NotebookEdit handle "
            f"({human_size(MAX_NOTEBOOK_BYTES)}). Read parts of it with Bash and jq, e.g. "
            f"jq '.cells[:20]' {name}"
        )
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ToolError(
            f"{name} is not valid JSON, so not a notebook (it may be cut short, damaged, or "
            f"still being written): {exc}"
        ) from None
    if not _valid(notebook):
        raise ToolError(f"{name} {NOT_A_NOTEBOOK}.")
    return notebook


def _valid(notebook: Any) -> bool:
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return isinstance(cells, list) and all(
        isinstance(cell, dict) and _source_ok(cell.get("source")) for cell in cells
    )


def _source_ok(source: Any) -> bool:
    return isinstance(source, str) or (
        isinstance(source, list) and all(isinstance(s, str) for s in source)
    )


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def cell_name(cell: dict[str, Any], index: int) -> str:
    found = cell.get("id")
    return found if isinstance(found, str) and found else f"cell-{index}"


def language_of(notebook: dict[str, Any]) -> str:
    info = (notebook.get("metadata") or {}).get("language_info") or {}
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name else "python"


# --- Read ---


@dataclass
class ImageAllowance:
    """How many more image outputs one read may show."""

    left: int


def notebook_content(data: bytes, name: str, budget: int) -> Content:
    """The notebook's cells, in order, while their text fits `budget` characters; a marker
    names the cells left out and how to see them."""
    notebook = parse_notebook(data, name)
    cells: list[dict[str, Any]] = notebook["cells"]
    language = language_of(notebook)
    images = ImageAllowance(MAX_NOTEBOOK_IMAGES)
    blocks: Content = []
    used = 0
    for index, cell in enumerate(cells):
        shown = list(_cell_blocks(cell, index, language, name, images))
        size = sum(len(b.get("text", "")) + 1 for b in shown)
        if blocks and used + size > budget:
            rest = len(cells) - index
            blocks.append(_text(_cells_left_out(index, rest, len(cells), budget, name)))
            break
        blocks.extend(shown)
        used += size
    if not cells:
        empty = f"<system-reminder>The notebook {name} has no cells.</system-reminder>"
        blocks.append(_text(empty))
    return _merged(blocks)


def _cells_left_out(index: int, rest: int, total: int, budget: int, name: str) -> str:
    cells = "1 cell" if rest == 1 else f"{rest} cells"
    return (
        f"[Cells 0-{index - 1} of {total} shown; the other {cells} (from cell-{index}) would "
        f"pass {budget:,} characters. See them with Bash and jq, e.g. "
        f"jq '.cells[{index}:{index + 10}]' {name}]"
    )


def _cell_blocks(
    cell: dict[str, Any], index: int, language: str, name: str, images: ImageAllowance
) -> Iterator[dict[str, Any]]:
    """One cell: its source in a ``<cell id>`` block, then each output."""
    kind = cell.get("cell_type")
    ident = cell_name(cell, index)
    tags = ""
    if kind != "code":
        tags += f"<cell_type>{escape(str(kind))}</cell_type>"
    elif language != "python":
        tags += f"<language>{escape(language)}</language>"
    source = escape(_joined(cell.get("source")), newlines=True)
    cut = len(source) - SOURCE_CHARS
    yield _text(f'<cell id="{ident}">{tags}{source[:SOURCE_CHARS]}</cell id="{ident}">')
    if cut > 0:
        yield _text(
            f"[{cut:,} more characters of {ident}'s source not shown: "
            f"jq '.cells[{index}].source' {name}]"
        )
    outputs = cell.get("outputs") if kind == "code" else None
    if isinstance(outputs, list) and outputs:
        yield from _outputs(outputs, index, name, images)


def _outputs(
    outputs: list[Any], index: int, name: str, images: ImageAllowance
) -> Iterator[dict[str, Any]]:
    left = CELL_OUTPUT_CHARS
    for output in outputs:
        if not isinstance(output, dict):
            continue
        text = _output_text(output)
        if text and left > 0:
            shown = text[:left]
            left -= len(shown)
            yield _text("\n" + shown)
            if len(shown) < len(text):
                yield _text(
                    f"[{len(text) - len(shown):,} more characters of this cell's outputs not "
                    f"shown: jq '.cells[{index}].outputs' {name}]"
                )
        yield from _output_images(output, index, name, images)


def _output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _joined(output.get("text"))
    elif kind in ("execute_result", "display_data"):
        data = output.get("data")
        text = _joined(data.get("text/plain")) if isinstance(data, dict) else ""
    elif kind == "error":
        trace = output.get("traceback")
        lines = "\n".join(str(t) for t in trace) if isinstance(trace, list) else ""
        text = f"{output.get('ename', '')}: {output.get('evalue', '')}\n{lines}"
    else:
        return ""
    return escape(_as_terminal(text), newlines=True)


def _as_terminal(text: str) -> str:
    """Output text as a terminal would show it: no colour codes, and a line rewritten after a
    carriage return (a progress bar) kept only as last written."""
    text = ANSI.sub("", text).replace("\r\n", "\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def _output_images(
    output: dict[str, Any], index: int, name: str, images: ImageAllowance
) -> Iterator[dict[str, Any]]:
    data = output.get("data")
    if not isinstance(data, dict):
        return
    for media_type in ("image/png", "image/jpeg"):
        encoded = _joined(data.get(media_type))
        if not encoded:
            continue
        if images.left <= 0:
            yield _text(
                f"[An image output of cell-{index} not shown: a read shows at most "
                f"{MAX_NOTEBOOK_IMAGES} images.]"
            )
            return
        try:
            raw = base64.b64decode("".join(encoded.split()), validate=True)
            shown = image_content(raw, f"{name} (cell-{index})")
        except binascii.Error:
            yield _text(f"[An image output of cell-{index} is not valid base64 {media_type}.]")
            return
        except ToolError as exc:
            yield _text(f"[An image output of cell-{index} could not be shown: {exc}]")
            return
        images.left -= 1
        yield from shown
        return


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _merged(blocks: Content) -> Content:
    """Adjacent text blocks joined by a newline (image blocks stay where they are)."""
    merged: Content = []
    for block in blocks:
        if block["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = _text(merged[-1]["text"] + "\n" + block["text"])
        else:
            merged.append(block)
    return merged


# --- NotebookEdit ---

EditMode = Literal["replace", "insert", "delete"]


def cell_index(cells: list[dict[str, Any]], cell_id: str | None, mode: EditMode) -> int:
    """Where the edit applies: the cell's index (insert: where the new cell goes)."""
    if not cell_id:
        if mode == "insert":
            return 0
        raise ToolError("cell_id is required to replace or delete a cell.")
    found = next((i for i, c in enumerate(cells) if c.get("id") == cell_id), None)
    if found is None:
        number = re.fullmatch(r"cell-(\d+)", cell_id)
        if number is None:
            raise ToolError(f'No cell with id "{cell_id}" in the notebook.')
        found = int(number.group(1))
        if found >= len(cells):
            raise ToolError(
                f"No cell {cell_id} in the notebook: it has {len(cells)} cells (cell-0 to "
                f"cell-{len(cells) - 1})."
            )
    return found + 1 if mode == "insert" else found


def _source_value(text: str, as_lines: bool) -> str | list[str]:
    """The source as the notebook keeps it: one string, or Jupyter's list of lines (each with
    its newline)."""
    if not as_lines:
        return text
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _new_cell(kind: str, source: str | list[str], ident: str | None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind}
    if ident is not None:
        cell["id"] = ident
    cell.update(metadata={}, source=source)
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _retyped(cell: dict[str, Any], kind: str | None) -> None:
    """`cell` as `kind` (its outputs dropped or made as nbformat has them for that type)."""
    if kind is None or kind == cell.get("cell_type"):
        return
    cell["cell_type"] = kind
    if kind == "code":
        cell.setdefault("execution_count", None)
        cell.setdefault("outputs", [])
    else:
        cell.pop("execution_count", None)
        cell.pop("outputs", None)


def _new_id(cells: list[dict[str, Any]]) -> str:
    """A cell id no cell of the notebook has (8 hex digits)."""
    taken = {cell.get("id") for cell in cells}
    while (ident := secrets.token_hex(4)) in taken:
        pass
    return ident


def _wants_ids(notebook: dict[str, Any]) -> bool:
    """nbformat 4.5 and later give every cell an id."""
    major, minor = notebook.get("nbformat"), notebook.get("nbformat_minor")
    if not isinstance(major, int):
        return False
    return major > 4 or (major == 4 and isinstance(minor, int) and minor >= 5)


def edited(
    notebook: dict[str, Any],
    cell_id: str | None,
    new_source: str,
    cell_type: str | None,
    mode: EditMode,
) -> str:
    """Apply one edit to `notebook` in place; the name of the cell it touched."""
    cells: list[dict[str, Any]] = notebook["cells"]
    at = cell_index(cells, cell_id, mode)
    as_lines = any(isinstance(c.get("source"), list) for c in cells)
    if mode == "insert":
        if cell_type is None:
            raise ToolError("cell_type is required to insert a cell (code or markdown).")
        ident = _new_id(cells) if _wants_ids(notebook) else None
        cells.insert(at, _new_cell(cell_type, _source_value(new_source, as_lines), ident))
        return ident or f"cell-{at}"
    name = cell_id or cell_name(cells[at], at)
    if mode == "delete":
        del cells[at]
        return name
    cell = cells[at]
    cell["source"] = _source_value(new_source, isinstance(cell.get("source"), list))
    _retyped(cell, cell_type)
    if cell.get("cell_type") == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return name


def _layout(text: str, notebook: dict[str, Any]) -> bytes:
    """`notebook` as JSON laid out as `text` (the file as it was) is: one-space indent, its
    byte-order mark, final newline and line ends kept."""
    out = json.dumps(notebook, indent=1, ensure_ascii=False)
    if text.rstrip(" \t").endswith("\n"):
        out += "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    if text.startswith("\ufeff"):
        out = "\ufeff" + out
    # a lone surrogate (a "\\ud800" escape in the file) goes back as that escape
    return out.encode("utf-8", errors="backslashreplace")


@tool(
    "NotebookEdit",
    "Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb). Read the notebook "
    'first: cell_id is the id shown in Read\'s <cell id="..."> output (or cell-N, N counting '
    "from 0). edit_mode is replace (the default), insert (a new cell after cell_id, or at the "
    "start without one; cell_type is required) or delete. Replacing a code cell clears its "
    "outputs. notebook_path must be an absolute path. Use this, not Edit, for notebooks.",
    kind="edit",
)
def notebook_edit(
    ctx: ToolContext,
    notebook_path: Annotated[
        str, Field(description="The notebook to edit: the absolute path of a .ipynb file")
    ],
    new_source: Annotated[str, Field(description="The cell's new source (not used when deleting)")],
    cell_id: Annotated[
        str | None,
        Field(
            description="The id of the cell to edit, as Read shows it (or cell-N, N counting "
            "from 0). To insert: the new cell goes after this one, or first if it is left out"
        ),
    ] = None,
    cell_type: Annotated[
        Literal["code", "markdown"] | None,
        Field(
            description="code or markdown; by default the cell keeps its type. Required to insert"
        ),
    ] = None,
    edit_mode: Annotated[
        EditMode | None,
        Field(description="replace (the default), insert or delete"),
    ] = None,
) -> str:
    mode: EditMode = edit_mode or "replace"
    path = ctx.resolve(notebook_path)
    if path.suffix.lower() != ".ipynb":
        raise ToolError(f"{path} is not a Jupyter notebook (.ipynb); use Edit for other files.")
    if mode == "insert" and cell_type is None:
        raise ToolError("cell_type is required to insert a cell (code or markdown).")
    data = _notebook_bytes(path)
    text = data.decode("utf-8", errors="replace")
    notebook = parse_notebook(data, str(path))
    name = edited(notebook, cell_id, new_source, cell_type, mode)
    _save(path, _layout(text, notebook))
    if mode == "replace":
        return f"Cell {name} now holds:\n{new_source}"
    if mode == "insert":
        return f"Inserted cell {name}, holding:\n{new_source}"
    return f"Deleted cell {name}."


def _notebook_bytes(path: Path) -> bytes:
    try:
        with open_regular(path) as handle:
            return read_whole(handle, MAX_NOTEBOOK_BYTES, str(path))
    except FileNotFoundError:
        raise ToolError(f"The notebook {path} does not exist.") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None


def _save(path: Path, data: bytes) -> None:
    from teammate.tools.atomic import atomic_write

    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ToolError(
            f"The edited notebook would be {human_size(len(data))}, more than "
            f"{human_size(MAX_NOTEBOOK_BYTES)}; nothing was written."
        )
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None


NOTEBOOK_TOOLS: tuple[Tool, ...] = (notebook_edit,)
