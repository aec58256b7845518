"""`PgStore`: a team in PostgreSQL, handing out the same parts as
`protocols.store.selection.FileStore`.

Built by `protocols.store.selection.open_store` for paths whose ``store`` is a PostgreSQL URL. A
process keeps one `Database` per URL and thread (a connection is not shared between threads), opened
at its first use, so the many short-lived store objects of one command share one connection. A
member keeps its lease while it runs (`keep_alive`: a thread with a connection of its own that
heartbeats every third of the lease, and sweeps the team's expired leases when its heartbeat saw
one). The same statement tells the member it has unread messages or is no longer in the team, so an
idle member's safety net costs nothing beyond its heartbeats. Waiting is on the team's ``LISTEN``
channel (`PgWatcher`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from protocols.errors import Error, LeaseLost, UnknownMember
from protocols.inbox.mailbox import EntrySigner
from protocols.member.status import AgentStatus
from protocols.paths import TeamPaths
from protocols.pg import member_log
from protocols.pg import status as pg_status
from protocols.pg.database import Database
from protocols.pg.hosts import Hosts
from protocols.pg.leases import Expired, Lease, Leases, lease_seconds
from protocols.pg.mailbox import PgMailbox
from protocols.pg.permissions import PgPermissionStore
from protocols.pg.retention import Pruned, Pruner, Retention, prune
from protocols.pg.tasks import PgTaskBoard
from protocols.pg.team import PgTeamFile
from protocols.pg.url import BadStoreUrl, redacted
from protocols.pg.watch import PgWatcher

log = logging.getLogger(__name__)

_local = threading.local()

T = TypeVar("T")

HEARTBEAT_JOIN_S = 1.0  # how long a member leaving waits for a beat in progress


def database(url: str) -> Database:
    """This thread's `Database` for `url` (opened on first use)."""
    cache: dict[str, Database] = _local.__dict__.setdefault("databases", {})
    found = cache.get(url)
    if found is None:
        found = cache[url] = Database(url)
    return found


def check_conninfo(url: str) -> None:
    """`BadStoreUrl` for a URL libpq would refuse (an unknown parameter, a bad value)."""
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadStoreUrl(f"the store URL {redacted(url)!r} is refused by libpq: {first}") from None


class ThreadsDatabase(Database):
    """The `Database` a store's parts hold: each call runs on the calling thread's own
    connection (`database`), so a part made in one thread and used in another (a timer
    marking its teammate active, a sub-agent's thread) never shares a connection, which
    psycopg would see as transactions nested out of order."""

    def run(
        self,
        work: Callable[[psycopg.Connection[Any]], T],
        what: str = "work",
        transaction: bool = True,
    ) -> T:
        return database(self.conninfo).run(work, what, transaction)

    def connect(self) -> psycopg.Connection[Any]:
        return database(self.conninfo).connect()

    def close(self) -> None:
        database(self.conninfo).close()


class PgStore:
    """One team in the PostgreSQL store at `paths.store`."""

    kind = "postgresql"
    # an idle member's own look at the store besides its heartbeats: rare, because each beat
    # already says whether it has unread messages or left the team (`keep_alive`), and a lost
    # listening connection is made again and looked after at once
    idle_rescan_s = 600.0

    def __init__(self, paths: TeamPaths) -> None:
        assert paths.store is not None
        check_conninfo(paths.store)
        self.paths = paths
        self.url = paths.store
        self.team = paths.team
        self.db: Database = ThreadsDatabase(self.url)

    def where(self) -> str:
        return redacted(self.url)

    def team_exists(self) -> bool:
        return self.team_file().exists()

    def team_file(self) -> PgTeamFile:
        return PgTeamFile(self.db, self.team)

    def mailbox(
        self,
        signer: EntrySigner | None = None,
        on_read: Callable[[set[str]], None] | None = None,
    ) -> PgMailbox:
        return PgMailbox(self.db, self.team, signer=signer, on_read=on_read)

    def task_board(self, mailbox: Any = None) -> PgTaskBoard:
        return PgTaskBoard(self.db, self.team, mailbox)

    def permissions(self) -> PgPermissionStore:
        return PgPermissionStore(self.db, self.team)

    def read_status(self, name: str) -> AgentStatus | None:
        return pg_status.read_status(self.db, self.team, name)

    def peek_status(self, name: str) -> AgentStatus | None:
        """`read_status` for a reader that only shows it (`FileStore.peek_status`)."""
        return self.read_status(name)

    def write_status(self, status: AgentStatus) -> None:
        pg_status.write_status(self.db, self.team, status)

    def watcher(
        self,
        inboxes: Sequence[str] = (),
        board: bool = False,
        directories: Sequence[Path] = (),
        rescan_s: float | None = None,
        subdirectories: bool = True,
    ) -> PgWatcher:
        """A watcher of these members' inboxes (and the task board, with `board`) on the team's
        channel, and of these local `directories` (with inotify)."""
        return PgWatcher(
            Database(self.url),
            self.team,
            inboxes,
            board,
            rescan_s,
            directories=directories,
            subdirectories=subdirectories,
        )

    def team_watcher(self, rescan_s: float) -> PgWatcher:
        """A watcher woken by any notification on the team's channel (a message, a task, a
        status), and every `rescan_s` seconds: what changes without one (the roster, a message
        marked read) shows at the rescan."""
        return PgWatcher(Database(self.url), self.team, rescan_s=rescan_s, everything=True)

    def keep_alive(
        self,
        name: str,
        say: Callable[[str], None] | None = None,
        on_news: Callable[[], None] | None = None,
    ) -> contextlib.AbstractContextManager[object]:
        """Heartbeat `name`'s lease while the block runs (module doc). A beat that finds the
        member with unread messages, or no longer in the team, calls `on_news` (the member
        looks: a notification was missed), so the heartbeat is an idle member's safety net."""
        return _heartbeating(self.url, self.team, name, say, on_news)

    def log_shipper(self, name: str) -> member_log.Shipper:
        """Ship what `swarm logs` shows of member `name` to the store while the block runs
        (`protocols.pg.member_log`)."""
        return member_log.Shipper(self.url, self.team, name)

    def member_log(self, name: str, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        """`name`'s shipped log lines after seq `after`, oldest first."""
        return member_log.read(self.db, self.team, name, after)

    def member_host(self, name: str) -> tuple[str, int] | None:
        """The host and pid of `name`'s last shipped log line; None if it never shipped one."""
        return member_log.last_host(self.db, self.team, name)

    def leases(self) -> dict[str, Lease]:
        """Every member's lease now (`Leases.view`): how a member is judged alive here."""
        return Leases(self.db, self.team).view()

    def sweep(self) -> list[Expired]:
        """Declare dead the members whose lease ran out (`Leases.sweep`)."""
        return Leases(self.db, self.team).sweep()

    def hosts(self) -> Hosts:
        return Hosts(self.db, self.team)

    def history_pruner(self, say: Callable[[str], None]) -> Pruner:
        """`prune_history` when due (`protocols.pg.retention.Pruner`)."""
        return Pruner(self.db, self.team, say)

    def prune_history(self, policy: Retention, dry_run: bool = False) -> Pruned:
        """Delete the history `policy` no longer keeps (`protocols.pg.retention.prune`)."""
        return prune(self.db, self.team, policy, dry_run=dry_run)

    def delete_team(self) -> bool:
        """Delete the team's rows (messages, tasks, requests, status); False if it had none."""
        return self.team_file().delete()

    def close_thread_connection(self) -> None:
        """Close this thread's connection to the store: a query that a signal cut short (a
        teammate told to stop) may have left a transaction open on it, whose locks a hand-back
        on another connection would wait for; closing it ends that transaction."""
        database(self.url).close()

    def within(
        self,
        seconds: float,
        work: Callable[[], T],
        what: str,
        slow: tuple[float, Callable[[], None]] | None = None,
    ) -> T:
        """`work` on this store given `seconds` (`protocols.bounded.within`): on a thread of
        its own, so on a connection of its own (closed when the work is over), never one stuck in
        another thread's query to a server that stopped answering."""
        from protocols.bounded import within

        url = self.url
        return within(seconds, work, what, done=lambda: database(url).close(), slow=slow)


def _rejoin(
    leases: Leases,
    name: str,
    lease_s: float,
    lost: LeaseLost,
    say: Callable[[str], None] | None,
) -> None:
    """A heartbeat that found `name` declared dead: alive again with a new lease (`Leases.rejoin`;
    a store away now is tried again at the next beat, which finds it dead again)."""
    try:
        back = leases.rejoin(name, lease_s)
    except Error as exc:
        log.warning("heartbeat of %s: %s; could not rejoin: %s", name, lost, exc)
        return
    if back and say is not None:
        say(f"{lost}; rejoined with a new lease")


@contextlib.contextmanager
def _heartbeating(
    url: str,
    team: str,
    name: str,
    say: Callable[[str], None] | None,
    on_news: Callable[[], None] | None = None,
    lease_s: float | None = None,
) -> Iterator[object]:
    lease_s = lease_seconds() if lease_s is None else lease_s
    stop = threading.Event()
    first = Leases(database(url), team)
    if first.beat(name, lease_s).sweep_due:  # held before any work starts; a dead one's tasks
        first.sweep()

    def news() -> None:
        if on_news is not None:
            on_news()

    def beat() -> None:
        db = Database(url)  # this thread's own connection
        leases = Leases(db, team)
        member = True  # still in the team at the last beat
        try:
            while not stop.wait(lease_s / 3):
                try:
                    beat = leases.beat(name, lease_s)
                    member = True
                    if beat.sweep_due:  # any live member returns the tasks of the dead
                        leases.sweep()
                    if beat.unread:
                        news()
                except LeaseLost as exc:  # declared dead in a pause: back, with a new lease
                    _rejoin(leases, name, lease_s, exc, say)
                except UnknownMember as exc:  # removed, or its team deleted: said and looked, once
                    if member:
                        log.warning("heartbeat of %s: %s", name, exc)
                        news()
                    member = False
                except Error as exc:  # the server is away: the next beat tries again
                    log.warning("heartbeat of %s: %s", name, exc)
        finally:
            db.close()

    thread = threading.Thread(target=beat, name=f"lease-{name}", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        # a beat stuck on a server that stopped answering is not waited for (a daemon thread)
        thread.join(timeout=HEARTBEAT_JOIN_S)
