"""protocols: everything swarm keeps on disk and everything that crosses a process boundary.

The files are Claude Code 2.1.88's agent-team format (see docs/protocols.md). Import what you
need from the submodules, or the common names from here:

    from protocols import TeamPaths, TeamFile, Mailbox, TaskBoard

Module map: `paths` (layout), `names` (name rules), `safefs` (file access that never follows a
link), `jsonio` (format, atomic writes), `locks`, `flock_wait` (a lock wait woken by the release),
`messages` (structured messages), `records` (order-keeping models), `team` (the file), `team_config`
(its models), `inbox` (the file), `spool` (an inbox's group commit), `inbox_entry` (one message),
`mailbox`, `watch` (wake-ups), `inotify` (the process's one inotify instance), `doorbell` (waking a
reader without inotify), `task` (task file names, claims), `task_model` (one task), `task_graph`
(dependencies), `task_facts` (a task file read without its model), `task_edit` (a task file's JSON
changed without its model), `tasks` (the board), `store` (which store a team lives in: files or
PostgreSQL, `open_store`), `task_index` (the board in memory), `task_summary` (the board summarised
on disk, for a process that looks once), `dirwatch` (which names in a directory changed),
`permissions`, `correlation` (request ids), `signing` and `keyfile` (lead signatures), `pids`
(processes by identity), `status` (a teammate's status file), `prices` and `budget` (model prices, a
member's budget file), `printable` (text safe for a terminal), `clock`, `errors` (the root of every
package's errors), `values` (the shared enums), `file_cache` (re-reading a file only if it changed),
`pg` (the team in PostgreSQL), `bridge` (a PostgreSQL team mirrored into this host's files for
Claude Code members, a Claude Code lead's session team too).
This package imports neither `swarm` nor `teammate`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from protocols.errors import ProtocolsError
    from protocols.inbox_entry import InboxEntry
    from protocols.mailbox import BROADCAST, Mailbox
    from protocols.messages import StructuredMessage, decode, encode
    from protocols.names import LEAD_NAME, validate_name
    from protocols.paths import TeamPaths, config_root
    from protocols.permissions import PermissionStore
    from protocols.task import ClaimFailure, ClaimResult
    from protocols.task_model import Task
    from protocols.tasks import TaskBoard
    from protocols.team import TeamFile
    from protocols.team_config import Member, TeamConfig

# the common names are imported when first used: `from protocols.errors import Error` in a
# command that sends one message must not build every model of the package (issue 18: start-up)
_HOMES = {
    "BROADCAST": "mailbox",
    "LEAD_NAME": "names",
    "ClaimFailure": "task",
    "ClaimResult": "task",
    "InboxEntry": "inbox_entry",
    "Mailbox": "mailbox",
    "Member": "team_config",
    "PermissionStore": "permissions",
    "ProtocolsError": "errors",
    "StructuredMessage": "messages",
    "Task": "task_model",
    "TaskBoard": "tasks",
    "TeamConfig": "team_config",
    "TeamFile": "team",
    "TeamPaths": "paths",
    "config_root": "paths",
    "decode": "messages",
    "encode": "messages",
    "validate_name": "names",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'protocols' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"protocols.{home}"), name)
    globals()[name] = value
    return value


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
