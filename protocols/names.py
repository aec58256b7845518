"""Name rules for teams and agents.

`swarm` only *creates* names matching ``^[a-z0-9][a-z0-9-]{0,63}$``: lowercase ASCII letters,
digits and hyphens, starting with a letter or digit, at most 64 characters. That keeps every name
safe as a path component, a tmux title and a shell word, and keeps `@` free for agent ids
(``name@team``). Existing teams created by Claude Code with other names can still be *read*:
reading goes through `checked_component`, which only refuses what could escape the directory.
"""

from __future__ import annotations

import re

from protocols.errors import InvalidName

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
NAME_RULE = (
    "names must match ^[a-z0-9][a-z0-9-]{0,63}$: 1 to 64 characters, lowercase ASCII letters, "
    "digits and '-', starting with a letter or digit"
)
_NAME_RE = re.compile(NAME_PATTERN)
LEAD_NAME = "team-lead"


def validate_name(name: object, kind: str = "name") -> str:
    """Return `name` if a new team or agent may be called that, else raise `InvalidName`.

    >>> validate_name("alice", "agent")
    'alice'
    """
    if not isinstance(name, str):
        raise InvalidName(f"{kind} must be a string, got {type(name).__name__}; {NAME_RULE}")
    if _NAME_RE.fullmatch(name):
        return name
    if name == "":
        why = "it is empty"
    elif len(name) > 64:
        why = f"it is {len(name)} characters long"
    elif "@" in name:
        why = "'@' separates name and team in agent ids"
    elif "/" in name or "\\" in name or ".." in name:
        why = "it could name another directory"
    elif not name.isascii():
        why = "it contains non-ASCII characters"
    elif name != name.lower():
        why = "it contains uppercase letters"
    else:
        why = "it contains characters other than a-z, 0-9 and '-', or starts with '-'"
    raise InvalidName(f"invalid {kind} {name!r}: {why}; {NAME_RULE}")


def checked_component(name: str, kind: str = "name") -> str:
    """Return `name` if it is safe as one path component (for reading existing teams)."""
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
    ):
        raise InvalidName(f"invalid {kind} {name!r}: not a single path component")
    return name


def did_you_mean(name: str, choices: list[str]) -> str:
    """``"; did you mean 'alice'?"`` for a name close to one of `choices`; else ""."""
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def agent_id(name: str, team: str) -> str:
    """The agent id Claude Code uses: ``<name>@<team>``."""
    return f"{name}@{team}"


def unknown_member_text(name: str, team: str, members: list[str]) -> str:
    """The error for a name that is not a member of `team`: the members, and a near miss."""
    return (
        f"no member named {name!r} in team {team!r}{did_you_mean(name, members)}; "
        f"members are: {', '.join(members)}"
    )
