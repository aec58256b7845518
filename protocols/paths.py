"""Where every file of a team lives under the config root (spec section 1).

The root is ``$CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``, resolved once to its real path:
links above and at the root are the user's own arrangement, while below it, in the team state,
no link is ever followed (`protocols.fs.safefs`). `TeamPaths` is the one place that turns a team
name into paths; nothing else in the package joins path strings by hand. `check_root` says
when the root cannot hold teams (it is a file), naming the path, instead of an errno later.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any

from protocols.errors import UnusableRoot
from protocols.names import checked_component


def config_root(env: dict[str, str] | None = None) -> Path:
    """The config root: ``$CLAUDE_CONFIG_DIR`` if set and non-empty, else ``~/.claude``, as its
    real path (every link in it resolved)."""
    environ = os.environ if env is None else env
    configured = environ.get("CLAUDE_CONFIG_DIR")
    root = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return Path(os.path.realpath(root))


def check_root(root: Path, env: dict[str, str] | None = None) -> None:
    """`UnusableRoot` when `root` (a `config_root`) cannot hold teams because it, or a folder
    on its way to it, is a file (or anything but a directory), naming that path and the
    setting it came from; a root that does not exist yet is fine (it is made when needed)."""
    environ = os.environ if env is None else env
    setting = "$CLAUDE_CONFIG_DIR" if environ.get("CLAUDE_CONFIG_DIR") else "~/.claude"
    here = root
    while True:
        try:
            mode = os.stat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            if here.parent == here:
                return
            here = here.parent
            continue
        except OSError:  # no permission to look: the file operation itself will say so
            return
        if stat.S_ISDIR(mode):
            return
        what = "a file" if stat.S_ISREG(mode) else "not a directory"
        where = (
            f"the config root {root} ({setting}) is {what}"
            if here == root
            else f"{here} is {what}, so the config root {root} ({setting}) cannot be made in it"
        )
        raise UnusableRoot(
            f"{where}; teams need a directory there: set CLAUDE_CONFIG_DIR to a directory (one "
            "that does not exist yet is created)"
        )


class TeamPaths:
    """The paths of one team's files. Reading any existing team is allowed; see `names`.

    A frozen value, equal to another of the same root, team, task list and store. (Written out
    rather than a frozen dataclass: making one costs ~1 ms of every ``swarm status``, whose
    path has no other dataclass.)"""

    root: Path
    team: str
    # the task list the team works, when it is not the team's name: Claude Code's
    # CLAUDE_CODE_TASK_LIST_ID (a session team's lead may keep its list under another id)
    task_list: str | None
    # the PostgreSQL store holding the team's state (a URL: `protocols.store.selection`), None for
    # these files; never shown (it may hold a password)
    store: str | None

    def __init__(
        self, root: Path, team: str, task_list: str | None = None, store: str | None = None
    ) -> None:
        checked_component(team, "team name")
        if task_list is not None:
            checked_component(task_list, "task list id")
        # the root's own links are resolved once here; below it, none is ever followed
        for name, value in (
            ("root", Path(os.path.realpath(root))),
            ("team", team),
            ("task_list", task_list),
            ("store", store),
        ):
            object.__setattr__(self, name, value)

    def _key(self) -> tuple[Path, str, str | None, str | None]:
        return (self.root, self.team, self.task_list, self.store)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"TeamPaths(root={self.root!r}, team={self.team!r}, task_list={self.task_list!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"TeamPaths is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"TeamPaths is frozen: cannot delete {name!r}")

    @classmethod
    def for_team(
        cls,
        team: str,
        root: Path | None = None,
        task_list: str | None = None,
        store: str | None = None,
    ) -> TeamPaths:
        where = Path(root) if root is not None else config_root()
        return cls(where, team, task_list or None, store or None)

    @functools.cached_property  # (every send asks for it: kept once made, like tasks_dir)
    def team_dir(self) -> Path:
        return self.root / "teams" / self.team

    @functools.cached_property  # (every send asks for it: kept once made, like tasks_dir)
    def config(self) -> Path:
        return self.team_dir / "config.json"

    @property
    def config_backup(self) -> Path:
        """swarm's copy of the last config.json it wrote (for one a killed writer cut short)."""
        return self.team_dir / ".swarm-config-last-good.json"

    @functools.cached_property  # (every send asks for it: kept once made, like tasks_dir)
    def inboxes(self) -> Path:
        return self.team_dir / "inboxes"

    def inbox(self, agent: str) -> Path:
        return self.inboxes / f"{checked_component(agent, 'agent name')}.json"

    def inbox_archive(self, agent: str) -> Path:
        """Append-only JSON lines of messages compacted out of the live inbox."""
        return self.inboxes / f"{checked_component(agent, 'agent name')}.archive.jsonl"

    @property
    def permissions_pending(self) -> Path:
        return self.team_dir / "permissions" / "pending"

    @property
    def permissions_resolved(self) -> Path:
        return self.team_dir / "permissions" / "resolved"

    @property
    def plans_dir(self) -> Path:
        """Plans written by agents in plan mode (``<root>/plans``, as Claude Code keeps them)."""
        return self.root / "plans"

    @property
    def logs_dir(self) -> Path:
        """The output of subprocess teammates, one ``<name>.log`` each."""
        return self.team_dir / "logs"

    def log(self, agent: str) -> Path:
        return self.logs_dir / f"{checked_component(agent, 'agent name')}.log"

    @property
    def agents_dir(self) -> Path:
        """swarm's own per-agent files: status and transcript (Claude Code has none here)."""
        return self.team_dir / "agents"

    def agent_status(self, agent: str) -> Path:
        return self.agents_dir / f"{checked_component(agent, 'agent name')}.status.json"

    def transcript(self, agent: str) -> Path:
        return self.agents_dir / f"{checked_component(agent, 'agent name')}.transcript.jsonl"

    def subagents_dir(self, agent: str) -> Path:
        """Where the sub-agents of `agent` keep their transcripts (sidechains) and output files:
        ``<agentId>.jsonl``, ``<agentId>.output``."""
        return self.agents_dir / f"{checked_component(agent, 'agent name')}.subagents"

    def agent_files(self, agent: str) -> Path:
        """Files an agent's tools keep for it: background shells' output (``shells/``), tool
        output too large to show the model whole (``outputs/``)."""
        return self.agents_dir / f"{checked_component(agent, 'agent name')}.files"

    def subagent_transcript(self, agent: str, agent_id: str) -> Path:
        return self.subagents_dir(agent) / f"{checked_component(agent_id, 'agent id')}.jsonl"

    @property
    def lead_key(self) -> Path:
        """The team lead's private signing key (`protocols.team.keyfile`), outside the team's
        directory so that deleting a team's files does not lose it while teammates run."""
        return self.root / "swarm" / "keys" / self.team / "lead.key"

    @functools.cached_property
    def tasks_dir(self) -> Path:
        """(Kept once made: a claim asks for it dozens of times.)"""
        return self.root / "tasks" / (self.task_list or self.team)

    @property
    def tasks_lock_target(self) -> Path:
        return self.tasks_dir / ".lock"

    @property
    def highwatermark(self) -> Path:
        return self.tasks_dir / ".highwatermark"

    @property
    def task_summary(self) -> Path:
        """swarm's summary of the task board (`protocols.tasks.summary`): in swarm's own
        directory, where Claude Code never looks and the board's watchers are not woken."""
        return self.root / "swarm" / "task-summaries" / (self.task_list or self.team)

    @property
    def record_summaries(self) -> Path:
        """swarm's summaries of the team's records (`protocols.inbox.record_summary`): beside the
        board's, where Claude Code never looks."""
        return self.root / "swarm" / "record-summaries" / self.team

    def record_summary(self, agent: str) -> Path:
        return self.record_summaries / checked_component(agent, "agent name")

    def task(self, task_id: str | int) -> Path:
        return self.tasks_dir / f"{checked_component(str(task_id), 'task id')}.json"
