"""The store contract: what every store of a team offers, written down as `typing.Protocol`s.

A team lives in files (`protocols.inbox`, `protocols.tasks`, `protocols.team`, the classes Claude
Code's files need) or in PostgreSQL (`protocols.pg`). Code that works with either takes these
types, never a union of the two classes, and asks a capability (a method every store has,
answering for its own kind) instead of testing which class it holds. mypy checks both stores
against the contract where `open_store` returns one; `tests/contract/` runs one suite of
behaviour against both.

The methods' docstrings here say what holds on every store; each class's own says how it does
it (locks and inotify on files, transactions and notifications on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import builtins

    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.mailbox import Batch, EntrySigner
    from protocols.inbox.permissions import PermissionFileRequest
    from protocols.inbox.shape import PlainEntry
    from protocols.member.status import AgentStatus
    from protocols.messages.models import StructuredMessage
    from protocols.pg.hosts import Hosts
    from protocols.pg.leases import Lease
    from protocols.pg.member_log import Shipper
    from protocols.pg.retention import Pruned, Pruner, Retention
    from protocols.records.plain import Plain
    from protocols.tasks.board import NewTask, Sender
    from protocols.tasks.model import Task
    from protocols.tasks.task import ClaimResult, TaskLike
    from protocols.team.model import Member, TeamConfig

T = TypeVar("T")


class Bell(Protocol):
    """What wakes a watcher's waiter at once when set (from any thread)."""

    def set(self) -> None: ...


class WatcherContract(Protocol):
    """What wakes a waiting reader: inotify on files, notifications on PostgreSQL; a context
    manager that starts and stops it."""

    @property
    def changed(self) -> Bell: ...

    def start(self) -> WatcherContract: ...

    def stop(self) -> None: ...

    def __enter__(self) -> WatcherContract: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...

    def wait(self, timeout: float) -> bool:
        """True once something changed, False after `timeout` seconds."""
        ...

    def clear(self) -> None: ...

    def take_touched(self, directory: Path) -> bool: ...

    def take_changed(self, directory: Path) -> set[str] | None: ...


class MailboxContract(Protocol):
    """The team's inboxes: messages kept until marked read, never lost once stored."""

    def send(
        self,
        to: str,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]:
        """Store a message for `to` (every other member, for ``"*"``); returns the entries.
        Sending again with the same `message_id` after a failure stores it once."""
        ...

    def post(
        self,
        to: str,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """`send`, answering with the entries as JSON documents."""
        ...

    def post_many(
        self,
        to: str,
        messages: Batch,
        *,
        sender: str,
        color: str | None = None,
    ) -> list[dict[str, Any]]:
        """Several messages, each ``(body, summary, message_id)``, to one member, stored
        together in this order: all of them, or (on a failure) none."""
        ...

    def broadcast(
        self,
        body: str | StructuredMessage,
        *,
        sender: str,
        summary: str | None = None,
        color: str | None = None,
        message_id: str | None = None,
    ) -> list[InboxEntry]: ...

    def broadcast_recipients(self, sender: str) -> tuple[list[str], list[str]]:
        """Who a broadcast from `sender` reaches, and the members it skips."""
        ...

    def send_unless(
        self,
        to: str,
        body: str | StructuredMessage,
        conflict: Callable[[dict[str, Any]], bool],
        *,
        sender: str,
        summary: str | None = None,
    ) -> tuple[InboxEntry | None, dict[str, Any] | None]:
        """Compare-and-set: of several concurrent senders exactly one wins."""
        ...

    def read_all(self, agent: str) -> list[InboxEntry]: ...

    def read_unread(self, agent: str) -> list[InboxEntry]: ...

    def read_archive(self, agent: str) -> list[InboxEntry]: ...

    def peek_all(self, agent: str) -> list[InboxEntry]: ...

    def peek_plain(self, agent: str) -> Sequence[InboxEntry | PlainEntry]: ...

    def peek_protocol(self, agent: str) -> Sequence[InboxEntry | PlainEntry]: ...

    def peek_recent(self, agent: str, count: int) -> Sequence[InboxEntry | PlainEntry]: ...

    def peek_unread(self, agent: str) -> list[InboxEntry]:
        """The unread entries, for a look that takes no lock and writes nothing."""
        ...

    def unread_changed(self, agent: str, seen: object) -> tuple[list[InboxEntry], object]:
        """The unread entries and a token for the next call, which answers [] at once while
        the inbox is as `seen` left it (a store that cannot tell answers in full)."""
        ...

    def team_file(self) -> TeamFileContract:
        """The roster this mailbox checks recipients against (one reader, shared)."""
        ...

    def mark_read(self, agent: str, entries: Iterable[InboxEntry | PlainEntry]) -> int: ...

    def observe(self, agent: str) -> int: ...

    def observe_team(self) -> int: ...

    def compact(self, agent: str, keep_read: int = 0) -> None: ...

    def wait(
        self,
        agent: str,
        timeout: float,
        watcher: Any = None,
        until: Callable[[], bool] | None = None,
    ) -> list[InboxEntry]:
        """Unread entries as soon as there are any, or [] after `timeout` (or once `until`)."""
        ...

    def receive(self, agent: str, timeout: float, watcher: Any = None) -> list[InboxEntry]:
        """`wait`, then mark what came read (a crash in between delivers it again)."""
        ...

    def await_message(
        self,
        agent: str,
        match: Callable[[Any], bool],
        timeout: float,
        watcher: Any = None,
        mark: bool = True,
        sender: str | None = None,
    ) -> tuple[InboxEntry, Any] | None:
        """The first unread structured message `match` accepts, or None after `timeout`."""
        ...


class TaskBoardContract(Protocol):
    """The team's task list: dependencies, claims, failures, in Claude Code's task fields."""

    def create(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> Task: ...

    def create_file(
        self,
        subject: str,
        description: str = "",
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str | int] = (),
        owner: str | None = None,
    ) -> dict[str, Any]: ...

    def create_many(self, specs: Sequence[NewTask]) -> builtins.list[Task]: ...

    def get(self, task_id: str | int) -> Task | None: ...

    def require(self, task_id: str | int) -> Task: ...

    def list(self, include_internal: bool = False) -> builtins.list[Task]: ...

    def rows(self, include_internal: bool = False) -> Sequence[TaskLike]:
        """`list` for a process that looks once (``swarm status``), in the cheapest form."""
        ...

    def task_metadata(self, task_id: str | int) -> dict[str, Any] | None:
        """The task's metadata (for a row that left it out), or None."""
        ...

    def task_ids(self) -> builtins.list[int]: ...

    def update(
        self, task_id: str | int, *, actor: str | None = None, **fields: Any
    ) -> Task | None: ...

    def delete(self, task_id: str | int) -> bool: ...

    def claim(
        self, task_id: str | int, agent: str, check_busy: bool = True, start: bool = True
    ) -> ClaimResult: ...

    def claim_next(
        self, agent: str, start: bool = True, labels: Collection[str] | None = None
    ) -> ClaimResult | None: ...

    def fail(self, task_id: str | int, reason: str, by: str | None) -> Task: ...

    def retry(self, task_id: str | int) -> Task: ...

    def release_all(self, agent: str) -> builtins.list[Task]: ...


class TeamFileContract(Protocol):
    """The team's roster and settings (``config.json``'s content on every store)."""

    @property
    def name(self) -> str: ...

    def exists(self) -> bool: ...

    def create(
        self,
        description: str | None = None,
        cwd: str | Path = ".",
        lead_model: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig: ...

    def load(self) -> TeamConfig: ...

    def update(self, change: Callable[[TeamConfig], TeamConfig]) -> TeamConfig: ...

    def members(self) -> list[Member] | list[Plain]: ...

    def member_names(self) -> list[str]: ...

    def entries(self) -> list[dict[str, Any]]: ...

    def entry(self, name: str) -> dict[str, Any] | None: ...

    def require_entry(self, name: str) -> dict[str, Any]: ...

    def is_active(self, name: str) -> bool | None: ...

    def add_member(
        self,
        name: str,
        *,
        agent_type: str | None = "general-purpose",
        model: str | None = None,
        prompt: str | None = None,
        color: str | None = None,
        plan_mode_required: bool = False,
        tmux_pane_id: str = "",
        cwd: str | Path = ".",
        backend_type: str | None = None,
        **extra: Any,
    ) -> Member: ...

    def update_member(self, name: str, **changes: Any) -> Member: ...

    def remove_member(self, name: str) -> Member: ...


class PermissionsContract(Protocol):
    """Permission requests waiting for a person, and their answers (one answer wins)."""

    def new_request(
        self,
        *,
        worker_name: str,
        tool_name: str,
        tool_use_id: str,
        description: str,
        input: dict[str, Any],
        worker_color: str | None = None,
        suggestions: list[Any] | None = None,
    ) -> PermissionFileRequest: ...

    def write_pending(self, request: PermissionFileRequest) -> PermissionFileRequest: ...

    def get_pending(self, request_id: str) -> PermissionFileRequest | None: ...

    def pending(self) -> list[PermissionFileRequest]: ...

    def resolve(
        self,
        request_id: str,
        *,
        approved: bool,
        resolved_by: str = "leader",
        feedback: str | None = None,
        updated_input: dict[str, Any] | None = None,
        permission_updates: list[Any] | None = None,
    ) -> PermissionFileRequest: ...

    def poll(self, request_id: str) -> PermissionFileRequest | None: ...

    def resolved(self) -> list[PermissionFileRequest]: ...

    def clean_resolved(self, max_age_ms: int = ...) -> list[str]: ...


class StoreContract(Protocol):
    """One team's store, handing out its parts (`protocols.store.selection.open_store`)."""

    kind: str  # "files" or "postgresql"
    idle_rescan_s: float  # an idle member's safety-net look, for a wake-up that was missed

    def where(self) -> str:
        """Where the team is kept, for messages to a person."""
        ...

    def team_exists(self) -> bool: ...

    def team_file(self) -> TeamFileContract: ...

    def mailbox(
        self,
        signer: EntrySigner | None = None,
        on_read: Callable[[set[str]], None] | None = None,
    ) -> MailboxContract: ...

    def task_board(self, mailbox: Sender | None = None) -> TaskBoardContract: ...

    def permissions(self) -> PermissionsContract: ...

    def read_status(self, name: str) -> AgentStatus | None: ...

    def peek_status(self, name: str) -> AgentStatus | Plain | None: ...

    def write_status(self, status: AgentStatus) -> None: ...

    def watcher(
        self,
        inboxes: Sequence[str] = (),
        board: bool = False,
        directories: Sequence[Path] = (),
        rescan_s: float | None = None,
        subdirectories: bool = True,
    ) -> WatcherContract: ...

    def team_watcher(self, rescan_s: float) -> WatcherContract: ...

    def within(
        self,
        seconds: float,
        work: Callable[[], T],
        what: str,
        slow: tuple[float, Callable[[], None]] | None = None,
    ) -> T:
        """`work` on this store, given `seconds` at the most."""
        ...

    def keep_alive(
        self,
        name: str,
        say: Callable[[str], None] | None = None,
        on_news: Callable[[], None] | None = None,
    ) -> AbstractContextManager[object]:
        """While it is open, `name` counts as alive (a lease on PostgreSQL; on files, its
        process)."""
        ...

    def leases(self) -> dict[str, Lease] | None:
        """The members' leases; None where a member is judged by its process (files)."""
        ...

    def hosts(self) -> Hosts | None:
        """The machines serving the team; None for a team on one machine (files)."""
        ...

    def member_host(self, name: str) -> tuple[str, int] | None: ...

    def sweep(self) -> builtins.list[Any]:
        """Take back what members that stopped beating held; what was taken back."""
        ...

    def member_log(self, name: str, after: int = 0) -> builtins.list[tuple[int, dict[str, Any]]]:
        """`name`'s shipped log lines after seq `after`, oldest first ([] on files: `swarm
        logs` reads the member's own files there)."""
        ...

    def log_shipper(self, name: str) -> AbstractContextManager[Shipper | None]:
        """What ships the member's log lines to where `swarm logs` reads them, while open
        (None on files: the lines are in the member's own files already)."""
        ...

    def history_pruner(self, say: Callable[[str], None]) -> Pruner | None:
        """`prune_history` when due, for a loop; None where there is no history to prune."""
        ...

    def prune_history(self, policy: Retention, dry_run: bool = False) -> Pruned | None:
        """Delete the history `policy` no longer keeps; None where there is none (files)."""
        ...

    def close_thread_connection(self) -> None: ...

    def delete_team(self) -> bool: ...
