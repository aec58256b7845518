"""What an agent knows before its first turn besides its definition: the CLAUDE.md files of
its project and user (Claude Code's memory files), its own agent memory, and its skills (the
catalogue, and the bodies its definition preloads: `teammate.config.skills`).

CLAUDE.md files, lowest precedence first (a later one is more specific and may override): the
user's ``$CLAUDE_CONFIG_DIR/CLAUDE.md``, then from the filesystem root down to the working
directory each directory's ``CLAUDE.md``, ``.claude/CLAUDE.md`` and ``CLAUDE.local.md``. A line
``@path`` (or an ``@path`` word in running text, outside code) imports another file: relative
to the file that names it, ``~/`` from the home directory; imports nest up to `MAX_IMPORT_DEPTH`
deep and a file is read once. A file that cannot be read is skipped (said in the text), never
fatal. Explore and Plan do not read CLAUDE.md (`AgentDefinition.loads_claude_md`).

Agent memory (a definition's ``memory: user|project|local``) is a directory of the agent's own:
``$CLAUDE_CONFIG_DIR/agent-memory/<agent>/``, ``<project>/.claude/agent-memory/<agent>/`` or
``<project>/.claude/agent-memory-local/<agent>/``. The first `MEMORY_LINES` lines of its
``MEMORY.md`` go into the system prompt, and the agent may Read, Write and Edit in it without
asking (`memory_rules`), so what it learns in one run is there in the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from protocols.fs import safefs
from protocols.names import checked_component
from teammate.config.definitions import AgentDefinition
from teammate.config.skills import Skill, catalogue_text, preloaded_text
from teammate.permissions.policy import Rule

MAX_IMPORT_DEPTH = 5
MEMORY_LINES = 200
MEMORY_DIRS = {
    "user": "agent-memory",
    "project": ".claude/agent-memory",
    "local": ".claude/agent-memory-local",
}
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{1,2}/|/)?[\w./~+-]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


@dataclass(frozen=True)
class ContextFile:
    path: Path
    text: str


def claude_md_files(cwd: Path, config_root: Path) -> list[Path]:
    """The CLAUDE.md files an agent working in `cwd` reads, lowest precedence first."""
    found = [config_root / "CLAUDE.md"]
    here = cwd.resolve()
    for directory in [*reversed(here.parents), here]:
        found += [
            directory / "CLAUDE.md",
            directory / ".claude" / "CLAUDE.md",
            directory / "CLAUDE.local.md",
        ]
    seen: set[Path] = set()
    result = []
    for path in found:
        if path.is_file() and path.resolve() not in seen:
            seen.add(path.resolve())
            result.append(path)
    return result


def read_with_imports(path: Path, seen: set[Path] | None = None, depth: int = 0) -> str:
    """`path`'s text with each ``@path`` import followed by the imported file's text."""
    seen = seen if seen is not None else set()
    seen.add(path.resolve())
    try:
        text = safefs.read_regular(path).decode("utf-8", errors="replace")
    except OSError as exc:
        return f"[{path} could not be read: {exc.strerror or exc}]"
    imported = []
    for target in imports_of(text):
        found = _resolve(target, path.parent)
        if found is None or found.resolve() in seen or not found.is_file():
            continue
        if depth >= MAX_IMPORT_DEPTH:
            imported.append(f"[{found}: not imported, more than {MAX_IMPORT_DEPTH} imports deep]")
            continue
        body = read_with_imports(found, seen, depth + 1)
        imported.append(f"Contents of {found} (imported by {path.name}):\n\n{body}")
    return "\n\n".join([text.rstrip("\n"), *imported])


def imports_of(text: str) -> list[str]:
    """The ``@path`` imports of a CLAUDE.md text, in order, leaving out code blocks and spans
    (where ``@`` is code, such as a decorator or an npm scope)."""
    targets: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _IMPORT.finditer(_CODE_SPAN.sub("", line)):
            target = match.group(1).rstrip(".,;:)")
            if target and target not in targets:
                targets.append(target)
    return targets


def _resolve(target: str, base: Path) -> Path | None:
    try:
        path = Path(target).expanduser()
    except RuntimeError:  # no home directory
        return None
    return path if path.is_absolute() else base / path


def claude_md_text(cwd: Path, config_root: Path) -> str:
    """The CLAUDE.md files as one section of a system prompt ('' when there are none)."""
    files = claude_md_files(cwd, config_root)
    if not files:
        return ""
    parts = [
        "# Project and user instructions (CLAUDE.md)",
        "These instructions come from CLAUDE.md files; follow them. Later files are more "
        "specific than earlier ones and win where they differ.",
    ]
    for path in files:
        parts.append(f"Contents of {path}:\n\n{read_with_imports(path)}")
    return "\n\n".join(parts)


def memory_dir(scope: str, agent: str, cwd: Path, config_root: Path) -> Path:
    """The memory directory of agent type `agent` for `scope` (user, project or local)."""
    name = checked_component(agent, "agent name")
    base = config_root if scope == "user" else cwd
    return base / MEMORY_DIRS[scope] / name


def memory_text(directory: Path) -> str:
    """The agent-memory section of a system prompt: where it is, and ``MEMORY.md``'s first
    `MEMORY_LINES` lines."""
    index = directory / "MEMORY.md"
    try:
        lines = safefs.read_regular(index).decode("utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    shown = "\n".join(lines[:MEMORY_LINES])
    more = (
        f"\n[{len(lines) - MEMORY_LINES} more lines in {index}]"
        if len(lines) > MEMORY_LINES
        else ""
    )
    body = f"Its MEMORY.md holds:\n\n{shown}{more}" if lines else "It is empty so far."
    return (
        "# Your memory\n"
        f"You have a memory directory of your own, kept between runs: {directory}\n"
        f"Keep what you learn that will help next time in {index} (an index of short notes, "
        "with longer notes in other files beside it); Read, Write and Edit work there without "
        f"asking. {body}"
    )


def memory_rules(directory: Path) -> list[Rule]:
    """Allow rules for the agent's own memory directory (``//`` is the filesystem root)."""
    pattern = f"/{directory.resolve()}/**"
    return [Rule(tool, pattern) for tool in ("Read", "Edit")]  # Edit covers Write


@dataclass(frozen=True)
class AgentContext:
    """What an agent of one definition gets besides its own prompt: text for the end of its
    system prompt, and the allow rules of its memory directory."""

    text: str
    rules: tuple[Rule, ...] = ()


def agent_context(
    agent: AgentDefinition,
    cwd: Path,
    config_root: Path,
    skills: dict[str, Skill] | None = None,
    catalogue: bool = False,
) -> AgentContext:
    """CLAUDE.md (unless the definition says no), the agent's memory (if it has one), the
    skills catalogue (with `catalogue`: the agent has the Skill tool) and the skills its
    definition preloads."""
    parts = [claude_md_text(cwd, config_root)] if agent.loads_claude_md else []
    rules: tuple[Rule, ...] = ()
    if agent.memory in MEMORY_DIRS:
        directory = memory_dir(agent.memory, agent.name, cwd, config_root)
        parts.append(memory_text(directory))
        rules = tuple(memory_rules(directory))
    if skills and catalogue:
        parts.append(catalogue_text(skills))
    if agent.skills:
        parts.append(preloaded_text(agent.skills, skills or {}))
    return AgentContext("\n\n".join(p for p in parts if p), rules)
