"""A Claude Code lead's session team as the file side of a bridge (``swarm bridge --session``).

Claude Code 2.1.178 and later names no team: each lead session makes ``teams/session-<first 8
hex of its session id>/`` when it starts (its process in ``leadProcess``) and deletes it when it
exits; its teammates join that team and its tasks are ``tasks/session-<hex>/``. So for a Claude
Code lead the bridge mirrors the store's team into that session team instead of
``teams/<team>/``, under the same names (the lead is ``team-lead`` on both sides):

- `live_session` finds it: the session team under the config root whose lead process runs (the
  pid with the start time ``leadProcess`` records), the newest if several; None while no lead
  runs, and the bridge waits. A lead that exits and starts again is followed to its new team;
- `session_config` is what its ``config.json`` holds: Claude Code's own top level (name,
  ``leadAgentId``, ``leadSessionId``, ``leadProcess``, ...) and its lead's entry as Claude Code
  keeps it, then every other member of the store's roster as the store has it (its ``agentId``
  names the store's team: that is how a member the bridge wrote is told from Claude Code's),
  then the members only Claude Code knows (teammates its lead started here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from protocols.fs import safefs
from protocols.pids import start_time
from protocols.team.model import TeamConfig

PREFIX = "session-"


def live_session(root: Path) -> str | None:
    """The name of the session team of the Claude Code lead running under `root` (module doc)."""
    try:
        names = safefs.listdir(root / "teams")
    except FileNotFoundError:
        return None
    found: list[tuple[int, str]] = []
    for name in names:
        if not name.startswith(PREFIX):
            continue
        try:
            raw = json.loads(safefs.read_text(root / "teams" / name / "config.json"))
        except (OSError, ValueError):
            continue  # gone, or being written: the next pass looks again
        if isinstance(raw, dict) and _is_session(name, raw) and _lead_runs(raw):
            created = raw.get("createdAt")
            found.append((created if isinstance(created, int) else 0, name))
    return max(found)[1] if found else None


def _is_session(name: str, raw: dict[str, Any]) -> bool:
    session = raw.get("leadSessionId")
    return isinstance(session, str) and session.startswith(name[len(PREFIX) :])


def _lead_runs(raw: dict[str, Any]) -> bool:
    process = raw.get("leadProcess")
    if not isinstance(process, dict) or not isinstance(process.get("pid"), int):
        return False
    started = start_time(process["pid"])
    recorded = str(process.get("procStart") or "")
    return started is not None and (not recorded.isdigit() or str(started) == recorded)


def session_config(store: TeamConfig, here: TeamConfig) -> TeamConfig:
    """The session team's config with the store's roster in it (module doc)."""
    lead = here.leadAgentId.split("@", 1)[0]
    ours = f"@{store.name}"
    theirs = [m for m in store.members if m.name != lead]
    names = {m.name for m in theirs}
    kept = [
        m
        for m in here.members
        if m.name == lead or (m.name not in names and not m.agentId.endswith(ours))
    ]
    own = [m for m in kept if m.name == lead]
    members = [*own, *theirs, *(m for m in kept if m.name != lead)]
    return TeamConfig.from_json_dict(
        {**here.to_json_dict(), "members": [m.to_json_dict() for m in members]}
    )
