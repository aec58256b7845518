"""The team's cost over time, for the page's chart: a small ring of samples kept in memory.

A sample is ``[ms since the epoch, cumulative cost in USD]``, the team's ``cost_usd`` of a state
the feed pushes (`swarm.views.snapshot`: each member's status file's ``costUsd``, else its
usage priced by `swarm.views.costs`). It is taken each time the feed pushes a new state; a run
of equal costs keeps its first and last sample only (its last moved to the newest time), so an
idle team does not fill the ring. The ring holds the newest `SAMPLES`. Nothing is kept when the
server stops. A team whose models have no price has no cost (None): no sample is taken.
"""

from __future__ import annotations

from collections import deque

SAMPLES = 500


class CostSeries:
    """Used by one thread (the feed's)."""

    def __init__(self, most: int = SAMPLES) -> None:
        self._samples: deque[list[float]] = deque(maxlen=most)

    def sample(self, at_ms: int, cost_usd: float | None) -> None:
        if cost_usd is None:
            return
        cost = round(float(cost_usd), 6)
        samples = self._samples
        if len(samples) >= 2 and samples[-1][1] == cost and samples[-2][1] == cost:
            samples[-1] = [at_ms, cost]  # the flat run goes on: its end moves
        else:
            samples.append([at_ms, cost])

    def points(self) -> list[list[float]]:
        """The samples, oldest first (copies: the caller may keep them)."""
        return [list(s) for s in self._samples]
