"""The team file ``teams/<team>/config.json`` (spec section 2): `TeamFile`.

`TeamFile` creates a team (its lead member ``team-lead``, the inbox and task directories), adds,
updates and removes members, and refuses duplicate names. Every change is a read-modify-write
under the file's lock, written atomically; unknown keys (Claude Code's or a later version's) and
the key order are kept.

The models (`protocols.team.model`) load when first needed: the members' names and entries, all a
send needs, are read from the raw JSON (`TeamFile.entries`), so ``swarm send`` loads no pydantic.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.clock import now_ms
from protocols.errors import MemberExists, ProtocolsError, TeamExists, TeamNotFound, UnknownMember
from protocols.fs import safefs
from protocols.fs.file_cache import FileCache, Signature, signature_of
from protocols.fs.jsonio import Durability, dumps_pretty, ensure_file, parse_patiently, write_json
from protocols.fs.locks import FileGuard, redo_if_lock_lost
from protocols.logs import logger
from protocols.names import LEAD_NAME, agent_id, unknown_member_text, validate_name
from protocols.paths import TeamPaths
from protocols.team.shape import TEAM_CONFIG

if TYPE_CHECKING:
    from protocols.records.plain import Plain
    from protocols.team.model import Member, TeamConfig

log = logger(__name__)
PARSE_RETRY_S = 0.5  # how long a config.json that does not parse is taken for half-written

CONFIG = "config.json"  # a TeamFile's cache: the file's JSON text
ENTRIES = "members"  # and the members' raw entries
MEMBERS = "members as read"  # and the members as `members` reads them

# what `TeamFile.entries` checks before it trusts the raw JSON: the keys the model requires, and
# the optional ones a send reads, with the types the model gives them
_REQUIRED_TEAM_KEYS = {"name": str, "createdAt": int, "leadAgentId": str}
_REQUIRED_MEMBER_KEYS = {"agentId": str, "name": str, "joinedAt": int}
_OPTIONAL_MEMBER_KEYS = {"color": str, "backendType": str, "isActive": bool}
_TEAM_KEYS = tuple(_REQUIRED_TEAM_KEYS.items())
_MEMBER_KEYS = tuple(_REQUIRED_MEMBER_KEYS.items())
_OPTIONAL_KEYS = tuple(_OPTIONAL_MEMBER_KEYS.items())


class TeamFile:
    """Owner of one team's ``config.json``."""

    def __init__(self, paths: TeamPaths, durability: Durability | None = None) -> None:
        self.paths = paths
        self.durability = durability
        self._cache: FileCache[str, Any] = FileCache()

    @property
    def name(self) -> str:
        return self.paths.team

    def exists(self) -> bool:
        return safefs.exists(self.paths.config)

    def create(
        self,
        description: str | None = None,
        cwd: str | Path = ".",
        lead_model: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig:
        """Create the team with its lead member. Refuses an invalid or existing name."""
        from protocols.team.model import Member, TeamConfig

        validate_name(self.paths.team, "team name")
        team = self.paths.team
        created = now_ms()
        lead = Member(
            agentId=agent_id(LEAD_NAME, team),
            name=LEAD_NAME,
            agentType=LEAD_NAME,
            model=lead_model,
            joinedAt=created,
            tmuxPaneId="",
            cwd=str(Path(cwd).resolve()),
            subscriptions=[],
        )
        config = TeamConfig(
            name=team,
            description=description,
            createdAt=created,
            leadAgentId=agent_id(LEAD_NAME, team),
            leadSessionId=lead_session_id or _new_session_id(),
            members=[lead],
        )
        if safefs.exists(self.paths.config):
            raise TeamExists(f"team {team!r} already exists at {self.paths.team_dir}")
        made_team_dir = not safefs.exists(self.paths.team_dir)
        made_tasks_dir = not safefs.exists(self.paths.tasks_dir)
        try:
            # the inbox and task directories first, config.json last: a team whose config
            # exists is complete, and a failure (a full disk) leaves no half-made team behind
            safefs.makedirs(self.paths.inboxes)
            ensure_file(self.paths.inbox(LEAD_NAME), "[]", self.durability)
            safefs.makedirs(self.paths.tasks_dir)
            ensure_file(self.paths.tasks_lock_target, "", self.durability)
            created = ensure_file(
                self.paths.config, dumps_pretty(config.to_json_dict()), self.durability
            )
        except BaseException:
            if safefs.exists(self.paths.config):  # another creator finished the team
                raise
            if made_team_dir:
                safefs.rmtree(self.paths.team_dir, missing_ok=True)
            if made_tasks_dir:
                safefs.rmtree(self.paths.tasks_dir, missing_ok=True)
            raise
        if not created:
            raise TeamExists(f"team {team!r} already exists at {self.paths.team_dir}")
        try:
            with FileGuard(self.paths.config, keep_lock_dir=True):
                self._keep_backup(self._read())  # under the lock: a change made meanwhile is kept
        except (OSError, ProtocolsError) as exc:  # a copy: the team is made all the same
            log.warning("could not keep a copy of %s: %s", self.paths.config, exc)
        return config

    def load(self) -> TeamConfig:
        """The current config (parsed again only when the file changed since the last load)."""
        signature = self._signature()
        hit, cached = self._cache.get(CONFIG, signature)
        if hit and cached is not None:
            # a fresh model from the cached text: parsing and validating run in C, several
            # times faster than a deep copy of the model (200 members: ~60 ms a copy)
            return self._validated(json.loads(cached))
        raw = self._read_raw()
        config = self._validated(raw)
        if signature:
            self._cache.put(CONFIG, signature, json.dumps(raw))
        return config

    def members(self) -> list[Member] | list[Plain]:
        """The current members, for a reader that only shows them: read without the model when
        config.json is plainly a team file (`protocols.team.shape.TEAM_CONFIG`), else as `load`
        reads them (an invalid file raises as it does). Kept until the file changes; do not
        change them."""
        signature = self._signature()
        hit, cached = self._cache.get(MEMBERS, signature)
        if hit and cached is not None:
            return cached
        raw = self._read_raw()
        plain = TEAM_CONFIG.read(raw)
        members = plain.members if plain is not None else self._validated(raw).members
        if signature:
            self._cache.put(MEMBERS, signature, members)
        return members

    def entries(self) -> list[dict[str, Any]]:
        """The members' entries as config.json has them (copies), read without a model.

        The raw JSON is trusted when it has the keys the model requires and the optional keys a
        send reads (``color``, ``backendType``, ``isActive``) have the model's types; a file
        that does not is read through the model (`load`): its error names what is wrong, and
        what the model accepts (an int written as a string) comes out as the model has it."""
        return copy.deepcopy(self._entries())

    def entry(self, name: str) -> dict[str, Any] | None:
        """Member `name`'s entry (a copy), or None."""
        found = next((e for e in self._entries() if e["name"] == name), None)
        return copy.deepcopy(found)

    def require_entry(self, name: str) -> dict[str, Any]:
        """Member `name`'s entry (a copy); `UnknownMember` naming the members (and the likely
        one) if there is none."""
        found = self.entry(name)
        if found is None:
            raise UnknownMember(unknown_member_text(name, self.paths.team, self.member_names()))
        return found

    def is_active(self, name: str) -> bool | None:
        """Member `name`'s ``isActive`` as config.json has it (None: no such member, or no
        flag); no copy of its entry is made."""
        found = next((e for e in self._entries() if e["name"] == name), None)
        value = found.get("isActive") if found is not None else None
        return value if isinstance(value, bool) else None

    def member_names(self) -> list[str]:
        """Names of the current members (cheap: no model, no copy)."""
        return [e["name"] for e in self._entries()]

    def _entries(self) -> list[dict[str, Any]]:
        signature = self._signature()
        hit, cached = self._cache.get(ENTRIES, signature)
        if hit and cached is not None:
            return cached
        entries = _member_entries(self._read_raw())
        if entries is None:
            entries = [m.to_json_dict() for m in self._read().members]
        if signature:
            self._cache.put(ENTRIES, signature, entries)
        return entries

    def _signature(self) -> Signature | None:
        try:
            return signature_of(safefs.stat_of(self.paths.config))
        except FileNotFoundError:
            return None

    def _read(self) -> TeamConfig:
        """The config as a model (`_read_raw`, validated)."""
        return self._validated(self._read_raw())

    def _validated(self, raw: Any) -> TeamConfig:
        from protocols.team.model import TeamConfig

        try:
            return TeamConfig.from_json_dict(raw)
        except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ProtocolsError(f"{self.paths.config} is not a valid team file: {exc}") from None

    def _read_raw(self) -> Any:
        """Parse config.json, waiting out a half-written file for `PARSE_RETRY_S`: Claude Code
        rewrites it in place, without a lock (its teammates flip ``isActive`` every turn).

        Two of Claude Code's in-place writes that overlap (each truncates, then writes from the
        start) leave the shorter config whole followed by the tail of the longer one: the whole
        one is read, with a warning (`_leading_config`). A file that stays empty, or stops part
        way through its JSON, is what an in-place writer killed mid-write leaves (a Claude Code
        teammate stopped with ``--force``): the copy swarm keeps of the last config it wrote
        (`TeamPaths.config_backup`) is used instead, with a warning, and the next change writes
        config.json whole again. Other garbage is an error, never papered over."""
        text = ""

        def parse() -> Any:
            nonlocal text
            text = safefs.read_text(self.paths.config)
            return json.loads(text)

        try:
            return parse_patiently(parse, PARSE_RETRY_S)
        except FileNotFoundError:
            raise TeamNotFound(
                f"team {self.paths.team!r} not found (no {self.paths.config})"
            ) from None
        except ValueError as exc:  # UnicodeDecodeError too
            leading = _leading_config(text, exc)
            if leading is not None:
                log.warning(
                    "%s holds a whole config followed by %d bytes of an older, longer one (two "
                    "in-place writes overlapped); reading the whole one",
                    self.paths.config,
                    len(text) - leading[1],
                )
                return leading[0]
            kept = self._backup() if _cut_short(text, exc) else None
            if kept is None:
                raise ProtocolsError(
                    f"{self.paths.config} is not valid JSON (for {PARSE_RETRY_S} s): {exc}"
                ) from None
            log.warning(
                "%s is cut short (%d bytes; a writer killed mid-write?); using swarm's last "
                "copy, %s, until the next change writes it whole",
                self.paths.config,
                len(text),
                self.paths.config_backup,
            )
            return kept

    @redo_if_lock_lost
    def update(self, change: Callable[[TeamConfig], TeamConfig]) -> TeamConfig:
        """Apply `change` to the current config under the lock and write the result."""
        if not self.exists():
            raise TeamNotFound(f"team {self.paths.team!r} not found (no {self.paths.config})")
        with FileGuard(self.paths.config, keep_lock_dir=True):
            config = change(self._read())
            write_json(self.paths.config, config.to_json_dict(), self.durability)
            self._keep_backup(config)
        return config

    def _keep_backup(self, config: TeamConfig) -> None:
        """The copy `_read` falls back on when config.json was cut short by its writer.

        Written under config.json's lock, as the change it copies: written after the lock's
        release, two swarm writers' copies could land in the other order, and the copy would
        then lack the later change (a member added: a reader falling back on the copy, and the
        next change written from it, would drop that member)."""
        try:
            write_json(self.paths.config_backup, config.to_json_dict(), "process")
        except OSError as exc:  # a copy: never fail the change over it
            log.warning("could not keep a copy of %s: %s", self.paths.config, exc)

    def _backup(self) -> Any:
        """The copy `_keep_backup` wrote, parsed (None: there is none that parses)."""
        try:
            return json.loads(safefs.read_text(self.paths.config_backup))
        except (OSError, ValueError):
            return None

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
    ) -> Member:
        """Add a member (a new agent name: see `validate_name`). Refuses a duplicate name."""
        from protocols.team.model import Member, next_color

        validate_name(name, "agent name")
        added: list[Member] = []

        def change(config: TeamConfig) -> TeamConfig:
            if config.member(name) is not None:
                raise MemberExists(
                    f"team {self.paths.team!r} already has a member named {name!r}; "
                    "choose another name or remove the existing member first"
                )
            member = Member(
                agentId=agent_id(name, self.paths.team),
                name=name,
                agentType=agent_type,
                model=model,
                prompt=prompt,
                color=color or next_color(config),
                planModeRequired=plan_mode_required,
                joinedAt=now_ms(),
                tmuxPaneId=tmux_pane_id,
                cwd=str(Path(cwd).resolve()),
                subscriptions=[],
                backendType=backend_type,
                **extra,
            )
            added.append(member)
            return config.updated(members=[*config.members, member])

        self.update(change)
        ensure_file(self.paths.inbox(name), "[]", self.durability)
        return added[-1]  # the attempt that was committed (a lost lock means another try)

    def update_member(self, name: str, **changes: Any) -> Member:
        """Set fields of member `name` (spec names, e.g. ``isActive=False``); None removes a key."""
        result: list[Member] = []

        def change(config: TeamConfig) -> TeamConfig:
            current = self._require(config, name)
            new = current.updated(**changes)
            result.append(new)
            return config.updated(members=[new if m.name == name else m for m in config.members])

        self.update(change)
        return result[-1]

    def remove_member(self, name: str) -> Member:
        """Remove member `name` (never the lead). Its inbox file is kept for the record."""
        if name == LEAD_NAME:
            raise ProtocolsError("the lead member 'team-lead' cannot be removed; delete the team")
        removed: list[Member] = []

        def change(config: TeamConfig) -> TeamConfig:
            removed.append(self._require(config, name))
            return config.updated(members=[m for m in config.members if m.name != name])

        self.update(change)
        return removed[-1]

    def _require(self, config: TeamConfig, name: str) -> Member:
        return config.require(name)


def _member_entries(raw: Any) -> list[dict[str, Any]] | None:
    """The member entries of a parsed config.json that has the shape `TeamFile.entries` trusts
    (None: it has not; the model is to judge it). Types are JSON's own, checked exactly (a
    bool is no int: JSON's true is not a time); every member of a team checks every member's
    entry each time config.json changes, so this runs in a tight loop."""
    if type(raw) is not dict or not _has_keys(raw, _TEAM_KEYS):
        return None
    members = raw.get("members", [])
    if type(members) is not list:
        return None
    for member in members:
        if type(member) is not dict or not _has_keys(member, _MEMBER_KEYS):
            return None
        for key, kind in _OPTIONAL_KEYS:
            value = member.get(key)
            if value is not None and type(value) is not kind:
                return None
    return members


def _has_keys(raw: dict[str, Any], required: tuple[tuple[str, type], ...]) -> bool:
    for key, kind in required:  # noqa: SIM110 - a loop: all() over a generator costs more here
        if type(raw.get(key)) is not kind:
            return False
    return True


def _leading_config(text: str, exc: ValueError) -> tuple[dict[str, Any], int] | None:
    """A whole team config at the start of `text` and where it ends, when what follows it is
    the end of another, longer JSON document (the tail two overlapping in-place writes leave:
    it closes more than it opens and ends as a config ends, with ``}``); None for anything
    else, which stays an error."""
    if getattr(exc, "msg", "") != "Extra data":
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    rest = text[end:].strip()
    if not (isinstance(value, dict) and isinstance(value.get("members"), list)):
        return None
    closes_more = rest.count("}") + rest.count("]") > rest.count("{") + rest.count("[")
    if not rest.endswith("}") or not closes_more or len(rest) >= end:
        return None  # not the end of a longer document: another document, or garbage
    return value, end


def _cut_short(text: str, exc: ValueError) -> bool:
    """Whether `text` failed to parse because it ends too soon (empty, or stopped part way
    through), as a file left by a writer killed mid-write does."""
    if not text.strip():
        return True
    if getattr(exc, "msg", "").startswith("Unterminated string"):  # a string runs to the end
        return True
    position = getattr(exc, "pos", None)
    return isinstance(position, int) and position >= len(text.rstrip())


def _new_session_id() -> str:
    import uuid  # (here: uuid loads platform, ~2 ms of every ``swarm status``, which makes none)

    return str(uuid.uuid4())
