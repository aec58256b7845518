"""Claude Code agent definitions (subagent types): the built-ins, and Markdown files on disk.

An agent file is Markdown with YAML frontmatter between ``---`` lines at the very top; the body
is the agent's system prompt. Every frontmatter key of Claude Code's is read, checked and kept
(``name``, ``description``, ``tools``, ``disallowedTools``, ``model``, ``permissionMode``,
``maxTurns``, ``background``, ``isolation``, ``memory``, ``mcpServers``, ``requiredMcpServers``,
``hooks``, ``skills``, ``initialPrompt``, ``effort``, ``color``). ``hooks`` apply while the agent
runs (`teammate.hooks`); ``mcpServers`` and ``requiredMcpServers`` are acted on by
`teammate.mcp`. Those swarm does not act on yet (`STORED_KEYS`) are stored and passed on, and
say so in a warning; a key nobody knows is a warning naming file, line and key, never dropped
silently. Every problem with a file raises `AgentDefinitionError` as ``<path>:<line>: <problem>``.

Lookup order (later wins): the built-ins, the user's ``<config root>/agents/*.md``, the
project's ``<project>/.claude/agents/*.md``, definitions given as JSON on the command line
(``--agents '{"name": {"description", "prompt", "tools", ...}}'``, Claude Code's flag), then the
``agents`` object of a settings file (`teammate.config.settings`), in the same JSON form. `swarm
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

from protocols.errors import Error
from protocols.fs import safefs
from protocols.paths import config_root
from protocols.values import PermissionMode
from teammate.permissions.policy import Rule, parse_rule

log = logging.getLogger(__name__)

BUILT_IN = "built-in"
ISOLATION_MODES = ("worktree",)
MEMORY_SCOPES = ("user", "project", "local")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")  # Claude Code 2.1.330's levels


# a definition's permissionMode: any mode (`bubble`: ask the parent's approver)
DEFINITION_MODES = PermissionMode.names()
ACTIVE_KEYS = frozenset(
    {
        "name",
        "description",
        "tools",
        "disallowedTools",
        "model",
        "permissionMode",
        "maxTurns",
        "background",
        "isolation",
        "initialPrompt",
        "effort",
        "color",
        "memory",  # teammate.agent.context
        "skills",  # teammate.config.skills: preloaded
        "hooks",  # run while the agent runs (teammate.hooks)
        "mcpServers",  # teammate.mcp: shared by name, or inline and owned by the agent
        "requiredMcpServers",
    }
)
# read, checked and kept, but not acted on yet (none, today)
STORED_KEYS: frozenset[str] = frozenset()
KNOWN_KEYS = ACTIVE_KEYS | STORED_KEYS
READ_ONLY_DISALLOWED = ("Write", "Edit", "NotebookEdit", "Agent", "ExitPlanMode")
VERDICT_LINE = re.compile(r"^VERDICT: (PASS|FAIL|PARTIAL)\s*$", re.MULTILINE)


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
    background: bool = False  # always runs as a background sub-agent
    effort: str | int | None = None  # low / medium / high, or a thinking budget in tokens
    memory: str | None = None  # user / project / local: its agent memory (agent.context)
    mcp_servers: tuple[Any, ...] = ()  # names or inline definitions (teammate.mcp)
    required_mcp_servers: tuple[str, ...] = ()
    hooks: dict[str, Any] | None = None  # its own hooks, in force while it runs
    skills: tuple[str, ...] = ()  # skills whose bodies it starts with (agent.skills)
    loads_claude_md: bool = True  # Explore and Plan do not read CLAUDE.md
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
        model="haiku",
        loads_claude_md=False,
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
        loads_claude_md=False,
    ),
    AgentDefinition(
        name="verification",
        description="Checks that work is really done: builds, runs the tests and probes the "
        "change, then gives a verdict (PASS, FAIL or PARTIAL). Runs in the background.",
        system_prompt=(
            "You verify work someone else says is finished. Do not trust the claim: check it.\n"
            "Build it, run the tests and try the changed behaviour yourself. You must not edit "
            "the project's files; scratch scripts go under the system's temporary directory.\n"
            "Report what you checked and what you found, with the commands you ran.\n"
            "End your answer with exactly one line of the form `VERDICT: PASS`, "
            "`VERDICT: FAIL` or `VERDICT: PARTIAL`."
        ),
        # the project is read-only to it; the temporary directory is not
        disallowed_tools=("Edit(./**)", "Write(./**)", "NotebookEdit", "Agent", "ExitPlanMode"),
        background=True,
    ),
)


def tool_rules(entries: tuple[str, ...] | None) -> tuple[set[str], list[Rule]]:
    """A definition's tool list as (bare tool names, rules with content): in ``tools``,
    ``Bash(npm test:*)`` makes Bash available and allows that use; in ``disallowedTools``, a
    bare name removes the tool and a rule denies that use."""
    bare: set[str] = set()
    rules: list[Rule] = []
    for entry in entries or ():
        rule = parse_rule(entry)
        if rule.content is None:
            bare.add(rule.tool_name)
        else:
            rules.append(rule)
    return bare, rules


def user_agents_dir() -> Path:
    return config_root() / "agents"


def project_agents_dir(project_dir: Path | None = None) -> Path:
    return (Path.cwd() if project_dir is None else Path(project_dir)) / ".claude" / "agents"


def parse_agent_file(path: Path) -> AgentDefinition:
    """The definition in one agent file; raises `AgentDefinitionError` naming file and line."""
    try:
        text = safefs.read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentDefinitionError(f"{path}:1: cannot read agent file: {exc}") from None
    return parse_agent_text(text, path)


def parse_agent_text(text: str, path: Path) -> AgentDefinition:
    """The definition in `text`, the contents of the agent file `path` (used in messages)."""
    data, front_lines, body = front_matter(text, path)
    fields = _Fields(data, front_lines, path)
    for key in data:
        if key in STORED_KEYS:
            log.warning(
                "%s:%d: %r is kept with the definition but swarm does not act on it yet",
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
    name = fields.string("name")
    if name is not None and not name.strip():
        fields.fail("name", "name must not be empty")
    tools = fields.tool_list("tools")
    model = fields.string("model")
    return AgentDefinition(
        name=name.strip() if name is not None else path.stem,
        description=(fields.string("description") or "").strip(),
        system_prompt=body,
        tools=None if tools is None or "*" in tools else tools,
        disallowed_tools=fields.tool_list("disallowedTools") or (),
        model=None if model in (None, "inherit") else model,
        permission_mode=fields.choice("permissionMode", DEFINITION_MODES),
        max_turns=fields.positive_int("maxTurns"),
        color=fields.string("color"),
        isolation=fields.choice("isolation", ISOLATION_MODES),
        initial_prompt=fields.string("initialPrompt"),
        background=fields.boolean("background"),
        effort=fields.effort("effort"),
        memory=fields.choice("memory", MEMORY_SCOPES),
        mcp_servers=fields.servers("mcpServers"),
        required_mcp_servers=fields.tool_list("requiredMcpServers") or (),
        hooks=fields.hooks("hooks"),
        skills=fields.tool_list("skills") or (),
        source=str(path),
    )


def front_matter(text: str, path: Path) -> tuple[dict[Any, Any], list[str], str]:
    """(the frontmatter's mapping, its lines, the body) of an agent file's text."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise AgentDefinitionError(
            f"{path}:1: no YAML frontmatter: an agent file starts with a '---' line"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise AgentDefinitionError(f"{path}:1: unterminated frontmatter: no closing '---' line")
    front_lines = lines[1:end]
    import yaml  # here: most commands read no agent file

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
    return data, front_lines, "\n".join(lines[end + 1 :]).strip()


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

    def choice(self, key: str, allowed: tuple[str, ...]) -> str | None:
        value = self.string(key)
        if value is not None and value not in allowed:
            self.fail(key, f"{key} must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def positive_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            self.fail(key, f"{key} must be a positive integer, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            self.fail(key, f"{key} must be true or false, got {value!r}")
        return value

    def effort(self, key: str) -> str | int | None:
        value = self.data.get(key)
        if value is None or value in EFFORT_LEVELS:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1024:
            return value
        self.fail(
            key,
            f"{key} must be one of {', '.join(EFFORT_LEVELS)} or a thinking budget of at least "
            f"1024 tokens, got {value!r}",
        )

    def mapping(self, key: str) -> dict[str, Any] | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            self.fail(key, f"{key} must be a mapping, got {type(value).__name__} {value!r}")
        return value

    def hooks(self, key: str) -> dict[str, Any] | None:
        """Claude Code's hooks object, checked as a settings file's is (a bad one is an error
        naming this file and line now, not when the agent runs)."""
        value = self.mapping(key)
        if value is not None:
            from teammate.config.hook_format import SettingsError, parse_hooks

            try:
                parse_hooks(value, key)
            except SettingsError as exc:
                self.fail(key, str(exc))
        return value

    def servers(self, key: str) -> tuple[Any, ...]:
        """MCP servers: each a configured server's name, or a mapping of one name to an inline
        server definition."""
        value = self.data.get(key)
        if value is None:
            return ()
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not (isinstance(item, str) or (isinstance(item, dict) and len(item) >= 1)):
                self.fail(
                    key,
                    f"{key} must list server names or {{name: definition}} mappings, got {item!r}",
                )
        return tuple(items)


def _search_dirs(project_dir: Path | None, user_dir: Path | None) -> list[Path]:
    """The directories searched, in increasing precedence (user, then project)."""
    user = user_agents_dir() if user_dir is None else Path(user_dir)
    return [user, project_agents_dir(project_dir)]


def _load_dir(
    directory: Path, broken: dict[str, AgentDefinitionError] | None = None
) -> dict[str, AgentDefinition]:
    """The definitions in `directory`. A malformed file raises, unless `broken` is given: then
    its error is kept there under the file's stem and the other files still count."""
    found: dict[str, AgentDefinition] = {}
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.md")):
        if not path.is_file():
            continue
        try:
            agent = parse_agent_file(path)
            if agent.name in found:
                raise AgentDefinitionError(
                    f"{path}:1: agent {agent.name!r} is already defined by "
                    f"{found[agent.name].source}"
                )
        except AgentDefinitionError as exc:
            if broken is None:
                raise
            broken[path.stem] = exc
            continue
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
    settings: dict[str, AgentDefinition] | None = None,
) -> AgentDefinition:
    """The agent type `name` (exact, case-sensitive), looked up like `available_agents`, with
    the `flag` definitions (``--agents`` JSON) over those, and a settings file's ``agents``
    over all of them. A malformed file elsewhere does not stop the lookup (as in Claude Code,
    where it is skipped); asking for the type a malformed file is named after raises its
    error, and an unknown type's error names the skipped files."""
    broken: dict[str, AgentDefinitionError] = {}
    files: dict[str, AgentDefinition] = {agent.name: agent for agent in BUILT_INS}
    for directory in _search_dirs(project_dir, user_dir):
        files.update(_load_dir(directory, broken))
    agents = {**files, **(flag or {}), **(settings or {})}
    if name in agents:
        return agents[name]
    if name in broken:
        raise broken[name]
    sources = [BUILT_IN, *(str(d) for d in _search_dirs(project_dir, user_dir))]
    sources += ["--agents"] if flag else []
    sources += ["settings agents"] if settings else []
    skipped = f"; skipped as malformed: {', '.join(sorted(broken))}" if broken else ""
    raise AgentDefinitionError(
        f"unknown agent type {name!r}; available: {', '.join(sorted(agents))} "
        f"(from {', '.join(sources)}){skipped}"
    )


def to_flag_json(agent: AgentDefinition) -> str:
    """`agent` as Claude Code's ``--agents`` JSON (``{name: {description, prompt, ...}}``),
    every field kept."""
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
        "background": agent.background or None,
        "effort": agent.effort,
        "memory": agent.memory,
        "mcpServers": list(agent.mcp_servers) or None,
        "requiredMcpServers": list(agent.required_mcp_servers) or None,
        "hooks": agent.hooks,
        "skills": list(agent.skills) or None,
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
    return from_json_agents(data, "--agents")


def from_json_agents(data: Any, where: str) -> dict[str, AgentDefinition]:
    """The definitions in `data`, a JSON object of name -> definition (``--agents``, or a
    settings file's ``agents``); `where` names the source in errors and warnings."""
    if not isinstance(data, dict):
        raise AgentDefinitionError(f"{where} must be a JSON object of agent name -> definition")
    found = {}
    for name, value in data.items():
        if not isinstance(value, dict):
            raise AgentDefinitionError(f"{where}: {name!r} must map to an object")
        front = {k: v for k, v in value.items() if k != "prompt"}
        prompt = value.get("prompt", "")
        if not isinstance(prompt, str):
            raise AgentDefinitionError(f"{where}: {name!r}: prompt must be a string")
        import yaml

        text_form = "---\n" + yaml.safe_dump({"name": name, **front}) + "---\n" + prompt
        found[name] = parse_agent_text(text_form, Path(f"{where}[{name}]"))
    return found
