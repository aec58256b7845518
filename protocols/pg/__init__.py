"""A team in PostgreSQL, behind the file layer's interfaces: for teams that span machines.

Importing this package imports psycopg (the ``postgresql`` extra); nothing else in `protocols`
imports it. Every store class takes a `Database` (one process's connection, migrated and kept
alive across server restarts) and a team name, and has the methods of its file counterpart:

===================  =====================================  ===================================
store class          file counterpart                       module
===================  =====================================  ===================================
`PgTeamFile`         `protocols.team.file.TeamFile`         team.py
`PgMailbox`          `protocols.inbox.mailbox.Mailbox`      mailbox.py (waking: notify.py)
`PgTaskBoard`        `protocols.tasks.board.TaskBoard`      tasks.py (claims.py, task_rows.py)
`PgPermissionStore`  `PermissionStore`                      permissions.py
`Leases`             a member's pid, for liveness           leases.py
`Hosts`              (none: a machine's agent)              hosts.py (`swarm host serve`'s asks)
`PgStore`            `protocols.store.selection.FileStore`  store.py (`open_store` builds it)
`PgWatcher`          `InboxWatcher`                         watch.py
`Shipper`            a member's transcript and log          member_log.py (what `swarm logs` reads)
`Pruner`, `prune`    an inbox's archive record              retention.py (read messages, work done)
===================  =====================================  ===================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocols.lazy import lazy_names

if TYPE_CHECKING:
    from protocols.pg.database import Database
    from protocols.pg.hosts import Hosts
    from protocols.pg.leases import Expired, Leases
    from protocols.pg.mailbox import PgMailbox
    from protocols.pg.notify import Listener
    from protocols.pg.permissions import PgPermissionStore
    from protocols.pg.status import read_status, write_status
    from protocols.pg.tasks import PgTaskBoard
    from protocols.pg.team import PgTeamFile

# the names are imported when first used: a module of this package (the URL rules, say) must not
# import every other one, and psycopg with them
_HOMES = {
    "Database": "database",
    "Expired": "leases",
    "Hosts": "hosts",
    "Leases": "leases",
    "Listener": "notify",
    "PgMailbox": "mailbox",
    "PgPermissionStore": "permissions",
    "PgTaskBoard": "tasks",
    "PgTeamFile": "team",
    "read_status": "status",
    "write_status": "status",
}


__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "Database",
    "Expired",
    "Hosts",
    "Leases",
    "Listener",
    "PgMailbox",
    "PgPermissionStore",
    "PgTaskBoard",
    "PgTeamFile",
    "read_status",
    "write_status",
]
