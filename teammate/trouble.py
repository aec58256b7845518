"""What a teammate does when something goes wrong that is not its own doing: report it, back
off, and try again, instead of dying.

A locked inbox under load, a ``config.json`` that another program is halfway through writing (or
that someone broke), a full disk, a link planted in the team's files: each makes one pass of the
teammate's loop fail. `Trouble` counts consecutive failures, says how long to wait before the
next pass (0.5 s, doubling up to 30 s), and decides when a failure is worth telling about: the
first time each distinct problem happens, not at every retry. One pass that works again clears it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0


@dataclass
class Trouble:
    failures: int = 0
    reported: set[str] = field(default_factory=set)

    def failed(self, exc: BaseException) -> tuple[float, bool]:
        """Note a failed pass: (seconds to wait before the next one, whether to report it)."""
        self.failures += 1
        delay = min(FIRST_DELAY_S * 2 ** (self.failures - 1), MAX_DELAY_S)
        key = describe(exc)
        new = key not in self.reported
        self.reported.add(key)
        return delay, new

    def cleared(self) -> bool:
        """A pass worked: True if there was trouble before (to say it is over)."""
        was = self.failures > 0
        self.failures = 0
        self.reported.clear()
        return was


def describe(exc: BaseException) -> str:
    """One line naming the problem: its type and message."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
