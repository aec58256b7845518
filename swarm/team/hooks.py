"""The hooks in force for a member (`swarm hooks`): the settings files where it runs (the
user's, its project's, the local one, its ``--settings`` file) and its agent type's front-matter
hooks; without a member, those of a directory (what the lead and `swarm task` run there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.errors import SwarmError
from swarm.team.members import member_spec
from teammate.config.definitions import from_flag_json, load_agent
from teammate.config.settings import layered_settings
from teammate.hooks import settings_hooks


def hooks_in_force(
    root: Path, paths: TeamPaths | None = None, name: str | None = None, cwd: Path | None = None
) -> list[dict[str, Any]]:
    """One entry per command hook (event, matcher, command, timeout, source), in the order
    they run. With `name`, the member's: its cwd (unless `cwd` is given), its ``--settings``
    file and its agent type's definition, as recorded in its member entry."""
    flag: Path | None = None
    agent_type: str | None = None
    agents_json: str | None = None
    if name is not None:
        if paths is None:
            raise SwarmError("a member's hooks need its team: give --team (or set SWARM_TEAM)")
        member = open_store(paths).team_file().load().require(name)
        spec = member_spec(member)
        cwd = cwd or Path(member.worktreePath or member.cwd or ".")
        agent_type = (spec.agent_type if spec else None) or member.agentType
        flag = Path(spec.settings) if spec and spec.settings else None
        agents_json = spec.agents if spec else None
    project = (cwd or Path.cwd()).resolve()
    settings = layered_settings(project, root, flag)
    hooks = settings_hooks(settings, project)
    if agent_type and agent_type != "team-lead":
        flagged = from_flag_json(agents_json) if agents_json else None
        definition = load_agent(
            agent_type, project_dir=project, flag=flagged, settings=settings.agents
        )
        hooks = hooks.scoped(
            definition.hooks, f"agent {definition.name} ({definition.source})", "Stop"
        )
    return hooks.listing()
