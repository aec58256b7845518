"""Which store keeps a team's state, and the one object that hands out its parts.

A team lives in files under the config root (the default, and the only store Claude Code speaks)
or in PostgreSQL (`protocols.pg`, for a team that spans machines). `locate` finds out which:

1. a URL given by the caller (``swarm --store URL``, ``swarm team create --store URL``, a team
   file's ``store:``);
2. else ``$SWARM_STORE``;
3. else the team's pointer file, ``teams/<team>/swarm-store.json``, written when the team was
   created on PostgreSQL from this machine: the URL without its password (libpq finds that in
   ``PGPASSWORD`` or ``~/.pgpass``, or give the whole URL again with ``$SWARM_STORE``);
4. else files, exactly as without this module.

The answer rides on `TeamPaths.store`, so every function that is handed a team's paths reaches
the same store through `open_store(paths)`: a `FileStore` (today's classes) or a `PgStore`. Only
a PostgreSQL URL imports `protocols.pg` (and so psycopg); a file team pays one ``stat`` here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.paths import TeamPaths, config_root

# the URL rules and the channel's names live beside the PostgreSQL store (which must not import
# this module: it sits above both stores); they are this module's names too
from protocols.pg.url import SCHEMES as SCHEMES
from protocols.pg.url import STATUS as STATUS
from protocols.pg.url import TASKS as TASKS
from protocols.pg.url import URL_FORM as URL_FORM
from protocols.pg.url import BadStoreUrl as BadStoreUrl
from protocols.pg.url import check_url as check_url
from protocols.pg.url import is_store_url as is_store_url
from protocols.pg.url import redacted as redacted

if TYPE_CHECKING:
    from protocols.inbox.mailbox import EntrySigner, Mailbox
    from protocols.inbox.permissions import PermissionStore
    from protocols.member.status import AgentStatus
    from protocols.pg.retention import Pruned, Pruner, Retention
    from protocols.records.plain import Plain
    from protocols.store.contract import StoreContract
    from protocols.tasks.board import Sender, TaskBoard
    from protocols.team.file import TeamFile
    from protocols.watch.wakeup import InboxWatcher

T = TypeVar("T")

STORE_ENV = "SWARM_STORE"
POINTER = "swarm-store.json"
# finding a team's store


def pointer_path(root: Path, team: str) -> Path:
    return TeamPaths(root, team).team_dir / POINTER


def read_pointer(root: Path, team: str) -> str | None:
    """The store URL of the team's pointer file; None without one (a file team)."""
    try:
        value: Any = json.loads(safefs.read_text(pointer_path(root, team)))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BadStoreUrl(f"{pointer_path(root, team)} cannot be read: {exc}") from None
    url = value.get("store") if isinstance(value, dict) else None
    if not isinstance(url, str):
        raise BadStoreUrl(f"{pointer_path(root, team)} names no store (no 'store' string)")
    return check_url(url, where=str(pointer_path(root, team)))


def write_pointer(paths: TeamPaths) -> Path:
    """Remember on this machine that the team lives in `paths.store` (its password left out)."""
    from protocols.fs.jsonio import write_json

    assert paths.store is not None
    target = paths.team_dir / POINTER
    safefs.makedirs(target.parent)
    write_json(target, {"store": redacted(paths.store)})
    return target


def store_url(
    team: str, root: Path, url: str | None = None, env: Mapping[str, str] | None = None
) -> str | None:
    """The team's store URL (module doc: the given one, ``$SWARM_STORE``, the pointer), checked;
    None for files."""
    environ = os.environ if env is None else env
    if url:
        return check_url(url)
    if environ.get(STORE_ENV):
        return check_url(environ[STORE_ENV], where=f"${STORE_ENV}")
    return read_pointer(root, team)


def locate(
    team: str,
    root: Path | None = None,
    url: str | None = None,
    env: dict[str, str] | None = None,
    task_list: str | None = None,
) -> TeamPaths:
    """The team's paths, with the store it lives in (module doc); `env` stands for the
    environment's ``$SWARM_STORE``."""
    paths = TeamPaths.for_team(team, root if root is not None else config_root(), task_list)
    found = store_url(team, paths.root, url, env)
    return TeamPaths(paths.root, paths.team, paths.task_list, found) if found else paths


# stores handed in by `handed_store`, by (config root, team)
_handed: dict[tuple[Path, str], StoreContract] = {}


@contextmanager
def handed_store(paths: TeamPaths, store: StoreContract) -> Iterator[StoreContract]:
    """While the block runs, `open_store` answers `store` for `paths`' team, whatever its paths
    say: the seam where a test hands the code its own store (one that records or fails)."""
    key = (paths.root, paths.team)
    before = _handed.get(key)
    _handed[key] = store
    try:
        yield store
    finally:
        if before is None:
            _handed.pop(key, None)
        else:
            _handed[key] = before


def open_store(paths: TeamPaths) -> StoreContract:
    """The store `paths` says the team lives in: files, or PostgreSQL (both keep the contract
    of `protocols.store.contract`, which mypy checks here); or the one `handed_store` gave."""
    if _handed:
        handed = _handed.get((paths.root, paths.team))
        if handed is not None:
            return handed
    if paths.store is None:
        return FileStore(paths)
    from protocols.pg.store import PgStore  # psycopg only for a PostgreSQL team

    return PgStore(paths)


class FileStore:
    """A team in files under the config root: the classes of `protocols` as they always were."""

    kind = "files"
    # an idle member's safety-net look, for what inotify missed (it says when it dropped events)
    idle_rescan_s = 30.0

    def __init__(self, paths: TeamPaths) -> None:
        self.paths = paths

    def where(self) -> str:
        return str(self.paths.team_dir)

    def team_exists(self) -> bool:
        return safefs.exists(self.paths.config)

    def team_file(self) -> TeamFile:
        from protocols.team.file import TeamFile

        return TeamFile(self.paths)

    def mailbox(self, signer: EntrySigner | None = None, on_read: Any = None) -> Mailbox:
        from protocols.inbox.mailbox import Mailbox

        return Mailbox(self.paths, signer=signer, on_read=on_read)

    def task_board(self, mailbox: Sender | None = None) -> TaskBoard:
        from protocols.tasks.board import TaskBoard

        return TaskBoard(self.paths, mailbox)

    def permissions(self) -> PermissionStore:
        from protocols.inbox.permissions import PermissionStore

        return PermissionStore(self.paths)

    def read_status(self, name: str) -> AgentStatus | None:
        from protocols.member.status import read_status

        return read_status(self.paths, name)

    def peek_status(self, name: str) -> AgentStatus | Plain | None:
        """`read_status` for a reader that only shows it: a file that is plainly a status file
        (`protocols.member.shape.AGENT_STATUS`) is read without its model, so a look at 200
        members loads no pydantic. None too for a name that can be no file's (a planted entry)."""
        from protocols.member.shape import AGENT_STATUS

        try:
            value = json.loads(safefs.read_text(self.paths.agent_status(name)))
        except (OSError, ValueError, ProtocolsError):  # ValueError: bad JSON, or bad UTF-8
            return None
        found = AGENT_STATUS.read(value)
        if found is not None:
            return found
        from protocols.member.status import status_of

        return status_of(value)

    def write_status(self, status: AgentStatus) -> None:
        from protocols.member.status import write_status

        write_status(self.paths, status)

    def watcher(
        self,
        inboxes: Sequence[str] = (),
        board: bool = False,
        directories: Sequence[Path] = (),
        rescan_s: float | None = None,
        subdirectories: bool = True,
    ) -> InboxWatcher:
        """An inotify watcher of these members' inboxes (and the task directory, with
        `board`; and `directories`)."""
        from protocols.watch.wakeup import DEFAULT_RESCAN_S, InboxWatcher

        folders = ((self.paths.tasks_dir,) if board else ()) + tuple(directories)
        return InboxWatcher(
            *[self.paths.inbox(n) for n in inboxes],
            directories=folders,
            rescan_s=DEFAULT_RESCAN_S if rescan_s is None else rescan_s,
            subdirectories=subdirectories,
        )

    def team_watcher(self, rescan_s: float) -> InboxWatcher:
        """A watcher woken by any change of the team (the team's directory and its config, its
        inboxes: a message or a request shows at once; its task directory), and every
        `rescan_s` seconds (what changes only in status files: `swarm watch`, `swarm web`)."""
        from protocols.watch.wakeup import InboxWatcher

        return InboxWatcher(
            self.paths.config,
            directories=(self.paths.team_dir, self.paths.inboxes, self.paths.tasks_dir),
            rescan_s=rescan_s,
        )

    def keep_alive(
        self, name: str, say: Any = None, on_news: Any = None
    ) -> AbstractContextManager[object]:
        """Files need no heartbeat: a member is alive while its process is (`protocols.pids`)."""
        return nullcontext()

    def log_shipper(self, name: str) -> AbstractContextManager[None]:
        """Files need no shipping: `swarm logs` reads the member's own files."""
        return nullcontext()

    def member_log(self, name: str, after: int = 0) -> list[tuple[int, dict[str, Any]]]:
        """Nothing is shipped on files: `swarm logs` reads the member's own files."""
        return []

    def member_host(self, name: str) -> tuple[str, int] | None:
        """Where `name` runs, as far as the store knows: files do not say (this machine)."""
        return None

    def leases(self) -> None:
        """Files hold no leases: a member is judged by its process (`protocols.pids`)."""
        return None

    def hosts(self) -> None:
        """A team in files lives on this machine: it has no hosts."""
        return None

    def history_pruner(self, say: Callable[[str], None]) -> Pruner | None:
        """Files keep each inbox's record beside it and prune nothing."""
        return None

    def prune_history(self, policy: Retention, dry_run: bool = False) -> Pruned | None:
        return None

    def sweep(self) -> list[Any]:
        """Nothing to sweep on files (``swarm reap`` looks at processes)."""
        return []

    def delete_team(self) -> bool:
        """Nothing to do beyond the directories the caller removes."""
        return False

    def close_thread_connection(self) -> None:
        """Nothing: files hold no connection (a lock a cut-short write held went with it)."""

    def within(
        self,
        seconds: float,
        work: Callable[[], T],
        what: str,
        slow: tuple[float, Callable[[], None]] | None = None,
    ) -> T:
        """`work` on this store given `seconds` (`protocols.bounded.within`: a lock held by a
        paused process is not waited for longer)."""
        from protocols.bounded import within

        return within(seconds, work, what, slow=slow)
