"""How a tool is defined: one typed Python function, from which its JSON schema is derived.

    @tool("Read", "Reads a file ...", read_only=True)
    def read(ctx: ToolContext, file_path: Annotated[str, Field(description="...")],
             offset: int | None = None) -> str: ...

The decorator builds a strict Pydantic model from the function's keyword parameters (all but
the first, the `ToolContext`), so the schema sent to the model and the validation of what the
model sends back come from the same definition. A tool returns the text of its result, or a
list of content blocks (`Content`: ``text``, ``image``, ``document`` blocks as the Messages API
takes them in a ``tool_result``); it raises `ToolError` for a failure the model should see (the
loop turns it, and any other exception, into an ``is_error`` tool result: a tool never crashes
the teammate).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from protocols.errors import Error

if TYPE_CHECKING:  # only named here; brains and the agent kit import tools, not the reverse
    from teammate.agent.subagents import SubAgents
    from teammate.api.model import ModelReply, ModelRequest
    from teammate.config.skills import SkillSet
    from teammate.hooks import Hooks
    from teammate.link import TeamLink
    from teammate.mcp.search import Deferred
    from teammate.tools.agents import AgentCall
    from teammate.tools.lsp_client import LspClient
    from teammate.tools.shells import Shells

# what a tool does, for the permission modes: "read" never asks, "edit" asks outside
# acceptEdits, "execute" asks unless bypassed, "team" (messages, tasks) never asks, "web"
# (WebFetch, WebSearch: it reaches out, changes nothing here) asks unless bypassed, plan too
ToolKind = Literal["read", "edit", "execute", "team", "web"]
Content = list[dict[str, Any]]  # a tool result's content blocks (text, image, document)
ToolOutput = str | Content


def text_of(content: Content) -> str:
    """A tool result's content blocks as text (an image or a document named, not shown)."""
    parts = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


class ToolError(Error):
    """A failure to report to the model as the tool's (error) result."""


@dataclass
class ToolContext:
    """What a tool may use: the working directory, the team it belongs to, and the agent's own
    hooks. File and shell tools only use `cwd` and `output_limit`; the team tools need `team`
    (a teammate's `TeamLink`, or the lead's `LeadLink`); `exit_plan_mode` is the Claude brain's
    answer to ExitPlanMode (None where plans are not asked for); `subagents` runs the agent's
    sub-agents."""

    cwd: Path
    agent_name: str = "agent"
    team: TeamLink | None = None
    output_limit: int = 30_000
    exit_plan_mode: Callable[[str], str] | None = None
    enter_plan_mode: Callable[[], str] | None = None  # the brain's answer to EnterPlanMode
    subagents: SubAgents | None = None  # the agent's sub-agents (Agent, TaskOutput, TaskStop)
    spawn_teammate: Callable[[AgentCall], str] | None = None  # the lead's: Agent with a name
    tool_use_id: str = ""  # the call being run (set by the agent loop)
    forked: bool = False  # a fork child's context: it may not fork again
    skills: SkillSet | None = None  # what the Skill tool loads
    hooks: Hooks | None = None  # TaskCreated / TaskCompleted hooks for the task tools
    # where the agent's tools keep files for it (`TeamPaths.agent_files`): background shells'
    # output, output too large to show whole; None: a temporary directory of the process
    files_dir: Path | None = None
    shells: Shells | None = None  # its shell commands (`teammate.tools.shells`)
    mcp: Deferred | None = None  # its MCP tools, loaded when needed (`teammate.mcp.search`)
    lsp: LspClient | None = None  # its language servers, for LSP (`teammate.tools.lsp`)
    # a request of a tool's own (WebFetch's reader, WebSearch's search) to the agent's model or
    # the variant named (``haiku``), on its connection and counted in its usage; set by the
    # agent loop (None: no model here)
    model_call: Callable[[ModelRequest, str | None], ModelReply] | None = None

    def link(self) -> TeamLink:
        """The team, for a team tool; a `ToolError` where there is none."""
        if self.team is None:
            raise ToolError("this tool needs a team, and this agent has none")
        return self.team

    def sub_agents(self) -> SubAgents:
        """The agent's sub-agents, for the Agent, TaskOutput and TaskStop tools."""
        if self.subagents is None:
            raise ToolError("this agent cannot run sub-agents")
        return self.subagents

    def files(self, kind: str) -> Path:
        """The directory `kind` (``shells``, ``outputs``) of the agent's own files, made."""
        import tempfile

        from protocols.fs import safefs

        base = self.files_dir
        if base is None:
            base = Path(tempfile.gettempdir()) / f"swarm-{os.getuid()}-{os.getpid()}"
        directory = base / kind
        safefs.makedirs(directory)
        return directory

    def resolve(self, path: str) -> Path:
        """`path` made absolute against the working directory."""
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.cwd / candidate


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    kind: ToolKind
    input_model: type[BaseModel]
    function: Callable[..., ToolOutput]

    @property
    def read_only(self) -> bool:
        return self.kind in ("read",)

    @functools.cached_property
    def api_schema(self) -> dict[str, Any]:
        """`schema()` made once (pydantic takes ~0.4 ms a tool to make it: the agent loop
        sends every tool with every request). Shared: read it, never change it."""
        return self.schema()

    def schema(self) -> dict[str, Any]:
        """The tool definition for the Messages API (`name`, `description`, `input_schema`)."""
        input_schema = _inline_refs(self.input_model.model_json_schema())
        _tidy(input_schema)
        return {"name": self.name, "description": self.description, "input_schema": input_schema}

    def validate(self, tool_input: dict[str, Any]) -> BaseModel:
        """The model's input checked against the schema; `ToolError` names each bad field."""
        try:
            return self.input_model.model_validate(tool_input)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolError(f"invalid input for {self.name}: {problems}") from None

    def run(self, ctx: ToolContext, tool_input: dict[str, Any]) -> ToolOutput:
        arguments = self.validate(tool_input)
        values = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        return self.function(ctx, **values)


def tool(
    name: str, description: str, kind: ToolKind = "read"
) -> Callable[[Callable[..., ToolOutput]], Tool]:
    """Make a `Tool` of a function ``f(ctx, **fields) -> str | Content``; see the module
    docstring."""

    def wrap(function: Callable[..., ToolOutput]) -> Tool:
        hints = get_type_hints(function, include_extras=True)
        parameters = list(inspect.signature(function).parameters.values())[1:]
        fields: dict[str, Any] = {}
        for parameter in parameters:
            default = ... if parameter.default is inspect.Parameter.empty else parameter.default
            fields[parameter.name] = (hints[parameter.name], default)
        model = create_model(f"{name}Input", __base__=_Strict, **fields)
        return Tool(name, description, kind, model, function)

    return wrap


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each ``$ref`` to its ``$defs`` (an enum such as `PermissionMode`) written
    in place, as Claude Code's tool schemas spell them; the field's own description wins."""
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                target = dict(definitions[ref.removeprefix("#/$defs/")])
                target.pop("description", None)
                return inline({**target, **{k: v for k, v in node.items() if k != "$ref"}})
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    inlined: dict[str, Any] = inline(schema)
    return inlined


def _tidy(schema: Any) -> None:
    """Remove Pydantic's noise from a schema: ``title`` keys, and ``X | None = None`` spelt as
    ``anyOf [X, null]`` (an optional field is one the model may leave out)."""
    if isinstance(schema, dict):
        schema.pop("title", None)
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for prop in value.values():
                    _flatten_optional(prop)
                    _tidy(prop)
            else:
                _tidy(value)
    elif isinstance(schema, list):
        for item in schema:
            _tidy(item)


def _flatten_optional(prop: dict[str, Any]) -> None:
    options = prop.get("anyOf")
    if prop.get("default", 0) is None and isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            del prop["anyOf"], prop["default"]
            prop.update(kept[0])
