"""Loop detection: an agent that makes the same tool call and gets the same result again and
again is stuck, and every call costs. `LoopGuard` remembers the last `WINDOW` calls of an agent
(each as a digest of the tool's name, its input, the result and whether it was an error); when
one of them comes back the `repeats` time (``SWARM_LOOP_REPEATS``, `DEFAULT_REPEATS` by
default, 0 turns it off; never for a wait: `WAITING_TOOLS`, a bare ``sleep N``), the agent asks
the lead before it goes on, by the permission protocol (so `swarm approve`, the console and
the web page answer it, and `swarm status` shows the member waiting, with why). Approved: it
goes on, and that call counts from zero again. Denied: the result is an error the model reads
with the lead's reason, and the turn ends there.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from collections.abc import Mapping
from typing import Any

REPEATS_VAR = "SWARM_LOOP_REPEATS"
DEFAULT_REPEATS = 5
WINDOW = 50  # the calls remembered
# looking again until something changes is what these are for (a background command's output,
# the board): the same answer again is waiting, not a loop
WAITING_TOOLS = frozenset({"TaskOutput", "TaskList", "TaskGet"})


def repeats_from(environ: Mapping[str, str] | None = None) -> int:
    """How many same calls with the same result make a loop (0: never); a value that is not a
    whole number leaves the default (the teammate must not die of a bad variable)."""
    text = (os.environ if environ is None else environ).get(REPEATS_VAR, "").strip()
    return int(text) if text.isdigit() else DEFAULT_REPEATS


class LoopGuard:
    """The last calls of one agent, to see it repeat itself (module doc)."""

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        self._seen: deque[str] = deque(maxlen=WINDOW)

    def saw(self, name: str, tool_input: Any, result: str, error: bool) -> tuple[str, int]:
        """Count one call; its digest and how often the window holds it now."""
        text = json.dumps([name, tool_input, result, error], sort_keys=True, default=str)
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        self._seen.append(digest)
        return digest, self._seen.count(digest)

    def looping(self, name: str, tool_input: Any, count: int) -> bool:
        """Whether the call seen `count` times is a loop to ask about."""
        return self.repeats > 0 and count >= self.repeats and not waiting(name, tool_input)

    def forgive(self, digest: str) -> None:
        """The lead let it go on: that call counts from zero again."""
        kept = [d for d in self._seen if d != digest]
        self._seen.clear()
        self._seen.extend(kept)


def question(name: str, count: int) -> str:
    """What the lead is asked."""
    return (
        f"a loop? {name} was called {count} times with the same input and got the same result "
        "each time. Approve to let it go on; deny (with a reason for it) to stop its turn"
    )


def waiting(name: str, tool_input: Any) -> bool:
    """A call made to wait for something else to change: a tool for waiting, a bare ``sleep``."""
    if name in WAITING_TOOLS:
        return True
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    words = command.split() if isinstance(command, str) else []
    return name == "Bash" and len(words) == 2 and words[0] == "sleep"
