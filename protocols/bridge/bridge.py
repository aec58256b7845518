"""`Bridge`: one pass over roster, messages and tasks, and the loop that repeats it on change
(the package doc says what is carried)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from protocols.bridge.inboxes import InboxSync
from protocols.bridge.leases import BridgedLeases
from protocols.bridge.session import live_session, session_config
from protocols.bridge.tasks import TaskSync
from protocols.errors import Error
from protocols.fs import safefs
from protocols.fs.jsonio import write_json
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.pg.store import PgStore
from protocols.pg.watch import PgWatcher
from protocols.team.file import TeamFile
from protocols.team.model import TeamConfig
from protocols.watch.wakeup import InboxWatcher

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
        self,
        paths: TeamPaths,
        local: Sequence[str],
        rescan_s: float = DEFAULT_RESCAN_S,
        session: bool = False,
    ) -> None:
        if paths.store is None:
            raise ValueError("a bridge needs a team in PostgreSQL")
        self.store = PgStore(paths)
        self.session = session  # the file side is a Claude Code lead's session team
        self.files = TeamPaths(paths.root, paths.team, paths.task_list)  # the same team, files
        self.local = list(dict.fromkeys(local))
        self.rescan_s = rescan_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._inboxes: InboxSync | None = None
        self._tasks: TaskSync | None = None
        self._unknown: set[str] = set()
        self._waiting = False  # said that no Claude Code lead session runs here

    def file_team(self) -> TeamPaths | None:
        """The file team mirrored now: ``teams/<team>/``, or with `session` the running Claude
        Code lead's session team (None while none runs: `protocols.bridge.session`)."""
        if not self.session:
            return self.files
        name = live_session(self.files.root)
        if name is None:
            if not self._waiting:
                self._waiting = True
                log.warning("bridge: no Claude Code lead session runs here; waiting for one")
            return None
        if self._waiting or name != self.files.team:
            log.info("bridge: team %r mirrored into %r", self.store.team, name)
        self._waiting = False
        return TeamPaths(self.files.root, name)

    def sync(self) -> Passed:
        """One pass: the roster, then every inbox, then every task."""
        files = self.file_team()
        if files is None:
            return Passed(0, 0, False)
        if files != self.files:  # another session team: its own inboxes, tasks and base
            self.files, self._inboxes, self._tasks = files, None, None
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
        if self.session:  # Claude Code's own team: never made here, its own entries kept
            here = team.load().to_json_dict() if team.exists() else None
            if here is None or session_config(config, team.load()).to_json_dict() == here:
                return names, False
            team.update(lambda here: session_config(config, here))
            return names, True
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
        leases = BridgedLeases(self.store.url, self.store.team, self.local)
        beating = threading.Thread(
            target=leases.run, args=(self._stop,), name="bridge-leases", daemon=True
        )
        beating.start()
        try:
            while not self._stop.is_set():
                files = self.file_team()
                if files is None:  # no Claude Code lead session yet: look again
                    self._stop.wait(self.rescan_s)
                    continue
                self._run_on(files, on_pass)
        finally:
            self._stop.set()
            beating.join(timeout=PUMP_S * 5)

    def _run_on(self, files: TeamPaths, on_pass: Callable[[Passed], None] | None) -> None:
        """`run`'s passes while `files` is the file team (with `session`, until the lead's
        session ends or another one starts)."""
        if not self.session:
            safefs.makedirs(files.inboxes)
            safefs.makedirs(files.tasks_dir)
        watched = self._there(files)
        files_watch = InboxWatcher(directories=watched or (files.team_dir,), rescan_s=self.rescan_s)
        store = self.store.watcher(self.local, board=True, rescan_s=self.rescan_s)
        done = threading.Event()
        with files_watch, store:
            pumps = [self._pump(files_watch, done), self._pump(store, done)]
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
                    if self.session and self.file_team() != files:
                        return  # the session ended or another began: watch that one
                    if self.session and self._there(files) != watched:
                        return  # its inbox or task directory was made: watch it
                    self._wake.wait(self.rescan_s)
            finally:
                done.set()
                for pump in pumps:
                    pump.join(timeout=PUMP_S * 5)

    @staticmethod
    def _there(files: TeamPaths) -> tuple[Path, ...]:
        """The inbox and task directories of `files` that exist (Claude Code makes them)."""
        return tuple(d for d in (files.inboxes, files.tasks_dir) if safefs.exists(d))

    def _pump(self, watcher: InboxWatcher | PgWatcher, done: threading.Event) -> threading.Thread:
        """A thread that turns `watcher`'s wake-ups into the loop's, until `done` or `stop`."""

        def pump() -> None:
            while not (self._stop.is_set() or done.is_set()):
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
