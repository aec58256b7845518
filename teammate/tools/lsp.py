"""Claude Code's ``LSP`` tool for the Claude teammate: code intelligence from a language server
(where a symbol is defined, implemented, referenced or called; its type and documentation; the
symbols of a file or of the workspace).

This module owns the tool: its input (Claude Code 2.1.330's: ``operation``, ``filePath``,
``line`` and ``character`` counted from 1 as editors show them, ``query`` for
``workspaceSymbol``), its checks (the file exists and is not too large, the position is in
it, the server offers the operation), the requests each operation sends, and the text of the
result: locations as ``path:line:col`` (relative to the working directory inside it), with the
line's code, hover as its text, document symbols as a tree, each with a count. The servers are
`teammate.tools.lsp_client`'s: the tool finds its agent's `LspClient` in ``ToolContext.lsp``.

An agent is offered the tool only where a language server can run (`lsp_tools_for`), as
Claude Code offers it only with a server configured.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlparse

from pydantic import Field

from teammate.tools.base import Tool, ToolContext, ToolError, tool
from teammate.tools.lsp_client import LanguageServer, LspClient, from_units, to_units
from teammate.tools.lsp_servers import LspError, ServerRegistry

MAX_FILE_BYTES = 10_000_000  # a larger file is not sent to a server (Claude Code's limit too)
MAX_SHOWN = 300  # entries listed; the rest counted
MAX_CODE = 160  # characters of a location's line shown beside it

Operation = Literal[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
]


@dataclass(frozen=True)
class Request:
    """What an operation asks of a server: the method, the capability that offers it, and
    whether it is about a position in the file."""

    method: str
    capability: str
    at_position: bool = True


REQUESTS: dict[str, Request] = {
    "goToDefinition": Request("textDocument/definition", "definitionProvider"),
    "findReferences": Request("textDocument/references", "referencesProvider"),
    "hover": Request("textDocument/hover", "hoverProvider"),
    "documentSymbol": Request("textDocument/documentSymbol", "documentSymbolProvider", False),
    "workspaceSymbol": Request("workspace/symbol", "workspaceSymbolProvider", False),
    "goToImplementation": Request("textDocument/implementation", "implementationProvider"),
    "prepareCallHierarchy": Request("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
    "incomingCalls": Request("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
    "outgoingCalls": Request("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
}
SYMBOL_KINDS = (  # SymbolKind 1 to 26
    *("File", "Module", "Namespace", "Package", "Class", "Method", "Property", "Field"),
    *("Constructor", "Enum", "Interface", "Function", "Variable", "Constant", "String"),
    *("Number", "Boolean", "Array", "Object", "Key", "Null", "EnumMember", "Struct", "Event"),
    *("Operator", "TypeParameter"),
)
_LINE_END = re.compile(r"\r\n|\r|\n")

DESCRIPTION = """\
Asks a language server about code: where a symbol is defined, implemented, referenced or called, \
its type and documentation, and the symbols of a file or of the whole workspace. Operations:
- goToDefinition: where the symbol at the position is defined
- findReferences: every reference to the symbol at the position
- hover: the type and documentation of the symbol at the position
- documentSymbol: the functions, classes, variables... of the file, as a tree
- workspaceSymbol: symbols of the workspace whose name matches `query` (give it: servers \
usually answer nothing to an empty one)
- goToImplementation: implementations of the interface or abstract method at the position
- prepareCallHierarchy: the function or method at the position, as a call hierarchy item
- incomingCalls: the functions and methods that call the one at the position
- outgoingCalls: the functions and methods the one at the position calls
Every operation takes filePath (absolute, or relative to the working directory; it also picks \
the language server), line and character (1-based, as editors show them). Locations come back \
as path:line:col. It works only for file types with a language server; for others it says \
which servers it looked for."""


@tool("LSP", DESCRIPTION, kind="read")
def lsp(
    ctx: ToolContext,
    operation: Annotated[Operation, Field(description="The LSP operation to perform")],
    filePath: Annotated[  # Claude Code's field name
        str, Field(description="The file to ask about: absolute, or relative")
    ],
    line: Annotated[int, Field(gt=0, description="The line number (1-based, as in editors)")],
    character: Annotated[
        int, Field(gt=0, description="The character offset in the line (1-based, as in editors)")
    ],
    query: Annotated[
        str | None,
        Field(description="For workspaceSymbol: the symbol's name or part of it"),
    ] = None,
) -> str:
    client = _client(ctx)
    path = Path(os.path.abspath(ctx.resolve(filePath)))  # no "..": the server's URIs have none
    text = _read(path, filePath)
    request = REQUESTS[operation]
    if operation == "workspaceSymbol" and not (query or "").strip():
        raise ToolError("workspaceSymbol needs a query: the symbol's name or a part of it")
    lines = _LINE_END.split(text)
    if request.at_position:
        _check_position(lines, line, character, _shown(path, ctx.cwd))
    try:
        server = client.server_for(path, ctx.cwd)
        _check_offered(server, operation)
        server.sync(path, text)
        position = {"line": line - 1, "character": character - 1}
        if request.at_position:
            position["character"] = to_units(lines[line - 1], character - 1, server.encoding)
        result = _ask(client, server, operation, path, position, query or "")
    except LspError as exc:
        raise ToolError(str(exc)) from None
    view = View(ctx.cwd, server.encoding, {path: lines})
    return FORMATS[operation](view, result, Asked(path, line, character, query or ""))


LSP_TOOLS: tuple[Tool, ...] = (lsp,)


def lsp_tools_for(cwd: Path, settings: Iterable[Path] = ()) -> tuple[Tool, ...]:
    """The LSP tool where a language server can run for an agent in `cwd` (configured under
    ``lspServers`` in the `settings` files, or found on PATH); none elsewhere."""
    return LSP_TOOLS if ServerRegistry.from_settings(cwd, settings).available() else ()


# the checks


def _client(ctx: ToolContext) -> LspClient:
    if ctx.lsp is None:
        raise ToolError("LSP is not set up for this agent: it has no language servers")
    return ctx.lsp


def _read(path: Path, given: str) -> str:
    """The file's text; `ToolError` for a missing, special or too large file."""
    try:
        status = path.stat()
    except FileNotFoundError:
        raise ToolError(f"File does not exist: {given}") from None
    except OSError as exc:
        raise ToolError(f"Cannot access file {given}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise ToolError(f"Not a regular file: {given}")
    if status.st_size > MAX_FILE_BYTES:
        raise ToolError(
            f"File too large for a language server: {given} has {status.st_size:,} bytes "
            f"(at most {MAX_FILE_BYTES:,})"
        )
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise ToolError(f"Cannot read {given}: {exc.strerror or exc}") from None


def _check_position(lines: list[str], line: int, character: int, shown: str) -> None:
    """`line` and `character` (1-based) within the file; `ToolError` names the bounds."""
    count = len(lines) - (1 if len(lines) > 1 and lines[-1] == "" else 0)
    if line > len(lines):
        raise ToolError(
            f"line {line} is out of range: {shown} has {count} line{'s' * (count != 1)} "
            "(lines are 1-based)"
        )
    width = len(lines[line - 1])
    if character > width + 1:
        raise ToolError(
            f"character {character} is out of range: line {line} of {shown} has {width} "
            f"characters (1-based: at most {width + 1}, the end of the line)"
        )


def _check_offered(server: LanguageServer, operation: str) -> None:
    """`LspError` if the server did not offer what `operation` needs."""
    if server.capabilities.get(REQUESTS[operation].capability):
        return
    offered = [name for name, r in REQUESTS.items() if server.capabilities.get(r.capability)]
    raise LspError(
        f"{server.spec.name} does not support {operation} (it offers no "
        f"{REQUESTS[operation].capability}); what it supports: {', '.join(offered) or 'nothing'}"
    )


# the requests


def _ask(
    client: LspClient,
    server: LanguageServer,
    operation: str,
    path: Path,
    position: dict[str, int],
    query: str,
) -> Any:
    """The server's answer to `operation` (for calls: to the second request, about the first
    call hierarchy item at the position)."""
    document = {"uri": path.as_uri()}
    method = REQUESTS[operation].method
    if operation == "workspaceSymbol":
        return client.request(server, method, {"query": query})
    if operation == "documentSymbol":
        return client.request(server, method, {"textDocument": document})
    params: dict[str, Any] = {"textDocument": document, "position": position}
    if operation == "findReferences":
        params["context"] = {"includeDeclaration": True}
    result = client.request(server, method, params)
    if operation not in ("incomingCalls", "outgoingCalls"):
        return result
    if not isinstance(result, list) or not result:
        return None  # no function at the position
    direction = "incoming" if operation == "incomingCalls" else "outgoing"
    calls = client.request(server, f"callHierarchy/{direction}Calls", {"item": result[0]})
    return {"item": result[0], "calls": calls, "incoming": direction == "incoming"}


# the text of a result


@dataclass(frozen=True)
class Asked:
    path: Path
    line: int
    character: int
    query: str


class View:
    """How a result's places read: ``path:line:col`` in characters from 1 (the server counts
    in its position encoding), paths relative to the working directory inside it, and the code
    of a location's line (files read once per result)."""

    def __init__(self, cwd: Path, encoding: str, known: dict[Path, list[str]]) -> None:
        self.cwd = cwd
        self.encoding = encoding
        self._lines: dict[Path, list[str] | None] = dict(known)

    def lines(self, uri: str) -> list[str] | None:
        path = path_of(uri)
        if path is None:
            return None
        if path not in self._lines:
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
                self._lines[path] = _LINE_END.split(text)
            except OSError:
                self._lines[path] = None
        return self._lines[path]

    def file(self, uri: str) -> str:
        path = path_of(uri)
        return _shown(path, self.cwd) if path is not None else uri

    def spot(self, uri: str, position: Any) -> str:
        """``line:col`` of a server's position in the file `uri`, both from 1."""
        line, units = _line_and_units(position)
        lines = self.lines(uri)
        column = units
        if lines is not None and 0 <= line < len(lines):
            column = from_units(lines[line], units, self.encoding)
        return f"{line + 1}:{column + 1}"

    def place(self, uri: str, position: Any) -> str:
        return f"{self.file(uri)}:{self.spot(uri, position)}"

    def code(self, uri: str, position: Any) -> str:
        """The (stripped, shortened) code of the line `position` is on; empty if unknown."""
        line, _ = _line_and_units(position)
        lines = self.lines(uri)
        if lines is None or not 0 <= line < len(lines):
            return ""
        code = lines[line].strip()
        return code if len(code) <= MAX_CODE else code[: MAX_CODE - 3] + "..."


def path_of(uri: str) -> Path | None:
    """The local path of a ``file:`` URI (None for another scheme)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _shown(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when it is inside it (as written, or with its links resolved,
    as a server may give it), else absolute."""
    for base in (cwd, cwd.resolve()):
        if path.is_relative_to(base):
            return str(path.relative_to(base)) or "."
    return str(path)


def _line_and_units(position: Any) -> tuple[int, int]:
    if not isinstance(position, dict):
        return 0, 0
    return int(position.get("line", 0)), int(position.get("character", 0))


def _start(span: Any) -> Any:
    return span.get("start") if isinstance(span, dict) else None


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _listed(header: str, entries: list[str]) -> str:
    shown = entries[:MAX_SHOWN]
    more = len(entries) - len(shown)
    tail = [f"... and {more} more"] if more > 0 else []
    return "\n".join([header, *shown, *tail])


def _nothing(what: str, asked: Asked, view: View) -> str:
    where = f"{_shown(asked.path, view.cwd)}:{asked.line}:{asked.character}"
    return (
        f"No {what} found at {where}: the position may not be on a symbol, or the server may "
        "not have indexed the project yet"
    )


def _locations(result: Any) -> list[tuple[str, Any]]:
    """(uri, start) of each Location or LocationLink of a definition-like answer."""
    found = result if isinstance(result, list) else [result] if result else []
    places = []
    for item in found:
        if not isinstance(item, dict):
            continue
        if "targetUri" in item:
            span = item.get("targetSelectionRange") or item.get("targetRange")
            places.append((str(item["targetUri"]), _start(span)))
        elif "uri" in item:
            places.append((str(item["uri"]), _start(item.get("range"))))
    return places


def _location_text(noun: str, plural: str) -> Callable[[View, Any, Asked], str]:
    """The formatter of a definition-like answer: its locations, with their code."""

    def text(view: View, result: Any, asked: Asked) -> str:
        places = _locations(result)
        if not places:
            return _nothing(noun, asked, view)
        files = {uri for uri, _ in places}
        entries = []
        for uri, start in places:
            code = view.code(uri, start)
            entries.append(f"  {view.place(uri, start)}" + (f": {code}" if code else ""))
        header = f"Found {_plural(len(places), noun, plural)}"
        if len(files) > 1:
            header += f" in {len(files)} files"
        return _listed(header + ":", entries)

    return text


def hover_text(view: View, result: Any, asked: Asked) -> str:
    contents = result.get("contents") if isinstance(result, dict) else None
    text = re.sub(r"\n{3,}", "\n\n", _markup(contents).strip())
    if not text:
        return _nothing("hover information", asked, view)
    where = f"{_shown(asked.path, view.cwd)}:{asked.line}:{asked.character}"
    span = result.get("range") if isinstance(result, dict) else None
    if isinstance(span, dict):
        where = view.place(asked.path.as_uri(), span.get("start"))
    return f"Hover at {where}:\n{text}"


def _markup(contents: Any) -> str:
    """MarkupContent, a MarkedString or a list of them, as text."""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, list):
        return "\n\n".join(filter(None, (_markup(part).strip() for part in contents)))
    if isinstance(contents, dict):
        value = str(contents.get("value", ""))
        language = contents.get("language")
        return f"```{language}\n{value}\n```" if language else value
    return ""


def _kind(symbol: dict[str, Any]) -> str:
    kind = symbol.get("kind")
    if isinstance(kind, int) and 1 <= kind <= len(SYMBOL_KINDS):
        return SYMBOL_KINDS[kind - 1]
    return "Symbol"


def _label(symbol: dict[str, Any]) -> str:
    """``name (Kind)``, and its detail in brackets if it has one."""
    detail = symbol.get("detail")
    return f"{symbol.get('name', '?')} ({_kind(symbol)})" + (f" [{detail}]" if detail else "")


def document_symbols_text(view: View, result: Any, asked: Asked) -> str:
    symbols = [s for s in result or [] if isinstance(s, dict)] if isinstance(result, list) else []
    shown = _shown(asked.path, view.cwd)
    if not symbols:
        return (
            f"No symbols found in {shown}: the file may have none, or the server may not "
            "have indexed it yet"
        )
    uri = asked.path.as_uri()
    if "location" in symbols[0]:  # SymbolInformation: flat; nested here by their ranges
        entries = [
            f"{'  ' * depth}{_label(s)} {view.spot(uri, _start(s['location'].get('range')))}"
            for depth, s in _nested(symbols)
        ]
    else:  # DocumentSymbol: a tree already
        entries = list(_tree(view, uri, symbols, 0))
    header = f"Found {_plural(len(entries), 'symbol')} in {shown}:"
    return _listed(header, [f"  {entry}" for entry in entries])


def _tree(view: View, uri: str, symbols: list[Any], depth: int) -> Iterable[str]:
    for symbol in symbols:
        if not isinstance(symbol, dict):
            continue
        start = _start(symbol.get("selectionRange") or symbol.get("range"))
        yield f"{'  ' * depth}{_label(symbol)} {view.spot(uri, start)}"
        yield from _tree(view, uri, symbol.get("children") or [], depth + 1)


def _nested(symbols: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Flat symbols in the order of their ranges, each with its depth: how many of the others'
    ranges hold its own."""

    def span(symbol: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
        whole = symbol.get("location", {}).get("range") or {}
        start, end = _line_and_units(whole.get("start")), _line_and_units(whole.get("end"))
        return start, end

    ordered = sorted(symbols, key=lambda s: (span(s)[0], tuple(-n for n in span(s)[1])))
    placed: list[tuple[int, dict[str, Any]]] = []
    open_spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for symbol in ordered:
        start, end = span(symbol)
        while open_spans and not (open_spans[-1][0] <= start and end <= open_spans[-1][1]):
            open_spans.pop()
        placed.append((len(open_spans), symbol))
        open_spans.append((start, end))
    return placed


def workspace_symbols_text(view: View, result: Any, asked: Asked) -> str:
    symbols = [s for s in result or [] if isinstance(s, dict)] if isinstance(result, list) else []
    found = [s for s in symbols if isinstance(s.get("location"), dict) and s["location"].get("uri")]
    if not found:
        return (
            f"No symbols matching {asked.query!r} found in the workspace: the server may not "
            "have indexed it yet"
        )
    entries = []
    for symbol in found:
        location = symbol["location"]
        entry = f"  {_label(symbol)} {view.place(location['uri'], _start(location.get('range')))}"
        container = symbol.get("containerName")
        entries.append(entry + (f" in {container}" if container else ""))
    files = {s["location"]["uri"] for s in found}
    header = f"Found {_plural(len(found), 'symbol')} matching {asked.query!r}"
    return _listed(f"{header} in {_plural(len(files), 'file')}:", entries)


def _item(view: View, item: dict[str, Any]) -> str:
    """A call hierarchy item: ``name (Kind) [detail] path:line:col``."""
    start = _start(item.get("selectionRange") or item.get("range"))
    return f"{_label(item)} {view.place(str(item.get('uri', '')), start)}"


def call_items_text(view: View, result: Any, asked: Asked) -> str:
    items = [i for i in result or [] if isinstance(i, dict)] if isinstance(result, list) else []
    if not items:
        return _nothing("function or method", asked, view)
    header = f"Found {_plural(len(items), 'call hierarchy item')}:"
    return _listed(header, [f"  {_item(view, item)}" for item in items])


def calls_text(view: View, result: Any, asked: Asked) -> str:
    if not isinstance(result, dict):
        return _nothing("function or method", asked, view)
    item, calls, incoming = result["item"], result.get("calls") or [], result["incoming"]
    name = item.get("name", "?")
    if not calls:
        if incoming:
            return f"No incoming calls found: nothing calls {_item(view, item)}"
        return f"No outgoing calls found: {_item(view, item)} calls nothing"
    entries = []
    for call in calls:
        other = call.get("from" if incoming else "to") or {}
        # the ranges are in the caller's file: the other's for incoming calls, the item's else
        caller_uri = str(other.get("uri", "") if incoming else item.get("uri", ""))
        spots = ", ".join(view.spot(caller_uri, _start(r)) for r in call.get("fromRanges") or [])
        said = "calls at" if incoming else "called at"
        entries.append(f"  {_item(view, other)}" + (f", {said} {spots}" if spots else ""))
    if incoming:
        header = f"Found {_plural(len(calls), 'incoming call')} to {name}:"
    else:
        header = f"Found {_plural(len(calls), 'outgoing call')} from {name}:"
    return _listed(header, entries)


FORMATS: dict[str, Callable[[View, Any, Asked], str]] = {
    "goToDefinition": _location_text("definition", "definitions"),
    "findReferences": _location_text("reference", "references"),
    "goToImplementation": _location_text("implementation", "implementations"),
    "hover": hover_text,
    "documentSymbol": document_symbols_text,
    "workspaceSymbol": workspace_symbols_text,
    "prepareCallHierarchy": call_items_text,
    "incomingCalls": calls_text,
    "outgoingCalls": calls_text,
}
