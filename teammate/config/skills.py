"""Skills, in Claude Code's format: ``<project>/.claude/skills/<name>/SKILL.md`` and the user's
``$CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md`` (the project's win a name clash).

A skill is Markdown with YAML front matter (``name``, ``description``, ``when_to_use``,
``allowed-tools``, ``context: fork``, ``agent``, ``model``, ``disable-model-invocation``,
``user-invocable``, ``hooks``, ``paths``, ``argument-hint``); its body is the instructions.
Two levels, as in Claude Code: only the catalogue (name, description, when to use) is in the
system prompt (`catalogue_text`); the body is loaded on demand by the ``Skill`` tool
(`teammate.tools.skill`) and enters the conversation as that tool's result (`body_text`:
``$ARGUMENTS`` replaced by the call's ``args``). ``allowed-tools`` are allowed without asking
while the skill is active (until the agent's current piece of work ends); ``context: fork``
runs the skill in a sub-agent (of type ``agent``, else general-purpose) and returns only its
answer; a definition's ``skills:`` list puts those bodies in the agent's system prompt from the
start (`preloaded_text`). A file that cannot be read or parsed is skipped with a warning, as
Claude Code skips it: one bad skill never stops an agent. Claude Code runs the shell commands a
skill's text holds (``!`command` ``) as the skill loads, after its ``PreSkillShellCommand`` hooks
(2.1.332); swarm runs none: the text reaches the model as written, and those hooks never run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from teammate.config.definitions import AgentDefinitionError, front_matter
from teammate.permissions.policy import Rule, parse_rule

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    directory: Path
    when_to_use: str | None = None
    allowed_tools: tuple[Rule, ...] = ()
    context: str | None = None  # "fork": run in a sub-agent
    agent: str | None = None  # the sub-agent type for a fork skill
    model: str | None = None
    model_invocable: bool = True  # false: only a person's /name reaches it
    user_invocable: bool = True
    argument_hint: str | None = None
    hooks: dict[str, Any] | None = None


@dataclass
class SkillSet:
    """The skills one agent can load, and how a loaded skill's allowed tools are granted (to
    that agent's own permission policy)."""

    skills: dict[str, Skill] = field(default_factory=dict)
    grant: Callable[[list[Rule]], None] = lambda rules: None

    def for_policy(self, grant: Callable[[list[Rule]], None]) -> SkillSet:
        """The same skills, granting to another agent's policy (a sub-agent's)."""
        return SkillSet(self.skills, grant)


def skill_dirs(project_dir: Path, config_root: Path) -> list[Path]:
    """Where skills are looked for, lowest precedence first."""
    return [config_root / "skills", project_dir / ".claude" / "skills"]


def discover(project_dir: Path, config_root: Path) -> dict[str, Skill]:
    """Every usable skill, by name (the project's over the user's)."""
    found: dict[str, Skill] = {}
    for base in skill_dirs(project_dir, config_root):
        try:
            folders = sorted(p for p in base.iterdir() if (p / SKILL_FILE).is_file())
        except OSError:
            continue
        for folder in folders:
            skill = load_skill(folder / SKILL_FILE)
            if skill is not None:
                found[skill.name] = skill
    return found


def load_skill(path: Path) -> Skill | None:
    """The skill in `path`; None (with a warning saying why) when it cannot be used."""
    try:
        text = safefs.read_regular(path).decode("utf-8", errors="replace")
    except OSError as exc:
        log.warning("%s: skill skipped: %s", path, exc.strerror or exc)
        return None
    try:
        return parse_skill(text, path)
    except (AgentDefinitionError, ValueError) as exc:
        log.warning("skill skipped: %s", exc)
        return None


def parse_skill(text: str, path: Path) -> Skill:
    """A skill from its SKILL.md text; `ValueError` names the file and what is wrong. A file
    without front matter is a skill named after its folder, described by its first line."""
    if text.removeprefix("\ufeff").startswith("---"):
        data, _lines, body = front_matter(text, path)
    else:
        data, body = {}, text.strip()
    name = str(data.get("name") or path.parent.name)
    if not _NAME.match(name):
        raise ValueError(f"{path}: skill name {name!r} is not a name (letters, digits, -_.:)")
    first = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    description = _text(data, "description", path) or first or name
    return Skill(
        name=name,
        description=description,
        body=body,
        directory=path.parent,
        when_to_use=_text(data, "when_to_use", path),
        allowed_tools=tuple(_rules(data.get("allowed-tools"), path)),
        context=_choice(data, "context", ("fork",), path),
        agent=_text(data, "agent", path),
        model=_text(data, "model", path),
        model_invocable=not bool(data.get("disable-model-invocation", False)),
        user_invocable=bool(data.get("user-invocable", True)),
        argument_hint=_text(data, "argument-hint", path),
        hooks=data.get("hooks") if isinstance(data.get("hooks"), dict) else None,
    )


def _text(data: dict[Any, Any], key: str, path: Path) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str | int | float):
        raise ValueError(f"{path}: {key} must be text")
    return str(value).strip() or None


def _choice(data: dict[Any, Any], key: str, allowed: tuple[str, ...], path: Path) -> str | None:
    value = _text(data, key, path)
    if value is not None and value not in allowed:
        raise ValueError(f"{path}: {key} {value!r} is not one of {', '.join(allowed)}")
    return value


def _rules(value: Any, path: Path) -> Iterable[Rule]:
    """``allowed-tools``: a list, or one comma-separated text, of tools or rules."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(f"{path}: allowed-tools must be a list or a comma-separated text")
    rules = []
    for item in items:
        try:
            rules.append(parse_rule(str(item).strip()))
        except ValueError as exc:
            raise ValueError(f"{path}: allowed-tools: {exc}") from None
    return rules


def catalogue_text(skills: dict[str, Skill]) -> str:
    """The system prompt's list of the skills a model may load ('' when there are none)."""
    shown = [s for s in skills.values() if s.model_invocable]
    if not shown:
        return ""
    lines = [
        "# Skills",
        "Skills hold instructions for particular jobs. When a job fits one, load it with the "
        "Skill tool (skill: its name, args: what it should work on) before you start; its "
        "instructions come back as the tool's result. Available skills:",
    ]
    for skill in sorted(shown, key=lambda s: s.name):
        when = f" Use when: {skill.when_to_use}" if skill.when_to_use else ""
        lines.append(f"- {skill.name}: {skill.description}{when}")
    return "\n".join(lines)


def body_text(skill: Skill, args: str | None) -> str:
    """What loading `skill` gives the model: its base directory and its instructions, with
    ``$ARGUMENTS`` replaced by `args` (appended when the body has no placeholder)."""
    body = skill.body
    if "$ARGUMENTS" in body:
        body = body.replace("$ARGUMENTS", args or "")
    elif args:
        body = f"{body}\n\nARGUMENTS: {args}"
    return f"Base directory for this skill: {skill.directory}\n\n{body}"


def preloaded_text(names: Iterable[str], skills: dict[str, Skill]) -> str:
    """A definition's ``skills:``: those bodies for the system prompt (an unknown name is
    said, not fatal)."""
    parts = []
    for name in names:
        skill = skills.get(name)
        if skill is None:
            log.warning("preloaded skill %r not found; skills: %s", name, ", ".join(skills))
            continue
        parts.append(f"# Skill: {skill.name}\n{body_text(skill, None)}")
    return "\n\n".join(parts)
