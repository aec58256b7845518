"""Cron expressions: the five fields of crontab(5) (minute, hour, day of month, month, day of
week; names such as ``mon-fri`` and ``jan``, ranges, lists and steps) or one of the nicknames
``@hourly`` ``@daily`` ``@midnight`` ``@weekly`` ``@monthly`` ``@yearly`` ``@annually``, in a
named time zone (IANA: ``Europe/Paris``), daylight saving included.

The stepping is cronsim's (the library healthchecks.io runs its cron checks with); this module
only refuses what crontab(5) would not take (a sixth, seconds field) and says what is wrong.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from swarm.errors import SwarmError

NICKNAMES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
FIELDS = "minute hour day-of-month month day-of-week"
HELP = (
    f"a schedule is five fields, {FIELDS} (for example '0 9 * * 1-5': 9:00 on weekdays, "
    f"'*/15 * * * *': every 15 minutes), or one of {', '.join(NICKNAMES)}"
)


class BadSchedule(SwarmError):
    """A cron expression or time zone that cannot be used; the message says why."""


class Cron:
    """A checked cron expression in a time zone."""

    def __init__(self, expression: str, zone: str) -> None:
        self.expression = expression
        self.zone = zone
        self._tz = time_zone(zone)
        self._fields = fields_of(expression)

    def firings(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """The instants it fires (UTC) later than `after` and no later than `until`."""
        local = after.astimezone(self._tz)
        for fired in CronSim(self._fields, local):
            at = fired.astimezone(UTC)
            if at > until:
                return
            if at > after:
                yield at

    def next_after(self, after: datetime) -> datetime | None:
        """Its first firing after `after` (UTC), within ten years; None if there is none."""
        return next(self.firings(after, after + timedelta(days=3660)), None)


def fields_of(expression: str) -> str:
    """`expression` as five fields (a nickname replaced), checked; `BadSchedule` otherwise."""
    text = " ".join(expression.split())
    fields = NICKNAMES.get(text.lower(), text)
    if text.startswith("@") and text.lower() not in NICKNAMES:
        raise BadSchedule(f"schedule {expression!r}: unknown nickname; {HELP}")
    if len(fields.split()) != 5:
        raise BadSchedule(
            f"schedule {expression!r}: {len(fields.split())} fields where five are needed; {HELP}"
        )
    try:
        CronSim(fields, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise BadSchedule(f"schedule {expression!r}: {str(exc).lower()}; {HELP}") from None
    return fields


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; `BadSchedule` naming it if there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadSchedule(
            f"time zone {name!r} is not known; give an IANA name such as UTC, Europe/Paris or "
            "America/New_York"
        ) from None


def local_zone() -> str:
    """This machine's time zone by name: $TZ if it names one, else what /etc/localtime links
    to, else /etc/timezone, else UTC."""
    given = os.environ.get("TZ", "").lstrip(":")
    candidates = [given] if given else []
    try:
        link = os.readlink("/etc/localtime")
        candidates.append(link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "")
    except OSError:
        pass
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text().strip())
    for name in candidates:
        try:
            if name:
                ZoneInfo(name)
                return name
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return "UTC"
