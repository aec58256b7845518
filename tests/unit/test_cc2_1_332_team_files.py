"""swarm's team files next to Claude Code 2.1.332 (docs/interop.md).

``teamAllowedPaths``: 2.1.332 ignores it, with a warning in its debug log, when a teammate
starts in a team whose config.json has the key. swarm never writes it (so its teams cause no
warning) and keeps it, where an older Claude Code lead wrote it, through its own changes.

``sweepTeamFile``: 2.1.332's retention cleanup deletes a team's config.json when it is older
than ``cleanupPeriodDays``, its ``leadProcess`` is valid and dead, no session with its
``leadSessionId`` runs, *every* member (the lead's entry too) has ``backendType: "in-process"``,
and the team directory holds nothing else but old ``.<16 hex>.tmp`` files. `swept` is that rule
on the files, with the lead's process taken for dead: the most a sweep could do. A team swarm
makes fails it three times over: its lead's entry has no ``backendType`` (and no swarm backend
is ``in-process``), it has no ``leadProcess``, and its directory holds swarm's own files.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

from protocols.fs.jsonio import dumps_pretty
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile
from swarm.backends.subprocess_backend import SubprocessBackend
from swarm.backends.tmux import TmuxBackend
from swarm.team.liveness import MCP_BACKEND

DAY_S = 86_400
CUTOFF_S = time.time() - 30 * DAY_S  # cleanupPeriodDays' default: 30
OLD_S = CUTOFF_S - DAY_S
SPARE = re.compile(r"^\.[0-9a-f]{16}\.tmp$")  # what the sweep removes from a team's directory


def swept(team_dir: Path) -> list[str]:
    """Why Claude Code 2.1.332's ``sweepTeamFile`` keeps the team in `team_dir` (empty: it
    deletes its config.json), its lead process taken for dead and no session of it running."""
    config = team_dir / "config.json"
    if not config.is_file() or config.stat().st_mtime >= CUTOFF_S:
        return ["config.json is not older than the cutoff"]
    raw = json.loads(config.read_text())
    members = raw.get("members")
    reasons = []
    if not isinstance(members, list) or not all(_named(m) for m in members):
        reasons.append("members its check would drop")
    if not _lead_process(raw.get("leadProcess")):
        reasons.append("no valid leadProcess")
    if not isinstance(raw.get("leadSessionId"), str):
        reasons.append("no leadSessionId")
    if any(m.get("backendType") != "in-process" for m in members or []):
        reasons.append("a member is not in-process")
    if [path for path in team_dir.iterdir() if not _sweepable(path)]:
        reasons.append("other files in the team directory")
    return reasons


def _named(member: Any) -> bool:
    return (
        isinstance(member, dict)
        and isinstance(member.get("agentId"), str)
        and isinstance(member.get("name"), str)
    )


def _lead_process(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    pid, claimed = value.get("pid"), value.get("claimedAt")
    return (
        isinstance(pid, int)
        and isinstance(value.get("pidSpace"), str)
        and isinstance(claimed, int | float)
        and math.isfinite(claimed)
        and isinstance(value.get("procStart", ""), str)
    )


def _sweepable(path: Path) -> bool:
    if path.name in ("config.json", "config.json.lock"):
        return True
    return bool(SPARE.match(path.name)) and path.is_file() and path.stat().st_mtime < CUTOFF_S


def age(directory: Path) -> None:
    """Everything under `directory`, and itself, last changed before the cutoff."""
    for path in [*directory.rglob("*"), directory]:
        os.utime(path, (OLD_S, OLD_S), follow_symlinks=False)


def dead_claude_code_session(root: Path) -> Path:
    """What a 2.1.332 lead session that died leaves, every teammate in its process: swept."""
    team_dir = root / "teams" / "session-deadbeef"
    team_dir.mkdir(parents=True)
    lead = {
        "agentId": "team-lead@session-deadbeef", "name": "team-lead", "agentType": "team-lead",
        "joinedAt": 1, "tmuxPaneId": "leader", "cwd": "/w", "subscriptions": [],
        "backendType": "in-process",
    }  # fmt: skip
    config = {
        "name": "session-deadbeef", "createdAt": 1, "leadAgentId": "team-lead@session-deadbeef",
        "leadSessionId": "deadbeef-0000-4000-8000-000000000000",
        "leadProcess": {"pid": 4_000_000, "pidSpace": "vm#pid:[1]", "claimedAt": 1},
        "members": [lead, {**lead, "agentId": "w@session-deadbeef", "name": "w"}],
    }  # fmt: skip
    (team_dir / "config.json").write_text(dumps_pretty(config))
    (team_dir / ".0123456789abcdef.tmp").write_text("")
    age(team_dir)
    return team_dir


def test_the_rule_sweeps_a_dead_claude_code_session_of_in_process_teammates(
    config_root: Path,
) -> None:
    assert swept(dead_claude_code_session(config_root)) == []


def test_a_team_swarm_makes_is_kept_for_three_reasons_each_enough(
    paths: TeamPaths, tmp_path: Path
) -> None:
    team = TeamFile(paths)
    team.create(cwd=tmp_path)
    for name, backend in [
        ("alice", TmuxBackend.backend_type),
        ("bob", SubprocessBackend.backend_type),
        ("cc", MCP_BACKEND),
    ]:
        team.add_member(name, cwd=tmp_path, backend_type=backend)
    age(paths.team_dir)
    assert swept(paths.team_dir) == [
        "no valid leadProcess",
        "a member is not in-process",
        "other files in the team directory",
    ]
    raw = json.loads(paths.config.read_text())
    assert "backendType" not in raw["members"][0] and "leadProcess" not in raw

    # each reason alone keeps it: the lead's entry without backendType ...
    lone = dead_claude_code_session(tmp_path / "lone")
    config = json.loads((lone / "config.json").read_text())
    del config["members"][0]["backendType"]
    (lone / "config.json").write_text(dumps_pretty(config))
    age(lone)
    assert swept(lone) == ["a member is not in-process"]
    # ... no leadProcess ...
    config["members"][0]["backendType"] = "in-process"
    del config["leadProcess"]
    (lone / "config.json").write_text(dumps_pretty(config))
    age(lone)
    assert swept(lone) == ["no valid leadProcess"]
    # ... a file of swarm's beside config.json
    config["leadProcess"] = {"pid": 4_000_000, "pidSpace": "vm#pid:[1]", "claimedAt": 1}
    (lone / "config.json").write_text(dumps_pretty(config))
    (lone / paths.config_backup.name).write_text("{}")
    age(lone)
    assert swept(lone) == ["other files in the team directory"]


def test_swarm_writes_no_team_allowed_paths_and_keeps_one_an_older_lead_wrote(
    paths: TeamPaths, tmp_path: Path
) -> None:
    team = TeamFile(paths)
    team.create(cwd=tmp_path)
    team.add_member("alice", cwd=tmp_path)
    assert "teamAllowedPaths" not in json.loads(paths.config.read_text())

    allowed = [
        {"path": "/w/src", "toolName": "Edit", "addedBy": "team-lead", "addedAt": 1770649701212}
    ]
    raw = json.loads(paths.config.read_text())
    keys = list(raw)
    paths.config.write_text(dumps_pretty({**raw, "teamAllowedPaths": allowed}))
    team.add_member("bob", cwd=tmp_path)
    team.update_member("alice", isActive=False)
    team.remove_member("bob")
    kept = json.loads(paths.config.read_text())
    assert kept["teamAllowedPaths"] == allowed
    assert list(kept) == [*keys, "teamAllowedPaths"]  # where it was, as Claude Code keeps keys
