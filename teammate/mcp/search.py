"""MCP tools loaded when needed, as Claude Code 2.1.330 does: `ToolSearch`, and the MCP resource
tools (`ListMcpResources`, `ReadMcpResource`).

An agent with MCP servers is not sent their tools' schemas up front: only their names, in an
``<available-deferred-tools>`` note added to its conversation when the list changes (a server
connected, failed, came back). `ToolSearch` loads some: ``select:NAME[,NAME...]`` by name, or
keywords matched against names and descriptions (`max_results`, 5 by default). A loaded tool is
sent with every request from then on (appended at the end of the tools: the prompt cache is
written again once per load, not every turn), and its schema is returned in a ``<functions>``
block so the model can call it at once. A server still connecting is waited for (up to
``MCP_TIMEOUT``) when ToolSearch names one of its tools, or when its tool is called directly (a
direct call of a deferred tool loads it). ``ENABLE_TOOL_SEARCH=false`` sends every MCP tool up
front, as swarm did before.

`Deferred` is the agent loop's part (`teammate.agent.tool_calls`): which tools are loaded,
what to offer, what to announce. The tools reach it through `ToolContext.mcp`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from teammate.mcp.client import McpError, startup_timeout
from teammate.tools.base import Tool, ToolContext, ToolError, tool

if TYPE_CHECKING:
    from teammate.mcp.tools import McpToolbox

DEFAULT_RESULTS = 5


def deferring(environ: dict[str, str] | None = None) -> bool:
    """Whether MCP tools wait for ToolSearch (``ENABLE_TOOL_SEARCH``, on unless false)."""
    value = (os.environ if environ is None else environ).get("ENABLE_TOOL_SEARCH", "")
    return value.strip().lower() not in ("false", "0", "no", "off")


@dataclass
class Deferred:
    """An agent's MCP tools: the toolbox, the names loaded, what was last announced."""

    toolbox: McpToolbox
    on: bool = True
    loaded: set[str] = field(default_factory=set)
    announced: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def offered(self) -> list[Tool]:
        """The MCP tools to send with a request: the loaded ones (all, deferral off)."""
        tools = self.toolbox.tools()
        return tools if not self.on else [t for t in tools if t.name in self.loaded]

    def find(self, name: str) -> Tool | None:
        """Tool `name` of a server (waiting for the servers still connecting if it is not
        known yet); found, it is loaded."""
        found = {t.name: t for t in self.toolbox.tools()}.get(name)
        if found is None and name.startswith("mcp__") and self.toolbox.pending():
            self.toolbox.wait_pending(startup_timeout())
            found = {t.name: t for t in self.toolbox.tools()}.get(name)
        if found is not None:
            self.loaded.add(name)
        return found

    def note(self) -> str | None:
        """The ``<available-deferred-tools>`` text when the list changed since it was last
        given; None otherwise (or with deferral off)."""
        if not self.on:
            return None
        names = tuple(sorted(t.name for t in self.toolbox.tools() if t.name not in self.loaded))
        pending = tuple(sorted(v.name for v in self.toolbox.pending()))
        if (names, pending) == self.announced or (self.announced is None and not names + pending):
            return None
        self.announced = (names, pending)
        lines = [
            "<available-deferred-tools>",
            "These MCP tools are available but their schemas are not loaded: call ToolSearch "
            'with query "select:NAME" to load one (or several, comma-separated) before you '
            "call it."
            if names
            else "No MCP tools are available to load now.",
            *names,
        ]
        if pending:
            lines.append(f"MCP servers still connecting (ToolSearch waits): {', '.join(pending)}")
        lines.append("</available-deferred-tools>")
        return "\n".join(lines)

    def forget_announcement(self) -> None:
        """The conversation was compacted: the list goes to the model again."""
        self.announced = None

    def search(self, query: str, most: int) -> str:
        """`ToolSearch`: load what `query` selects or matches; their definitions."""
        query = query.strip()
        if query.lower().startswith("select:"):
            names = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
            found = [t for t in (self.find(n) for n in names) if t is not None]
            missing = [n for n in names if n not in {t.name for t in found}]
        else:
            if self.toolbox.pending():
                self.toolbox.wait_pending(startup_timeout())
            found = self._matching(query)[:most]
            missing = []
            self.loaded.update(t.name for t in found)
        return self._result(query, found, missing)

    def _matching(self, query: str) -> list[Tool]:
        words = [w for w in re.split(r"[\s_\-]+", query.lower()) if w]
        scored = []
        for candidate in self.toolbox.tools():
            name, about = candidate.name.lower(), candidate.description.lower()
            score = sum(3 if w in name else 1 if w in about else 0 for w in words)
            if score:
                scored.append((-score, candidate.name, candidate))
        return [t for _, _, t in sorted(scored, key=lambda item: item[:2])]

    def _result(self, query: str, found: list[Tool], missing: list[str]) -> str:
        failed = [v for v in self.toolbox.servers() if v.state == "failed"]
        lines = [f"{len(found)} of {len(self.toolbox.tools())} MCP tools match {query!r}."]
        if found:
            schemas = "\n".join(json.dumps(t.schema(), ensure_ascii=False) for t in found)
            lines += ["<functions>", schemas, "</functions>", "They can be called now."]
        if missing:
            lines.append(f"No such tool: {', '.join(missing)}.")
        if pending := self.toolbox.pending():
            lines.append(f"Still connecting: {', '.join(v.name for v in pending)}.")
        for view in failed:
            lines.append(f"Server {view.name} failed: {view.error or 'no reason given'}.")
        return "\n".join(lines)


def _deferred(ctx: ToolContext) -> Deferred:
    if ctx.mcp is None:
        raise ToolError("This agent has no MCP servers.")
    found: Deferred = ctx.mcp
    return found


@tool(
    "ToolSearch",
    "Load MCP tools whose names are listed in <available-deferred-tools> (only their names are "
    'known until loaded). query "select:NAME" loads tools by name (comma-separated); other '
    "words are matched against the tools' names and descriptions. The loaded tools' schemas "
    "are returned and they can be called at once. A server still connecting is waited for.",
    kind="read",
)
def tool_search(
    ctx: ToolContext,
    query: Annotated[
        str, Field(description='"select:<tool_name>" for direct selection, or keywords')
    ],
    max_results: Annotated[int, Field(ge=1, le=50, description="How many at most")] = (
        DEFAULT_RESULTS
    ),
) -> str:
    return _deferred(ctx).search(query, max_results)


@tool(
    "ListMcpResources",
    "List the resources the MCP servers offer (all servers, or `server`).",
    kind="read",
)
def list_mcp_resources(
    ctx: ToolContext,
    server: Annotated[str | None, Field(description="The server to list")] = None,
) -> str:
    toolbox = _deferred(ctx).toolbox
    views = [v for v in toolbox.servers() if server is None or v.name == server]
    if server is not None and not views:
        names = ", ".join(v.name for v in toolbox.servers()) or "none"
        raise ToolError(f"No MCP server named {server!r}; servers: {names}")
    lines = []
    for view in views:
        if view.state != "connected":
            lines.append(f"{view.name}: {view.state}")
            continue
        try:
            listed = toolbox.manager.list_resources(view.key)
        except McpError as exc:
            lines.append(f"{view.name}: {exc}")
            continue
        for resource in getattr(listed, "resources", None) or []:
            about = getattr(resource, "description", None) or getattr(resource, "name", "")
            lines.append(f"{view.name}: {resource.uri} ({about})")
    return "\n".join(lines) or "No resources."


@tool("ReadMcpResource", "Read one resource of an MCP server by its URI.", kind="read")
def read_mcp_resource(
    ctx: ToolContext,
    server: Annotated[str, Field(description="The MCP server name")],
    uri: Annotated[str, Field(description="The resource URI to read")],
) -> str:
    toolbox = _deferred(ctx).toolbox
    view = next((v for v in toolbox.servers() if v.name == server), None)
    if view is None:
        names = ", ".join(v.name for v in toolbox.servers()) or "none"
        raise ToolError(f"No MCP server named {server!r}; servers: {names}")
    try:
        result = toolbox.manager.read_resource(view.key, uri)
    except McpError as exc:
        raise ToolError(str(exc)) from None
    parts = []
    for content in getattr(result, "contents", None) or []:
        text = getattr(content, "text", None)
        kind = getattr(content, "mimeType", None) or "binary"
        parts.append(text if text is not None else f"[{kind} content of {content.uri}]")
    return "\n".join(parts) or "(empty)"


MCP_SEARCH_TOOLS: tuple[Tool, ...] = (tool_search, list_mcp_resources, read_mcp_resource)
