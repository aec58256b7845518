"""The team's cost over time, for the page's chart: a ring of samples, kept in the team's folder.

A sample is ``[ms since the epoch, cumulative cost in USD]``, the team's ``cost_usd`` of a state
the feed pushes (`swarm.views.snapshot`: each member's status file's ``costUsd``, else its
usage priced by `swarm.views.costs`). It is taken each time the feed pushes a new state; a run
of equal costs keeps its first and last sample only (its last moved to the newest time), so an
idle team does not fill the ring. The ring holds the newest `SAMPLES`. A team whose models have
no price has no cost (None): no sample is taken.

The ring is written to ``<team>/web/cost-series.json`` (`series_path`) at most every
`SAVE_EVERY_S` seconds while it changes and when the server stops, and read back when a server
starts, so the chart goes on from before a restart. The folder is not one the team's watcher
watches, so saving wakes no page. Two servers of one team each keep their own ring and the last
to save wins; both sample the same team, so their rings differ only in when they looked. A file
that cannot be read, or holds anything but pairs of numbers, starts an empty ring (the bad
samples are dropped, never shown).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from protocols.fs.jsonio import atomic_write_text
from protocols.paths import TeamPaths

SAMPLES = 500
SAVE_EVERY_S = 30.0
log = logging.getLogger(__name__)


def series_path(paths: TeamPaths) -> Path:
    return paths.team_dir / "web" / "cost-series.json"


class CostSeries:
    """Used by one thread (the feed's); `path` None: kept in memory only."""

    def __init__(
        self,
        path: Path | None = None,
        most: int = SAMPLES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._path = path
        self._clock = clock
        self._samples: deque[list[float]] = deque(_loaded(path), maxlen=most)
        self._changed = False
        self._saved_at: float | None = None

    def sample(self, at_ms: int, cost_usd: float | None) -> None:
        if cost_usd is None:
            return
        cost = round(float(cost_usd), 6)
        samples = self._samples
        if len(samples) >= 2 and samples[-1][1] == cost and samples[-2][1] == cost:
            samples[-1] = [at_ms, cost]  # the flat run goes on: its end moves
        else:
            samples.append([at_ms, cost])
        self._changed = True

    def points(self) -> list[list[float]]:
        """The samples, oldest first (copies: the caller may keep them)."""
        return [list(s) for s in self._samples]

    def save_if_due(self) -> None:
        """Save when something changed and the last save is `SAVE_EVERY_S` old."""
        last = self._saved_at
        if self._changed and (last is None or self._clock() - last >= SAVE_EVERY_S):
            self.save()

    def save(self) -> None:
        """Write the ring now if it changed; a failure is logged (the chart goes on)."""
        if self._path is None or not self._changed:
            return
        self._saved_at = self._clock()
        try:
            self._path.parent.mkdir(exist_ok=True)
            atomic_write_text(self._path, json.dumps(self.points()))
        except OSError as exc:
            log.warning("cannot keep the cost chart in %s: %s", self._path, exc)
            return
        self._changed = False


def _loaded(path: Path | None) -> list[list[float]]:
    if path is None:
        return []
    try:
        raw: Any = json.loads(safefs.read_text(path))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:  # a planted link is an OSError too
        log.warning("the cost chart starts anew: %s cannot be read: %s", path, exc)
        return []
    if not isinstance(raw, list):
        return []
    return [[float(s[0]), float(s[1])] for s in raw if _is_sample(s)]


def _is_sample(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
    )
