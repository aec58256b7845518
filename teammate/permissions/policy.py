"""Claude Code's permission model for one teammate's tool calls: modes and allow/deny/ask rules.

Rules use Claude Code's syntax (see `parse_rule`): ``Bash`` (the whole tool), ``Bash(npm
test:*)`` (a command prefix), ``Bash(git status)`` (an exact command; ``*`` is a wildcard),
``Edit(src/**)`` / ``Read(./docs/*.md)`` (gitignore-style paths: ``//`` is the filesystem root,
``~/`` the home directory, ``/`` and ``./`` the project root (cwd), a bare name matches at any
depth), ``WebFetch(domain:example.com)`` (`teammate.permissions.domain_rules`: that host only;
``*.example.com`` the hosts below it; ``*`` every host). ``Edit`` rules cover every file-editing
tool, ``Read`` rules every file-reading one (Glob, Grep: their ``path``).

`PermissionPolicy.decide` checks, in order: deny rules (they win in every mode), the mode
(bypassPermissions allows; plan allows only read and team tools, and asks about web tools as
the other modes do), ask rules, allow rules (ask before allow, as Claude Code evaluates them),
then the tool's kind and the mode's default.
A compound Bash command is split into its simple commands
(`teammate.permissions.command_split`, which also matches one against a Bash rule): it is
allowed only if every one is allowed, denied or asked about if any one matches a deny or ask
rule. `teammate.permissions.path_rules` matches paths.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from protocols.values import PermissionMode
from teammate.permissions.command_split import command_matches, split_command, suggested_pattern
from teammate.permissions.domain_rules import (
    DOMAIN_PREFIX,
    check_domain_rule,
    domain_matches,
    url_host,
)
from teammate.permissions.path_rules import inside, path_matches, target_path

if TYPE_CHECKING:  # the tools (and their pydantic models) are not needed to read rules
    from teammate.tools.base import ToolKind

log = logging.getLogger(__name__)

Behavior = Literal["allow", "deny", "ask"]
BEHAVIORS: tuple[Behavior, ...] = ("allow", "deny", "ask")
KINDS = ("read", "edit", "execute", "team", "web")
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "LSP"})
PLAN_MODE_DENIAL = (
    "plan mode: only read-only tools until the plan is approved "
    "(use ExitPlanMode to ask for approval)"
)
_TOOL_NAME = re.compile(r"[A-Za-z_][\w-]*")
_TOOL_RULE_TEXT = re.compile(r"[A-Z][\w-]*\(.*\)", re.DOTALL)  # Tool(content), not a command
_MCP_NAME = re.compile(r"mcp__[\w-]+")  # an MCP server or tool: a rule, not a command
_RULE = re.compile(r"(?P<tool>[^()\s]+)(?:\((?P<content>.*)\))?", re.DOTALL)


@dataclass(frozen=True)
class Decision:
    behavior: Behavior
    reason: str
    by_plan_mode: bool = False  # denied only because plan mode allows no such tool yet
    by_mode: bool = False  # asked only because the mode says so (no rule): `auto` may judge it


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
        if self.tool_name == "WebFetch" and self.content is not None:
            check_domain_rule(self.content)

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
        return self.content is None or command_matches(self.content, command)

    def matches(self, tool_name: str, tool_input: Mapping[str, Any], cwd: Path) -> bool:
        """Whether this rule matches a call (a compound Bash command: if any part matches)."""
        if not self.covers(tool_name):
            return False
        if self.content is None:
            return True
        if tool_name == "Bash":
            return any(map(self.match_command, split_command(_str(tool_input, "command"))))
        if tool_name in EDIT_TOOLS or tool_name in READ_TOOLS:
            target = target_path(tool_name, tool_input, cwd)
            return target is not None and path_matches(self.content, target, cwd)
        if tool_name == "WebFetch":
            host = url_host(_str(tool_input, "url"))
            return host is not None and domain_matches(self.content, host)
        log.debug("rule %s has content swarm cannot match against %s", self, tool_name)
        return False


def rule_or_command_pattern(text: str) -> Rule:
    """A rule as written (``Bash(make deploy)``, ``Edit(src/**)``), or a bare shell command
    pattern as a Bash rule (``rm -r*``, ``git push:*``; ``*`` alone: every command; an MCP
    name such as ``mcp__git`` is a rule for that server or tool): what
    ``--ask`` takes. `ValueError` names what is wrong."""
    text = text.strip() if isinstance(text, str) else text
    if isinstance(text, str) and (_TOOL_RULE_TEXT.fullmatch(text) or _MCP_NAME.fullmatch(text)):
        return parse_rule(text)
    if not isinstance(text, str) or not text:
        raise ValueError(
            "empty permission rule: give a rule such as Bash(make deploy) or a "
            "command pattern such as 'git push*'"
        )
    if text == "--":  # a command line's end of options: it cannot travel as an --ask value
        raise ValueError("'--' is not a command pattern; give one such as 'git push*'")
    return Rule("Bash", text)


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
        self.confined = False  # file tools stay inside cwd (a worktree) unless allowed
        self.mode = mode
        self.cwd = Path(cwd).expanduser().absolute()
        self._rules: dict[str, list[Rule]] = {behavior: [] for behavior in BEHAVIORS}
        for behavior, rules in (("allow", allow), ("deny", deny), ("ask", ask)):
            self.add_rules(rules, behavior)
        self._granted: list[Rule] = []  # allowed only until `end_grants`

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in PermissionMode.names():
            raise ValueError(
                f"unknown permission mode {mode!r}; one of {', '.join(PermissionMode.names())}"
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

    def grant(self, rules: Iterable[Rule]) -> None:
        """Allow `rules` until `end_grants` (a loaded skill's allowed-tools, while it is
        active); deny rules still win, as with any allow rule."""
        for rule in rules:
            if rule not in self._rules["allow"]:
                self._rules["allow"].append(rule)
                self._granted.append(rule)

    def end_grants(self) -> None:
        """Take back what `grant` allowed (the agent's piece of work has ended)."""
        self._rules["allow"] = [r for r in self._rules["allow"] if r not in self._granted]
        self._granted = []

    def decide(
        self, tool_name: str, kind: ToolKind | str, tool_input: Mapping[str, Any]
    ) -> Decision:
        """Allow, deny or ask for one call of `tool_name` (of the given kind) with `tool_input`."""
        if kind not in KINDS:
            raise ValueError(f"unknown tool kind {kind!r}; one of {', '.join(KINDS)}")
        tool_input = tool_input or {}
        if hits := self._find("deny", tool_name, tool_input):
            return Decision("deny", f"denied by the deny {_named(hits)}")
        if self.confined and kind in ("read", "edit"):
            target = target_path(tool_name, tool_input, self.cwd)
            inside_cwd = target is not None and inside(target, self.cwd.resolve())
            if not inside_cwd and not self._find("allow", tool_name, tool_input, every=True):
                return Decision(
                    "deny",
                    f"{target or 'that path'} is outside this teammate's worktree {self.cwd}; "
                    "only an allow rule for it lets a file tool go there",
                )
        if self.mode == "bypassPermissions":
            return Decision("allow", "bypassPermissions mode allows every tool no rule denies")
        if self.mode == "plan":
            if kind in ("read", "team"):
                return Decision("allow", f"plan mode allows {kind} tools")
            if kind != "web":  # a web tool changes nothing here: it asks, as in other modes
                return Decision("deny", PLAN_MODE_DENIAL, by_plan_mode=True)
        if hits := self._find("ask", tool_name, tool_input):
            if self.mode == PermissionMode.DONT_ASK:
                return Decision(
                    "deny", f"dontAsk mode: the ask {_named(hits)} would need approval, so denied"
                )
            return Decision("ask", f"the ask {_named(hits)} requires approval")
        if hits := self._find("allow", tool_name, tool_input, every=True):
            return Decision("allow", f"allowed by the allow {_named(hits)}")
        if kind in ("read", "team"):
            return Decision("allow", f"{kind} tools need no approval")
        outside = ""
        if self.mode == "acceptEdits" and kind == "edit":
            target = target_path(tool_name, tool_input, self.cwd)
            if target is not None and inside(target, self.cwd.resolve()):
                return Decision(
                    "allow", "acceptEdits mode allows edits inside the working directory"
                )
            where = f"{target} is outside the working directory" if target else "no file path"
            outside = f" ({where})"
        if self.mode == "dontAsk":
            return Decision(
                "deny", f"dontAsk mode: {tool_name} would need approval, so it is denied"
            )
        return Decision(
            "ask", f"{tool_name} needs approval in {self.mode} mode{outside}", by_mode=True
        )

    def suggestions(self, tool_name: str, tool_input: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Claude Code's ``permission_suggestions`` for approving this kind of call "always"."""
        if tool_name in EDIT_TOOLS:
            return [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
        if tool_name in ("WebFetch", "WebSearch"):
            return _web_suggestions(tool_name, tool_input)
        if tool_name != "Bash":
            return []
        allow = [rule for rule in self._rules["allow"] if rule.covers("Bash")]
        rules: list[Rule] = []
        for command in split_command(_str(tool_input, "command")):
            if any(rule.match_command(command) for rule in allow):
                continue
            content = suggested_pattern(command)
            rule = None if content is None else Rule("Bash", content)
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
                if mode not in PermissionMode.names():
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


def _web_suggestions(tool_name: str, tool_input: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Approving a web tool "always": WebFetch for the URL's host, WebSearch as a whole."""
    rule = Rule("WebSearch")
    if tool_name == "WebFetch":
        host = url_host(_str(tool_input, "url"))
        if host is None:
            return []
        rule = Rule("WebFetch", f"{DOMAIN_PREFIX}{host}")
    values = [rule.to_value()]
    return [{"type": "addRules", "rules": values, "behavior": "allow", "destination": "session"}]


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
