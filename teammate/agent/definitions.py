"""Claude Code agent definitions (subagent types): the built-ins, and Markdown files on disk.

An agent file is Markdown with YAML frontmatter between ``---`` lines at the very top; the body
is the agent's system prompt. Frontmatter keys are Claude Code's: ``name``, ``description``,
``tools``, ``disallowedTools``, ``model``, ``permissionMode``, ``maxTurns``, ``color``,
``isolation``, ``initialPrompt``. Keys Claude Code knows that swarm does not use yet
(``background``, ``memory``, ``mcpServers``, ``hooks``, ``skills``, ...) and keys nobody knows
are reported with a warning naming file, line and key, never dropped silently. Every problem
with a file raises `AgentDefinitionError` as ``<path>:<line>: <problem>``.

Lookup order (later wins): the built-ins, the user's ``<config root>/agents/*.md``, the
project's ``<project>/.claude/agents/*.md``, then definitions given as JSON on the command line
(``--agents '{"name": {"description", "prompt", "tools", ...}}'``, Claude Code's flag): `swarm
spawn` resolves a member's definition where it is started and passes it this way to a teammate
that works in a git worktree, where an uncommitted project file would be missing.
Lookup is strict: every ``*.md`` file in the searched directories is parsed, and the first
malformed one raises, whichever name was asked for (a broken agent file is reported at once
rather than when someone finally uses it).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from protocols.errors import Error
from protocols.paths import config_root
from protocols.values import PermissionMode

log = logging.getLogger(__name__)

BUILT_IN = "built-in"
ISOLATION_MODES = ("worktree",)
KNOWN_KEYS = frozenset(
    {
        "name",
        "description",
        "tools",
        "disallowedTools",
        "model",
        "permissionMode",
        "maxTurns",
        "color",
        "isolation",
        "initialPrompt",
    }
)
NOT_YET_KEYS = frozenset(
    {
        "background",
        "memory",
        "mcpServers",
        "requiredMcpServers",
        "hooks",
        "skills",
        "effort",
    }
)
READ_ONLY_DISALLOWED = ("Write", "Edit", "NotebookEdit", "Agent")


class AgentDefinitionError(Error):
    """A malformed agent file (message ``<path>:<line>: <problem>``) or an unknown agent type."""


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    system_prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None  # None: the lead's model ("inherit")
    permission_mode: str | None = None
    max_turns: int | None = None
    color: str | None = None
    isolation: str | None = None
    initial_prompt: str | None = None
    source: str = BUILT_IN  # "built-in", or the file's path

    def allows(self, tool_name: str) -> bool:
        """Whether this agent may use `tool_name`: listed in `tools` (if given), not disallowed."""
        if self.tools is not None and tool_name not in self.tools:
            return False
        return tool_name not in self.disallowed_tools


BUILT_INS: tuple[AgentDefinition, ...] = (
    AgentDefinition(
        name="general-purpose",
        description="General-purpose agent for researching questions, searching code and "
        "carrying out multi-step coding tasks.",
        system_prompt=(
            "You are a capable software engineer working in the user's repository.\n"
            "Understand the code before changing it, make focused changes that follow the "
            "project's conventions, and check your work (run the tests when there are some).\n"
            "When you are done, report briefly what you did and anything left open."
        ),
    ),
    AgentDefinition(
        name="Explore",
        description="Fast read-only agent for finding files, searching code and answering "
        "questions about a codebase.",
        system_prompt=(
            "You explore codebases quickly and report what you find.\n"
            "You are read-only: never create, edit or delete files, and run no commands that "
            "change anything.\n"
            "Search broadly first (file names, then contents), read only what you need, and "
            "answer with concrete file paths and line numbers."
        ),
        disallowed_tools=READ_ONLY_DISALLOWED,
    ),
    AgentDefinition(
        name="Plan",
        description="Read-only software architect that designs implementation plans.",
        system_prompt=(
            "You are a software architect. Study the relevant code and design a plan to "
            "implement what was asked.\n"
            "You are read-only: never create, edit or delete files.\n"
            "Give a step-by-step plan naming the files to change, the approach and its "
            "trade-offs, the risks, and how to test the result."
        ),
        disallowed_tools=READ_ONLY_DISALLOWED,
    ),
)


def user_agents_dir() -> Path:
    return config_root() / "agents"


def project_agents_dir(project_dir: Path | None = None) -> Path:
    return (Path.cwd() if project_dir is None else Path(project_dir)) / ".claude" / "agents"


def parse_agent_file(path: Path) -> AgentDefinition:
    """The definition in one agent file; raises `AgentDefinitionError` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentDefinitionError(f"{path}:1: cannot read agent file: {exc}") from None
    return parse_agent_text(text, path)


def parse_agent_text(text: str, path: Path) -> AgentDefinition:
    """The definition in `text`, the contents of the agent file `path` (used in messages)."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise AgentDefinitionError(
            f"{path}:1: no YAML frontmatter: an agent file starts with a '---' line"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise AgentDefinitionError(f"{path}:1: unterminated frontmatter: no closing '---' line")
    front_lines = lines[1:end]
    try:
        data = yaml.safe_load("\n".join(front_lines))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2  # frontmatter starts on line 2
        problem = getattr(exc, "problem", None) or str(exc)
        raise AgentDefinitionError(
            f"{path}:{line}: invalid YAML in frontmatter: {problem}"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AgentDefinitionError(
            f"{path}:2: frontmatter must be a mapping of keys to values, got {type(data).__name__}"
        )
    fields = _Fields(data, front_lines, path)
    for key in data:
        if key in NOT_YET_KEYS:
            log.warning(
                "%s:%d: %r is a Claude Code key that swarm does not support yet; it is ignored",
                path,
                fields.line_of(str(key)),
                key,
            )
        elif key not in KNOWN_KEYS:
            log.warning(
                "%s:%d: unknown key %r in the agent definition is ignored (known keys: %s)",
                path,
                fields.line_of(str(key)),
                key,
                ", ".join(sorted(KNOWN_KEYS)),
            )
    max_turns = data.get("maxTurns")
    if max_turns is not None and (
        isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
    ):
        fields.fail("maxTurns", f"maxTurns must be a positive integer, got {max_turns!r}")
    mode = fields.string("permissionMode")
    if mode is not None and mode not in PermissionMode.names():
        fields.fail(
            "permissionMode",
            f"permissionMode must be one of {', '.join(PermissionMode.names())}, got {mode!r}",
        )
    isolation = fields.string("isolation")
    if isolation is not None and isolation not in ISOLATION_MODES:
        fields.fail("isolation", f"isolation must be 'worktree', got {isolation!r}")
    model = fields.string("model")
    name = fields.string("name")
    if name is not None and not name.strip():
        fields.fail("name", "name must not be empty")
    tools = fields.tool_list("tools")
    return AgentDefinition(
        name=name.strip() if name is not None else path.stem,
        description=(fields.string("description") or "").strip(),
        system_prompt="\n".join(lines[end + 1 :]).strip(),
        tools=None if tools is None or "*" in tools else tools,
        disallowed_tools=fields.tool_list("disallowedTools") or (),
        model=None if model in (None, "inherit") else model,
        permission_mode=mode,
        max_turns=max_turns,
        color=fields.string("color"),
        isolation=isolation,
        initial_prompt=fields.string("initialPrompt"),
        source=str(path),
    )


class _Fields:
    """Typed access to frontmatter values; errors point at the line of the offending key."""

    def __init__(self, data: dict[Any, Any], front_lines: list[str], path: Path) -> None:
        self.data = data
        self.front_lines = front_lines
        self.path = path

    def line_of(self, key: str) -> int:
        pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*:""")
        for index, line in enumerate(self.front_lines):
            if pattern.match(line):
                return index + 2
        return 2

    def fail(self, key: str, problem: str) -> NoReturn:
        raise AgentDefinitionError(f"{self.path}:{self.line_of(key)}: {problem}")

    def string(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            self.fail(key, f"{key} must be a string, got {type(value).__name__} {value!r}")
        return value

    def tool_list(self, key: str) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            items = value.split(",")
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            items = value
        else:
            self.fail(
                key,
                f"{key} must be a comma-separated string or a list of strings, got {value!r}",
            )
        return tuple(item.strip() for item in items if item.strip())


def _search_dirs(project_dir: Path | None, user_dir: Path | None) -> list[Path]:
    """The directories searched, in increasing precedence (user, then project)."""
    user = user_agents_dir() if user_dir is None else Path(user_dir)
    return [user, project_agents_dir(project_dir)]


def _load_dir(directory: Path) -> dict[str, AgentDefinition]:
    found: dict[str, AgentDefinition] = {}
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.md")):
        if not path.is_file():
            continue
        agent = parse_agent_file(path)
        if agent.name in found:
            raise AgentDefinitionError(
                f"{path}:1: agent {agent.name!r} is already defined by {found[agent.name].source}"
            )
        found[agent.name] = agent
    return found


def available_agents(
    project_dir: Path | None = None, user_dir: Path | None = None
) -> dict[str, AgentDefinition]:
    """Every agent type by name: project files over user files over built-ins.

    Raises `AgentDefinitionError` for the first malformed file in the searched directories.
    """
    agents = {agent.name: agent for agent in BUILT_INS}
    for directory in _search_dirs(project_dir, user_dir):
        agents.update(_load_dir(directory))
    return dict(sorted(agents.items()))


def load_agent(
    name: str,
    project_dir: Path | None = None,
    user_dir: Path | None = None,
    flag: dict[str, AgentDefinition] | None = None,
) -> AgentDefinition:
    """The agent type `name` (exact, case-sensitive), looked up like `available_agents`, with
    the `flag` definitions (``--agents`` JSON) over all of them."""
    if flag and name in flag:
        return flag[name]
    agents = available_agents(project_dir, user_dir)
    if name in agents:
        return agents[name]
    searched = ", ".join([BUILT_IN, *(str(d) for d in _search_dirs(project_dir, user_dir))])
    raise AgentDefinitionError(
        f"unknown agent type {name!r}; available: {', '.join(agents)} (from {searched})"
    )


def to_flag_json(agent: AgentDefinition) -> str:
    """`agent` as Claude Code's ``--agents`` JSON (``{name: {description, prompt, ...}}``)."""
    value: dict[str, Any] = {"description": agent.description, "prompt": agent.system_prompt}
    optional = {
        "tools": list(agent.tools) if agent.tools is not None else None,
        "disallowedTools": list(agent.disallowed_tools) or None,
        "model": agent.model,
        "permissionMode": agent.permission_mode,
        "maxTurns": agent.max_turns,
        "color": agent.color,
        "isolation": agent.isolation,
        "initialPrompt": agent.initial_prompt,
    }
    value.update({k: v for k, v in optional.items() if v is not None})
    return json.dumps({agent.name: value}, ensure_ascii=False)


def from_flag_json(text: str) -> dict[str, AgentDefinition]:
    """The definitions in an ``--agents`` JSON object; `AgentDefinitionError` says what is
    wrong with it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AgentDefinitionError(f"--agents: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AgentDefinitionError("--agents must be a JSON object of agent name -> definition")
    found = {}
    for name, value in data.items():
        if not isinstance(value, dict):
            raise AgentDefinitionError(f"--agents: {name!r} must map to an object")
        front = {k: v for k, v in value.items() if k != "prompt"}
        prompt = value.get("prompt", "")
        if not isinstance(prompt, str):
            raise AgentDefinitionError(f"--agents: {name!r}: prompt must be a string")
        text_form = "---\n" + yaml.safe_dump({"name": name, **front}) + "---\n" + prompt
        found[name] = parse_agent_text(text_form, Path(f"--agents[{name}]"))
    return found
