"""Splitting a shell command line into the simple commands it runs; matching one simple command
against a Bash permission rule's pattern (`command_matches`) and suggesting a pattern for it.

`split_command` is a conservative scanner, not a shell parser: it splits on control operators,
subshells and ``{ }`` groups, and finds the commands inside ``$(...)`` and backticks, but
wrappers (``sudo``, ``xargs``, ``env``...) are not seen through, so deny rules on commands are
a guard rail, not a sandbox.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PLAIN_WORD = re.compile(r"[\w./:@%+=,-]+")
_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "\n", "\r")


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


def command_matches(pattern: str, command: str) -> bool:
    """Whether one simple command matches a Bash rule's pattern: ``prefix:*`` (the prefix, alone
    or with arguments), a pattern with ``*`` wildcards, or an exact command. Runs of whitespace
    count as one space."""
    command, pattern = _squash(command), _squash(pattern)
    if pattern.endswith(":*"):
        prefix = pattern[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" in pattern:
        if pattern.endswith(" *") and pattern.count("*") == 1 and command == pattern[:-2]:
            return True
        regex = ".*".join(re.escape(part) for part in pattern.split("*"))
        return re.fullmatch(regex, command, re.DOTALL) is not None
    return command == pattern


def suggested_pattern(command: str) -> str | None:
    """A Bash rule pattern for approving commands like this one: a prefix of its first two words,
    or the exact command if they are not plain words (a ``*`` in the command would be a
    wildcard, so such commands get none)."""
    words = command.split()
    if not words or "*" in command:
        return None
    if all(_PLAIN_WORD.fullmatch(word) for word in words[:2]):
        return " ".join(words[:2]) + ":*"
    return " ".join(words)


def _squash(text: str) -> str:
    return " ".join(text.split())
