"""Claude Code's permission model for one teammate's tool calls: modes and allow/deny/ask rules.

Rules use Claude Code's syntax (see `parse_rule`): ``Bash`` (the whole tool), ``Bash(npm
test:*)`` (a command prefix), ``Bash(git status)`` (an exact command; ``*`` is a wildcard),
``Edit(src/**)`` / ``Read(./docs/*.md)`` (gitignore-style paths: ``//`` is the filesystem root,
``~/`` the home directory, ``/`` and ``./`` the project root (cwd), a bare name matches at any
depth), ``WebFetch(domain:example.com)``. ``Edit`` rules cover every file-editing tool, ``Read``
rules every file-reading one (Glob, Grep: their ``path``).

`PermissionPolicy.decide` checks, in order: deny rules (they win in every mode), the mode
(bypassPermissions allows; plan allows only read and team tools), ask rules, allow rules (ask
before allow, as Claude Code evaluates them), then the tool's kind and the mode's default.
A compound Bash command is split into its simple commands (`split_command`): it is allowed
only if every one is allowed, denied or asked about if any one matches a deny or ask rule.
The split is a conservative scanner, not a shell parser: wrappers (``sudo``, ``xargs``,
``env``...) are not seen through, so deny rules on commands are a guard rail, not a sandbox.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from teammate.options import PERMISSION_MODES
from teammate.tools.base import ToolKind

log = logging.getLogger(__name__)

Behavior = Literal["allow", "deny", "ask"]
BEHAVIORS: tuple[Behavior, ...] = ("allow", "deny", "ask")
KINDS = ("read", "edit", "execute", "team")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
PLAN_MODE_DENIAL = (
    "plan mode: only read-only tools until the plan is approved "
    "(use ExitPlanMode to ask for approval)"
)
_TOOL_NAME = re.compile(r"[A-Za-z_][\w-]*")
_RULE = re.compile(r"(?P<tool>[^()\s]+)(?:\((?P<content>.*)\))?", re.DOTALL)
_PLAIN_WORD = re.compile(r"[\w./:@%+=,-]+")
_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "\n", "\r")


@dataclass(frozen=True)
class Decision:
    behavior: Behavior
    reason: str


@dataclass(frozen=True)
class Rule:
    """One permission rule: a tool, and optionally what of it (``None``: every use)."""

    tool_name: str
    content: str | None = None

    def __post_init__(self) -> None:
        if not _TOOL_NAME.fullmatch(self.tool_name):
            raise ValueError(f"invalid tool name {self.tool_name!r} in a permission rule")
        if self.content is not None and not self.content.strip():
            raise ValueError(f"empty rule content in {self.tool_name}(); write {self.tool_name}")
        if self.content is not None and self.content.strip() == "*":
            object.__setattr__(self, "content", None)
        elif self.content is not None and self.content.endswith(":*") and not self.content[:-2]:
            raise ValueError(f"empty command prefix in {self.tool_name}({self.content})")

    def __str__(self) -> str:
        return self.tool_name if self.content is None else f"{self.tool_name}({self.content})"

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> Rule:
        """A rule from its JSON shape ``{"toolName": "Bash", "ruleContent": "npm test:*"}``."""
        if not isinstance(value, Mapping):
            raise ValueError(f"a permission rule must be an object, got {value!r}")
        tool, content = value.get("toolName"), value.get("ruleContent")
        if not isinstance(tool, str):
            raise ValueError(f"a permission rule needs a string 'toolName', got {value!r}")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"'ruleContent' must be a string, got {content!r}")
        return cls(tool, content)

    def to_value(self) -> dict[str, str]:
        value = {"toolName": self.tool_name}
        if self.content is not None:
            value["ruleContent"] = self.content
        return value

    def covers(self, tool_name: str) -> bool:
        """Whether this rule is about `tool_name` at all (Edit/Read rules cover their family)."""
        if tool_name == self.tool_name:
            return True
        if self.tool_name == "Edit":
            return tool_name in EDIT_TOOLS
        if self.tool_name == "Read":
            return tool_name in READ_TOOLS
        server = self.tool_name.startswith("mcp__") and "__" not in self.tool_name[5:]
        return server and self.content is None and tool_name.startswith(self.tool_name + "__")

    def match_command(self, command: str) -> bool:
        """Whether this (Bash) rule matches one simple command."""
        if self.content is None:
            return True
        command, content = _squash(command), _squash(self.content)
        if content.endswith(":*"):
            prefix = content[:-2].rstrip()
            return command == prefix or command.startswith(prefix + " ")
        if "*" in content:
            if content.endswith(" *") and content.count("*") == 1 and command == content[:-2]:
                return True
            regex = ".*".join(re.escape(part) for part in content.split("*"))
            return re.fullmatch(regex, command, re.DOTALL) is not None
        return command == content

    def matches(self, tool_name: str, tool_input: Mapping[str, Any], cwd: Path) -> bool:
        """Whether this rule matches a call (a compound Bash command: if any part matches)."""
        if not self.covers(tool_name):
            return False
        if self.content is None:
            return True
        if tool_name == "Bash":
            return any(map(self.match_command, split_command(_str(tool_input, "command"))))
        if tool_name in EDIT_TOOLS or tool_name in READ_TOOLS:
            target = _target_path(tool_name, tool_input, cwd)
            return target is not None and _path_matches(self.content, target, cwd)
        if tool_name == "WebFetch" and self.content.startswith("domain:"):
            host = (urlparse(_str(tool_input, "url")).hostname or "").lower()
            domain = self.content.removeprefix("domain:").strip().lower()
            return host == domain or host.endswith("." + domain)
        log.debug("rule %s has content swarm cannot match against %s", self, tool_name)
        return False


def parse_rule(text: str) -> Rule:
    """A rule from Claude Code's syntax, ``Tool`` or ``Tool(content)``; `ValueError` if bad."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty permission rule")
    match = _RULE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"malformed permission rule {text!r}: expected Tool or Tool(content), "
            "e.g. Bash or Bash(npm test:*)"
        )
    return Rule(match["tool"], match["content"])


def split_command(command: str) -> list[str]:
    """The simple commands of a shell command line, for matching Bash rules.

    Splits on ``&&``, ``||``, ``;``, ``|``, ``&``, newlines, subshell parentheses and ``{ }``
    groups; the insides of ``$(...)`` and backticks (also within double quotes) are commands of
    their own, and stay part of the enclosing command's text too. Quoted text is not split.
    """
    parts: list[str] = []
    levels = [_Level()]

    def emit(text: str, own: bool = True) -> None:
        """Add `text` to the current command (if `own`) and to those enclosing substitutions."""
        if own:
            levels[-1].text.append(text)
        for inner, outer in zip(reversed(levels), reversed(levels[:-1]), strict=False):
            if not inner.substitution:
                break
            outer.text.append(text)

    def flush() -> None:
        text = "".join(levels[-1].text).strip()
        if text:
            parts.append(text)
        levels[-1].text.clear()

    i = 0
    while i < len(command):
        level, char = levels[-1], command[i]
        special = level.quote != "'" and (char == "\\" or command.startswith("$(", i))
        raw = command[i : i + 2] if special else char
        sep = next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if level.quote == "'" or (level.quote == '"' and char != "`" and raw != "$("):
            emit(raw)
            level.quote = None if char == level.quote else level.quote
        elif char == "\\":
            emit(raw)
        elif raw == "$(" or (char == "`" and level.closer != "`"):
            emit(raw)
            levels.append(_Level(closer=")" if raw == "$(" else "`", substitution=True))
        elif char == level.closer and len(levels) > 1:
            flush()
            levels.pop()
            if level.substitution:
                emit(char)
        elif char in "'\"":
            emit(char)
            level.quote = char
        elif char == "(":
            flush()
            levels.append(_Level(closer=")"))
        elif sep or char == ")" or _is_operator(command, i):
            raw = sep or char
            flush()
            emit(raw, own=False)
        else:
            emit(char)
        i += len(raw)
    while levels:
        flush()
        levels.pop()
    return parts


@dataclass
class _Level:
    """One nesting level of `split_command`: the top, a subshell, or a substitution."""

    closer: str | None = None
    substitution: bool = False
    quote: str | None = None
    text: list[str] = field(default_factory=list)


def _is_operator(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a lone ``&`` (not ``>&``/``&>``) or a ``{``/``}`` word."""
    before, after = text[i - 1 : i], text[i + 1 : i + 2]
    if text[i] == "&":
        return before not in ("<", ">") and after != ">"
    if text[i] in "{}":
        return (not before or before.isspace() or before in ";&|(") and (
            not after or after.isspace() or after in ";&|)"
        )
    return False


class PermissionPolicy:
    """The mode and rules of one teammate, and what they decide for each tool call."""

    def __init__(
        self,
        mode: str,
        cwd: Path,
        allow: Iterable[Rule] = (),
        deny: Iterable[Rule] = (),
        ask: Iterable[Rule] = (),
    ) -> None:
        self.mode = mode
        self.cwd = Path(cwd).expanduser().absolute()
        self._rules: dict[str, list[Rule]] = {behavior: [] for behavior in BEHAVIORS}
        for behavior, rules in (("allow", allow), ("deny", deny), ("ask", ask)):
            self.add_rules(rules, behavior)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in PERMISSION_MODES:
            raise ValueError(
                f"unknown permission mode {mode!r}; one of {', '.join(PERMISSION_MODES)}"
            )
        self._mode = mode

    def rules(self, behavior: str) -> tuple[Rule, ...]:
        return tuple(self._rules[_behavior(behavior)])

    def add_rules(self, rules: Iterable[Rule | str | Mapping[str, Any]], behavior: str) -> None:
        """Add rules (`Rule`, rule text, or ``{"toolName", "ruleContent"}``) to one list."""
        target = self._rules[_behavior(behavior)]
        for rule in map(_as_rule, list(rules)):
            if rule not in target:
                target.append(rule)

    def decide(
        self, tool_name: str, kind: ToolKind | str, tool_input: Mapping[str, Any]
    ) -> Decision:
        """Allow, deny or ask for one call of `tool_name` (of the given kind) with `tool_input`."""
        if kind not in KINDS:
            raise ValueError(f"unknown tool kind {kind!r}; one of {', '.join(KINDS)}")
        tool_input = tool_input or {}
        if hits := self._find("deny", tool_name, tool_input):
            return Decision("deny", f"denied by the deny {_named(hits)}")
        if self.mode == "bypassPermissions":
            return Decision("allow", "bypassPermissions mode allows every tool no rule denies")
        if self.mode == "plan":
            if kind in ("read", "team"):
                return Decision("allow", f"plan mode allows {kind} tools")
            return Decision("deny", PLAN_MODE_DENIAL)
        if hits := self._find("ask", tool_name, tool_input):
            return Decision("ask", f"the ask {_named(hits)} requires approval")
        if hits := self._find("allow", tool_name, tool_input, every=True):
            return Decision("allow", f"allowed by the allow {_named(hits)}")
        if kind in ("read", "team"):
            return Decision("allow", f"{kind} tools need no approval")
        outside = ""
        if self.mode == "acceptEdits" and kind == "edit":
            target = _target_path(tool_name, tool_input, self.cwd)
            if target is not None and _inside(target, self.cwd.resolve()):
                return Decision(
                    "allow", "acceptEdits mode allows edits inside the working directory"
                )
            where = f"{target} is outside the working directory" if target else "no file path"
            outside = f" ({where})"
        if self.mode == "dontAsk":
            return Decision(
                "deny", f"dontAsk mode: {tool_name} would need approval, so it is denied"
            )
        return Decision("ask", f"{tool_name} needs approval in {self.mode} mode{outside}")

    def suggestions(self, tool_name: str, tool_input: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Claude Code's ``permission_suggestions`` for approving this kind of call "always"."""
        if tool_name in EDIT_TOOLS:
            return [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
        if tool_name != "Bash":
            return []
        allow = [rule for rule in self._rules["allow"] if rule.covers("Bash")]
        rules: list[Rule] = []
        for command in split_command(_str(tool_input, "command")):
            if any(rule.match_command(command) for rule in allow):
                continue
            rule = _suggested_rule(command)
            if rule is not None and rule not in rules:
                rules.append(rule)
        if not rules:
            return []
        values = [rule.to_value() for rule in rules]
        return [
            {"type": "addRules", "rules": values, "behavior": "allow", "destination": "session"}
        ]

    def apply_updates(self, updates: Iterable[Mapping[str, Any]]) -> None:
        """Apply Claude Code permission updates (``addRules``, ``replaceRules``, ``removeRules``,
        ``setMode``); all are checked before any is applied; other types are ignored."""
        changes: list[tuple[str, str, list[Rule]]] = []
        for update in updates:
            if not isinstance(update, Mapping):
                raise ValueError(f"a permission update must be an object, got {update!r}")
            kind = update.get("type")
            if kind == "setMode":
                mode = update.get("mode")
                if mode not in PERMISSION_MODES:
                    raise ValueError(f"setMode: unknown permission mode {mode!r}")
                changes.append((kind, mode, []))
            elif kind in ("addRules", "replaceRules", "removeRules"):
                rules = update.get("rules")
                if not isinstance(rules, list):
                    raise ValueError(f"{kind}: 'rules' must be a list, got {rules!r}")
                behavior = _behavior(update.get("behavior"))
                changes.append((kind, behavior, [Rule.from_value(rule) for rule in rules]))
            else:
                log.warning("ignoring a permission update of type %r", kind)
        for kind, value, rules in changes:
            if kind == "setMode":
                self.mode = value
            elif kind == "removeRules":
                self._rules[value] = [rule for rule in self._rules[value] if rule not in rules]
            else:
                if kind == "replaceRules":
                    self._rules[value] = []
                self.add_rules(rules, value)

    def _find(
        self, behavior: str, tool_name: str, tool_input: Mapping[str, Any], every: bool = False
    ) -> list[Rule]:
        """The rules of `behavior` that match the call; with `every`, a compound Bash command
        matches only if each of its commands is matched by some rule."""
        rules = [rule for rule in self._rules[behavior] if rule.covers(tool_name)]
        whole = [rule for rule in rules if rule.content is None]
        if whole or not rules:
            return whole[:1]
        if tool_name != "Bash":
            return [rule for rule in rules if rule.matches(tool_name, tool_input, self.cwd)][:1]
        used: list[Rule] = []
        for command in split_command(_str(tool_input, "command")):
            hit = next((rule for rule in rules if rule.match_command(command)), None)
            if hit is None and every:
                return []
            if hit is not None and hit not in used:
                used.append(hit)
        return used


def _behavior(value: object) -> str:
    if value not in BEHAVIORS:
        raise ValueError(f"unknown rule behavior {value!r}; one of {', '.join(BEHAVIORS)}")
    return str(value)


def _as_rule(value: Rule | str | Mapping[str, Any]) -> Rule:
    if isinstance(value, Rule):
        return value
    return parse_rule(value) if isinstance(value, str) else Rule.from_value(value)


def _named(rules: list[Rule]) -> str:
    return ("rule " if len(rules) == 1 else "rules ") + ", ".join(map(str, rules))


def _str(tool_input: Mapping[str, Any], key: str) -> str:
    value = tool_input.get(key)
    return value if isinstance(value, str) else ""


def _squash(text: str) -> str:
    return " ".join(text.split())


def _suggested_rule(command: str) -> Rule | None:
    """A prefix rule of the command's first two words, or the exact command if they are not
    plain words (a ``*`` in the command would be a wildcard, so such commands get none)."""
    words = command.split()
    if not words or "*" in command:
        return None
    if all(_PLAIN_WORD.fullmatch(word) for word in words[:2]):
        return Rule("Bash", " ".join(words[:2]) + ":*")
    return Rule("Bash", " ".join(words))


def _target_path(tool_name: str, tool_input: Mapping[str, Any], cwd: Path) -> Path | None:
    """The resolved file or directory a file tool works on (Glob/Grep default to cwd)."""
    raw = _str(tool_input, "file_path") or _str(tool_input, "notebook_path")
    raw = raw or _str(tool_input, "path") or ("." if tool_name in ("Glob", "Grep", "LS") else "")
    if not raw:
        return None
    try:
        path = Path(raw).expanduser()
        return (path if path.is_absolute() else cwd / path).resolve()
    except (OSError, RuntimeError, ValueError):  # a NUL byte, a symlink loop, no home directory
        return None


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _path_matches(content: str, target: Path, cwd: Path) -> bool:
    """Whether the gitignore-style pattern `content` matches `target` (or a directory above
    it: a matched directory covers everything in it)."""
    parts = _absolute_pattern(content, cwd).rstrip("/").split("/")
    literal = next((i for i, p in enumerate(parts) if re.search(r"[*?\[]", p)), len(parts))
    base = Path(os.path.normpath("/" + "/".join(parts[1:literal])))
    with contextlib.suppress(OSError, RuntimeError):  # a symlink loop: the path as written
        base = base.resolve()
    if not _inside(target, base):
        return False
    if literal == len(parts):
        return True
    regex = re.compile(_glob_regex("/".join(parts[literal:])), re.DOTALL)
    rel = target.relative_to(base).parts
    return any(regex.fullmatch("/".join(rel[:k])) for k in range(len(rel) + 1))


def _absolute_pattern(content: str, cwd: Path) -> str:
    if content.startswith("//"):
        return content[1:]
    if content.startswith("~/"):
        return os.path.expanduser("~") + content[1:]
    root = str(cwd).rstrip("/")
    if content.startswith("/"):
        # an absolute path already inside the project is taken as it is: Claude Code's own
        # team_permission_update rules look like Edit(/home/user/project/**)
        for prefix in {root, str(cwd.resolve()).rstrip("/")}:
            if prefix and (content == prefix or content.startswith(prefix + "/")):
                return content
        return root + content
    relative = content.removeprefix("./")
    if content == relative and "/" not in relative.rstrip("/"):
        relative = "**/" + relative  # gitignore: a bare name matches at any depth
    return f"{root}/{relative}"


def _glob_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] in "*?":
            out.append("[^/]*" if glob[i] == "*" else "[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end].replace("\\", "\\\\").replace("[", "\\[")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)
