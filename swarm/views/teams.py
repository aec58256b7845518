"""The teams under a config root, for `swarm team list`: swarm's own and Claude Code's.

A Claude Code lead since 2.1.178 makes no named team: every lead session has its team
``session-<first 8 hex of its session id>``, made when the session starts and deleted when it
exits, with the lead's process in ``leadProcess {pid, pidSpace, claimedAt, procStart}``. A row
says which kind a team is, its lead's session, and whether that lead process still runs (its
pid with the same start time: a reused pid is not the lead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.paths import TeamPaths
from protocols.pids import start_time
from protocols.store.selection import open_store
from protocols.team.model import TeamConfig

SESSION_PREFIX = "session-"


@dataclass(frozen=True)
class TeamRow:
    name: str
    description: str | None
    members: int
    kind: str  # "session" (a Claude Code lead session's own team) or "named"
    lead_session: str | None
    lead_pid: int | None
    lead_alive: bool | None  # None: the team file does not say which process leads it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def list_teams(root: Path, skipped: Callable[[str, str], None]) -> list[TeamRow]:
    """Every team under `root` whose config parses, by name; `skipped(name, why)` is told of
    the others (a broken file, a link) so one bad team hides none of the rest."""
    try:
        listed = safefs.listdir(root / "teams")
    except FileNotFoundError:
        return []
    rows = []
    for name in sorted(listed):
        try:
            paths = TeamPaths(root, name)
            if not safefs.exists(paths.config):
                continue
            config = open_store(paths).team_file().load()
        except ProtocolsError as exc:
            skipped(name, str(exc))
            continue
        rows.append(row_of(name, config))
    return rows


def row_of(name: str, config: TeamConfig) -> TeamRow:
    process = (config.model_extra or {}).get("leadProcess")
    pid, alive = _lead_process(process)
    session = name.startswith(SESSION_PREFIX) and (config.leadSessionId or "").startswith(
        name[len(SESSION_PREFIX) :]
    )
    return TeamRow(
        name=name,
        description=config.description,
        members=len(config.members),
        kind="session" if session else "named",
        lead_session=config.leadSessionId,
        lead_pid=pid,
        lead_alive=alive,
    )


def _lead_process(process: Any) -> tuple[int | None, bool | None]:
    """The lead's pid, and whether it still runs (same pid, same start time)."""
    if not isinstance(process, dict) or not isinstance(process.get("pid"), int):
        return None, None
    pid: int = process["pid"]
    started = start_time(pid)
    recorded = str(process.get("procStart") or "")
    if started is None:
        return pid, False
    return pid, (str(started) == recorded) if recorded.isdigit() else True


def describe(row: TeamRow) -> str:
    """One line of `swarm team list`."""
    lead = ""
    if row.kind == "session":
        state = {True: "running", False: "gone", None: "unknown"}[row.lead_alive]
        lead = f"  Claude Code session {row.lead_session} (lead pid {row.lead_pid}, {state})"
    return f"{row.name:<24} {row.members} members{lead}  {row.description or ''}".rstrip()
