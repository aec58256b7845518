"""No-progress detection: an agent that goes on for many model turns without changing a file,
sending or getting a message, or moving a task along may be lost, and every turn costs.
`StallGuard` counts the turns in a row without progress; at the `turns`-th
(``SWARM_STALL_TURNS``, `DEFAULT_TURNS` by default, 0 turns it off) the agent asks the lead
before it goes on, by the permission protocol, as the loop guard does (`teammate.agent.
loop_guard`): approved, it goes on and counts from zero; denied, its turn ends there and the
model reads the lead's reason when it is next woken.

A turn made progress when one of its calls changed something and succeeded (`CHANGING_TOOLS`:
Write, Edit, NotebookEdit, SendMessage, TaskCreate, TaskUpdate), when a message reached the
agent during it, or when a shell command changed the working tree: in a git repository, its
``git status`` and ``HEAD`` differ from the turn before; outside one, what a command did cannot
be seen, so a command that succeeded counts. A new piece of work (a prompt) starts from zero.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TURNS_VAR = "SWARM_STALL_TURNS"
DEFAULT_TURNS = 50
CHANGING_TOOLS = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "SendMessage", "TaskCreate", "TaskUpdate"}
)
SHELL_TOOLS = frozenset({"Bash"})
GIT_TIMEOUT_S = 10.0


def turns_from(environ: Mapping[str, str] | None = None) -> int:
    """How many turns in a row without progress make a stall (0: never); a value that is not
    a whole number leaves the default (the teammate must not die of a bad variable)."""
    text = (os.environ if environ is None else environ).get(TURNS_VAR, "").strip()
    return int(text) if text.isdigit() else DEFAULT_TURNS


class StallGuard:
    """The turns in a row without progress of one agent (module doc)."""

    def __init__(self, turns: int, cwd: Path) -> None:
        self.turns = turns
        self.cwd = cwd
        self.quiet = 0  # turns in a row without progress
        self._tree: str | None = None  # the working tree's fingerprint after the last look

    def started(self) -> None:
        """A new piece of work: it counts from zero, and from the working tree as it is now."""
        self.quiet = 0
        if self.turns > 0:
            self._tree = fingerprint(self.cwd)

    def turn(self, calls: Sequence[tuple[str, bool]], heard: bool) -> bool:
        """Count one turn: its calls (each tool's name and whether it failed) and whether a
        message reached the agent during it; True when this turn makes a stall to ask about."""
        if self.turns <= 0:
            return False
        if heard or self._progress(calls):
            self.quiet = 0
            return False
        self.quiet += 1
        return self.quiet >= self.turns

    def forgive(self) -> None:
        """The lead let it go on: it counts from zero again."""
        self.quiet = 0

    def _progress(self, calls: Sequence[tuple[str, bool]]) -> bool:
        if any(name in CHANGING_TOOLS and not failed for name, failed in calls):
            return True
        shell = [failed for name, failed in calls if name in SHELL_TOOLS]
        if not shell:
            return False
        tree = fingerprint(self.cwd)
        if tree is None:  # not a git repository (or git failed): a command that ran counts
            return not all(shell)
        changed, self._tree = tree != self._tree, tree
        return changed

    def question(self) -> str:
        return question(self.quiet)


def fingerprint(cwd: Path) -> str | None:
    """A digest of the git working tree at `cwd` (its status and ``HEAD``); None outside a git
    repository or when git does not answer."""
    digest = hashlib.sha256()
    for args in (["status", "--porcelain=v1", "-z"], ["rev-parse", "-q", "--verify", "HEAD"]):
        try:
            done = subprocess.run(
                ["git", "-C", str(cwd), *args],
                capture_output=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # a look never takes the index lock
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0 and args[0] == "status":
            return None
        digest.update(done.stdout)
    return digest.hexdigest()


def question(turns: int) -> str:
    """What the lead is asked."""
    return (
        f"no progress? {turns} model turns in a row changed no file, sent or got no message and "
        "moved no task. Approve to let it go on; deny (with a reason for it) to stop its turn"
    )


def calls_of(uses: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]]) -> list[
    tuple[str, bool]
]:  # fmt: skip
    """Each call of a turn as `StallGuard.turn` takes it: the tool's name, whether it failed."""
    return [
        (str(use.get("name", "")), bool(result.get("is_error")))
        for use, result in zip(uses, results, strict=False)
    ]
