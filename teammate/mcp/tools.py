"""An MCP server's tools as swarm `Tool` objects, and the set of them an agent sees.

A tool is named ``mcp__<server>__<tool>`` (`teammate.mcp.config.tool_name`), keeps the
server's own input schema (the server checks its input), and is of kind ``read`` when the
server annotates it ``readOnlyHint`` (no approval where reads need none), ``execute``
otherwise (it asks the lead unless a rule or the mode allows it). Its result is the text of the
content the server returned; an ``isError`` result is a `ToolError`.

`McpToolbox` is what an agent loop asks before each model request: the tools of the servers it
may use that are connected now, so a failed server's tools disappear and a reconnected one's
come back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from teammate.mcp.client import McpError, McpManager, ServerView, ToolInfo
from teammate.mcp.config import tool_name
from teammate.tools.base import Tool, ToolContext, ToolError


class _AnyInput(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class McpTool(Tool):
    server_key: str = ""
    remote_name: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    manager: McpManager | None = field(default=None, compare=False, hash=False)

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema or {"type": "object"},
        }

    def validate(self, tool_input: dict[str, Any]) -> BaseModel:
        if not isinstance(tool_input, dict):
            raise ToolError(f"invalid input for {self.name}: an object is needed")
        return _AnyInput.model_validate(tool_input)

    def run(self, ctx: ToolContext, tool_input: dict[str, Any]) -> str:
        if self.manager is None:
            raise ToolError(f"{self.name}: no MCP connection")
        try:
            result = self.manager.call_tool(self.server_key, self.remote_name, tool_input)
        except McpError as exc:
            raise ToolError(str(exc)) from None
        text = result_text(result)
        if getattr(result, "is_error", False):
            raise ToolError(text or f"{self.name} failed")
        return text


def _unused(ctx: ToolContext, **_: Any) -> str:  # McpTool.run does the work
    raise ToolError("not callable")


def make_tool(manager: McpManager, key: str, server: str, info: ToolInfo) -> McpTool:
    return McpTool(
        name=tool_name(server, info.name),
        description=info.description or f"{info.name} (MCP server {server})",
        kind="read" if info.read_only else "execute",
        input_model=_AnyInput,
        function=_unused,
        server_key=key,
        remote_name=info.name,
        input_schema=info.input_schema,
        manager=manager,
    )


def result_text(result: Any) -> str:
    """The text of a `CallToolResult`: text blocks as they are, other blocks described, the
    structured content as JSON when there is nothing else."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "image" or kind == "audio":
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]")
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


class McpToolbox:
    """The MCP tools one agent may use: of the servers `keys` (None: every shared server),
    narrowed by the agent's ``tools`` list when it has one (``mcp__server`` or a full name)."""

    def __init__(
        self,
        manager: McpManager,
        keys: Iterable[str] | None = None,
        listed: Iterable[str] | None = None,
        owned: Iterable[str] = (),
    ) -> None:
        self.manager = manager
        self.keys = None if keys is None else set(keys)
        self.owned = set(owned)  # its own inline servers: always all their tools
        self.listed = None if listed is None else set(listed)

    def tools(self) -> list[Tool]:
        found: list[Tool] = []
        for view in self.manager.views():
            mine = view.key in self.owned
            if not mine and (view.owner is not None or not self._wanted(view.key)):
                continue
            if view.state != "connected":
                continue
            for info in view.tools:
                made = make_tool(self.manager, view.key, view.name, info)
                if mine or self.listed is None or self._listed(made.name):
                    found.append(made)
        return found

    def servers(self) -> list[ServerView]:
        """The servers this agent may use (their tools, or a part of them), as they are now."""
        return [
            view
            for view in self.manager.views()
            if view.key in self.owned or (view.owner is None and self._wanted(view.key))
        ]

    def pending(self) -> list[ServerView]:
        return [view for view in self.servers() if view.state == "pending"]

    def wait_pending(self, timeout: float) -> None:
        """Wait for the servers still connecting, up to `timeout` seconds in all."""
        keys = [view.key for view in self.pending()]
        if keys:
            self.manager.wait(keys, timeout)

    def _wanted(self, key: str) -> bool:
        return self.keys is None or key in self.keys

    def _listed(self, name: str) -> bool:
        assert self.listed is not None
        return name in self.listed or any(
            name.startswith(entry + "__") for entry in self.listed if entry.startswith("mcp__")
        )
