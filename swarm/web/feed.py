"""The state of one team, kept current for every open page by one thread.

The thread waits on the team's watcher, the one `swarm watch` uses (`open_store(paths)
.team_watcher`: inotify on the team's directories, or a PostgreSQL team's ``LISTEN``), with a
rescan every `RESCAN_S` seconds as a safety net; after each wake it looks at the team
(`swarm.web.state.TeamState`) and, when the JSON changed, takes a sample of the team's cost
(`swarm.web.costs.CostSeries`, saved in the team's folder now and then and when the feed
stops), adds the series to the state as ``cost_series`` and the server's clock as ``now_ms``
(the page counts ages from the instants the state gives, against this clock) and publishes
it to the event loop, which wakes every stream waiting (`Feed.next`). No stream polls, and a
team where nothing happens sends nothing.

The rescan sees what no file change announces: a member's process that died without a word
(``kill -9``) shows as dead within `RESCAN_S` seconds. A look at a team of 200 members takes
tens of milliseconds of CPU; `bench/web.py` measures what that comes to when idle.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from protocols.clock import now_ms
from protocols.errors import ProtocolsError
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.web.costs import CostSeries, series_path
from swarm.web.state import TeamState, encoded

RESCAN_S = 15.0
log = logging.getLogger(__name__)


class Feed:
    def __init__(self, paths: TeamPaths) -> None:
        self.paths = paths
        self.version = 0
        self.text = ""  # the newest state's JSON ("" before the first look)
        self.problem = ""  # why the last look failed ("" when it did not)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._news = asyncio.Event()
        self._stop = threading.Event()
        self.costs = CostSeries(series_path(paths))  # the feed's thread's only
        self._watcher = open_store(paths).team_watcher(RESCAN_S)
        self._thread = threading.Thread(target=self._run, name="swarm-web-feed", daemon=True)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._news = asyncio.Event()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._watcher.changed.set()
        self._thread.join(10)
        if not self._thread.is_alive():
            self.costs.save()

    def poke(self) -> None:
        """Look again now (an answer was just written)."""
        self._watcher.changed.set()

    async def next(self, seen: int, timeout: float) -> bool:
        """Wait until a state newer than version `seen` is published, at most `timeout`
        seconds; whether one is."""
        while self.version <= seen:
            news = self._news
            try:
                await asyncio.wait_for(news.wait(), timeout)
            except TimeoutError:
                return self.version > seen
        return True

    def _run(self) -> None:
        state = TeamState(self.paths)
        last = ""
        with self._watcher as watcher:
            while not self._stop.is_set():
                watcher.clear()
                try:
                    looked = state.look()
                    text = encoded(looked)
                    self.problem = ""
                except (ProtocolsError, OSError) as exc:  # a file being rewritten, or broken
                    log.warning("cannot read team %s: %s", self.paths.team, exc)
                    self.problem = str(exc)
                    text = last
                if text != last and self._loop is not None:
                    last = text
                    now = now_ms()
                    self.costs.sample(now, looked.get("cost_usd"))
                    self.costs.save_if_due()
                    pushed = encoded({**looked, "cost_series": self.costs.points(), "now_ms": now})
                    try:
                        self._loop.call_soon_threadsafe(self._publish, pushed)
                    except RuntimeError:  # the loop closed: the server is stopping
                        return
                watcher.wait(RESCAN_S)

    def _publish(self, text: str) -> None:
        """In the event loop: the new state, and every waiting stream woken."""
        self.text = text
        self.version += 1
        news, self._news = self._news, asyncio.Event()
        news.set()
