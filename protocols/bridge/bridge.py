"""`Bridge`: one pass over roster, messages and tasks, and the loop that repeats it on change
(the package doc says what is carried)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protocols import safefs
from protocols.bridge.inboxes import InboxSync
from protocols.bridge.leases import BridgedLeases
from protocols.bridge.tasks import TaskSync
from protocols.errors import Error
from protocols.jsonio import write_json
from protocols.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg.store import PgStore
from protocols.pg.watch import PgWatcher
from protocols.team import TeamFile
from protocols.team_config import TeamConfig
from protocols.watch import InboxWatcher

log = logging.getLogger(__name__)

DEFAULT_RESCAN_S = 5.0
PUMP_S = 1.0  # how often a waking thread looks whether the bridge stopped


@dataclass(frozen=True)
class Passed:
    """What one pass moved: messages (and read marks), tasks, and whether the roster changed."""

    messages: int
    tasks: int
    roster: bool

    @property
    def moved(self) -> int:
        return self.messages + self.tasks + int(self.roster)


class Bridge:
    """The team at `paths.store` mirrored into the files under `paths.root` (package doc).

    `local` are the members living on this host: their inboxes are bridged both ways.
    """

    def __init__(
        self, paths: TeamPaths, local: Sequence[str], rescan_s: float = DEFAULT_RESCAN_S
    ) -> None:
        if paths.store is None:
            raise ValueError("a bridge needs a team in PostgreSQL")
        self.store = PgStore(paths)
        self.files = TeamPaths(paths.root, paths.team, paths.task_list)  # the same team, files
        self.local = list(dict.fromkeys(local))
        self.rescan_s = rescan_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._inboxes: InboxSync | None = None
        self._tasks: TaskSync | None = None
        self._unknown: set[str] = set()

    def sync(self) -> Passed:
        """One pass: the roster, then every inbox, then every task."""
        names, roster = self._sync_roster()
        if self._inboxes is None:
            self._inboxes = InboxSync(Mailbox(self.files), self.store.mailbox(), self.local)
        if self._tasks is None:
            self._tasks = TaskSync(self.files, self.store.task_board())
        messages = self._inboxes.sync(names)
        tasks = self._tasks.sync()
        return Passed(messages, tasks, roster)

    def _sync_roster(self) -> tuple[list[str], bool]:
        config = self.store.team_file().load()
        names = [m.name for m in config.members]
        for name in self.local:
            if name not in names and name not in self._unknown:
                self._unknown.add(name)
                log.warning("bridge: %r is not a member of team %r (yet)", name, config.name)
        team = TeamFile(self.files)
        if team.exists():
            config = self._carry_activity(team, config)
        wanted = config.to_json_dict()
        if not team.exists():
            safefs.makedirs(self.files.inboxes)
            write_json(self.files.config, wanted)
            return names, True
        if team.load().to_json_dict() == wanted:
            return names, False
        team.update(lambda _: config)
        return names, True

    def _carry_activity(self, team: TeamFile, config: TeamConfig) -> TeamConfig:
        """A local member's ``isActive``, which Claude Code writes into config.json at each
        turn's start and end, onto its record in the store; the store's config after it."""
        changed = False
        for name in self.local:
            here, there = team.entry(name), config.member(name)
            if here is None or there is None or "isActive" not in here:
                continue
            if here["isActive"] != there.isActive:
                self.store.team_file().update_member(name, isActive=here["isActive"])
                changed = True
        return self.store.team_file().load() if changed else config

    def run(self, on_pass: Callable[[Passed], None] | None = None) -> None:
        """Pass after pass until `stop`: at once, then on every change either side reports,
        and every `rescan_s` seconds. A pass that fails (the store away) is logged; the next
        one tries again. Meanwhile the local members' leases are held (`BridgedLeases`)."""
        safefs.makedirs(self.files.inboxes)
        safefs.makedirs(self.files.tasks_dir)
        files = InboxWatcher(
            directories=(self.files.inboxes, self.files.tasks_dir), rescan_s=self.rescan_s
        )
        store = self.store.watcher(self.local, board=True, rescan_s=self.rescan_s)
        leases = BridgedLeases(self.store.url, self.store.team, self.local)
        with files, store:
            pumps = [self._pump(files), self._pump(store)]
            beating = threading.Thread(
                target=leases.run, args=(self._stop,), name="bridge-leases", daemon=True
            )
            beating.start()
            pumps.append(beating)
            try:
                while not self._stop.is_set():
                    self._wake.clear()
                    try:
                        passed = self.sync()
                    except Error as exc:
                        log.warning("bridge: pass failed, trying again: %s", exc)
                    else:
                        if on_pass is not None:
                            on_pass(passed)
                    self._wake.wait(self.rescan_s)
            finally:
                self._stop.set()
                for pump in pumps:
                    pump.join(timeout=PUMP_S * 5)

    def _pump(self, watcher: InboxWatcher | PgWatcher) -> threading.Thread:
        """A thread that turns `watcher`'s wake-ups into the loop's."""

        def pump() -> None:
            while not self._stop.is_set():
                try:
                    if watcher.wait(PUMP_S):
                        watcher.clear()
                        for directory in (self.files.inboxes, self.files.tasks_dir):
                            watcher.take_changed(directory)  # which ones: a pass looks at all
                        self._wake.set()
                except Error as exc:  # the store away: the loop's rescan goes on
                    log.warning("bridge: waiting: %s", exc)
                    self._stop.wait(PUMP_S)

        thread = threading.Thread(target=pump, name="bridge-wake", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        """End `run` (from a signal handler or another thread)."""
        self._stop.set()
        self._wake.set()
