"""protocols: everything swarm keeps on disk and everything that crosses a process boundary.

The files are Claude Code 2.1.88's agent-team format (see docs/protocols.md). Import what you
need from the submodules, or the common names from here:

    from protocols import TeamPaths, TeamFile, Mailbox, TaskBoard

Folders by concern, from the bottom up (each folder's ``__init__`` says what it owns):

- the leaves: `errors` (the root of every package's errors), `clock`, `logs`, `values` (the shared
  enums), `names` (name rules), `durations`, `printable` (text safe for a terminal), `paths`
  (where every file lives), `pids` (processes by identity), `trace_context`;
- `fs`: `safefs` (never following a link), `jsonio` (Claude Code's bytes, atomic writes), `locks`
  and `flock_wait`, `file_cache`;
- `watch`: `inotify` (the process's one instance), `dirwatch`, `doorbell`, `wakeup` (an inbox's
  reader woken);
- `records`: `base` (order-keeping models), `plain` and `shapes` (reading without pydantic);
- `team`: `file` (`TeamFile`), `model` (`TeamConfig`, `Member`), `signing` and `keyfile`;
- `messages`: `models` (structured messages), `shapes`, `correlation` (request ids),
  `permissions` (the requests' store);
- `inbox`: `file` (`InboxFile`), `entry` (`InboxEntry`), `splice`, `spool`, `spool_slot`,
  `spool_wake` (the group commit), `record_summary`, `mailbox` (delivery between members);
- `tasks`: `task` (file names, claims), `model` (`Task`), `facts`, `edit`, `graph`, `board`
  (`TaskBoard`), `index` (the board in memory), `summary` and `summary_file`;
- `member`: `status` and `status_keys`, `budget`, `catalogue` and `prices`, `spend`;
- `store`: `selection` (`open_store`: files or PostgreSQL), `bounded` (a store given a deadline);
- `pg` (the team in PostgreSQL) and `bridge` (a PostgreSQL team mirrored into this host's files).

This package imports neither `swarm` nor `teammate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocols.lazy import lazy_names

if TYPE_CHECKING:
    from protocols.errors import ProtocolsError
    from protocols.inbox.entry import InboxEntry
    from protocols.inbox.mailbox import BROADCAST, Mailbox
    from protocols.inbox.permissions import PermissionStore
    from protocols.messages.models import StructuredMessage, decode, encode
    from protocols.names import LEAD_NAME, validate_name
    from protocols.paths import TeamPaths, config_root
    from protocols.tasks.board import TaskBoard
    from protocols.tasks.model import Task
    from protocols.tasks.task import ClaimFailure, ClaimResult
    from protocols.team.file import TeamFile
    from protocols.team.model import Member, TeamConfig

# the common names are imported when first used: `from protocols.errors import Error` in a
# command that sends one message must not build every model of the package
_HOMES = {
    "BROADCAST": "inbox.mailbox",
    "LEAD_NAME": "names",
    "ClaimFailure": "tasks.task",
    "ClaimResult": "tasks.task",
    "InboxEntry": "inbox.entry",
    "Mailbox": "inbox.mailbox",
    "Member": "team.model",
    "PermissionStore": "messages.permissions",
    "ProtocolsError": "errors",
    "StructuredMessage": "messages.models",
    "Task": "tasks.model",
    "TaskBoard": "tasks.board",
    "TeamConfig": "team.model",
    "TeamFile": "team.file",
    "TeamPaths": "paths",
    "config_root": "paths",
    "decode": "messages.models",
    "encode": "messages.models",
    "validate_name": "names",
}


__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "BROADCAST",
    "LEAD_NAME",
    "ClaimFailure",
    "ClaimResult",
    "InboxEntry",
    "Mailbox",
    "Member",
    "PermissionStore",
    "ProtocolsError",
    "StructuredMessage",
    "Task",
    "TaskBoard",
    "TeamConfig",
    "TeamFile",
    "TeamPaths",
    "config_root",
    "decode",
    "encode",
    "validate_name",
]
