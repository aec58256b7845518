"""Durations as a person types them (``90s``, ``30m``, ``2h``, ``1h30m``, ``1d``; a bare number
is seconds) and as they are shown (``1h 30m``): the time limits of `swarm spawn --max-time`,
`swarm budget --time` and `swarm team budget --time`."""

from __future__ import annotations

import math
import re

from protocols.errors import ProtocolsError

UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([dhms])")
HELP = "a duration such as 90s, 30m, 2h or 1h30m (a bare number is seconds)"


class BadDuration(ProtocolsError, ValueError):
    """Text that is no duration; the message says what is allowed."""


def parse_duration(text: str) -> float:
    """Seconds of `text` (module doc); `BadDuration` for anything else, zero and less too."""
    given = text.strip().lower().replace(" ", "")
    seconds = math.nan
    if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", given):
        seconds = float(given)
    elif given and _PART.sub("", given) == "":
        seconds = sum(float(n) * UNITS[unit] for n, unit in _PART.findall(given))
    if not math.isfinite(seconds):
        raise BadDuration(f"{text!r} is not a duration: give {HELP}")
    if seconds <= 0:
        raise BadDuration(f"{text!r}: a time limit must be more than 0 seconds")
    return seconds


def duration_text(seconds: float) -> str:
    """``45s``, ``12m 5s``, ``2h 30m``, ``3d 4h``: two units at most, rounded down."""
    left = max(0, int(seconds))
    parts: list[str] = []
    for unit in "dhms":
        count, left = divmod(left, int(UNITS[unit]))
        if count or (unit == "s" and not parts):
            parts.append(f"{count}{unit}")
    return " ".join(parts[:2])
