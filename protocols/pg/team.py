"""`PgTeamFile`: a team and its roster in PostgreSQL, with `protocols.team.file.TeamFile`'s methods.

The team's own keys are one ``json`` document in ``teams``; each member is a ``json`` document
in ``members``, in the order they joined. `load` puts them together into the same `TeamConfig`
(key order included) that ``config.json`` would give. Every change is one transaction; a
retried `add_member` (after a commit whose answer was lost) finds its own row, by a token, and
is not refused as a duplicate. A member's lease (`protocols.pg.leases`) lives on its row.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from protocols.clock import now_ms
from protocols.errors import (
    MemberExists,
    ProtocolsError,
    TeamExists,
    TeamNotFound,
    UnknownMember,
)
from protocols.names import LEAD_NAME, agent_id, unknown_member_text, validate_name
from protocols.pg.columns import document, text
from protocols.pg.database import Database
from protocols.pg.notify import notify
from protocols.team.model import Member, TeamConfig, next_color

Conn = psycopg.Connection[Any]


class PgTeamFile:
    """One team's roster in the store at `db`."""

    def __init__(self, db: Database, team: str) -> None:
        self.db = db
        self.team = text(team, "team name")

    @property
    def name(self) -> str:
        return self.team

    def exists(self) -> bool:
        return self.db.run(
            lambda c: (
                c.execute("SELECT 1 FROM teams WHERE name = %s", [self.team]).fetchone() is not None
            ),
            "team exists",
        )

    def create(
        self,
        description: str | None = None,
        cwd: str | Path = ".",
        lead_model: str | None = None,
        lead_session_id: str | None = None,
    ) -> TeamConfig:
        """Create the team with its lead member. Refuses an invalid or existing name."""
        validate_name(self.team, "team name")
        created = now_ms()
        lead = Member(
            agentId=agent_id(LEAD_NAME, self.team),
            name=LEAD_NAME,
            agentType=LEAD_NAME,
            model=lead_model,
            joinedAt=created,
            tmuxPaneId="",
            cwd=str(Path(cwd).resolve()),
            subscriptions=[],
        )
        config = TeamConfig(
            name=self.team,
            description=description,
            createdAt=created,
            leadAgentId=agent_id(LEAD_NAME, self.team),
            leadSessionId=lead_session_id or str(uuid.uuid4()),
            members=[lead],
        )
        token = secrets.token_hex(8)
        head = config.to_json_dict()

        def work(conn: Conn) -> TeamConfig:
            inserted = conn.execute(
                "INSERT INTO teams (name, config) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [self.team, document(head)],
            ).rowcount
            if inserted:
                _insert_member(conn, self.team, lead, token)
                return config
            mine = conn.execute(
                "SELECT 1 FROM members WHERE team = %s AND name = %s AND join_token = %s",
                [self.team, LEAD_NAME, token],
            ).fetchone()
            if mine is None:  # not our own earlier attempt
                raise TeamExists(f"team {self.team!r} already exists in the store")
            return _load(conn, self.team)

        return self.db.run(work, "create team")

    def load(self) -> TeamConfig:
        return self.db.run(lambda c: _load(c, self.team), "load team")

    def members(self) -> list[Member]:
        """The current members (`TeamFile.members`)."""
        return self.load().members

    def entries(self) -> list[dict[str, Any]]:
        """The members' entries as config.json would have them."""
        return [m.to_json_dict() for m in self.load().members]

    def entry(self, name: str) -> dict[str, Any] | None:
        """Member `name`'s entry, or None."""
        found = self.load().member(name)
        return found.to_json_dict() if found is not None else None

    def is_active(self, name: str) -> bool | None:
        """Member `name`'s ``isActive`` (None: no such member)."""
        found = self.load().member(name)
        return found.isActive if found is not None else None

    def require_entry(self, name: str) -> dict[str, Any]:
        """Member `name`'s entry; `UnknownMember` naming the members if there is none."""
        config = self.load()
        found = config.member(name)
        if found is None:
            names = [m.name for m in config.members]
            raise UnknownMember(unknown_member_text(name, self.team, names))
        return found.to_json_dict()

    def member_names(self) -> list[str]:
        return self.db.run(lambda c: roster(c, self.team), "member names")

    def delete(self) -> bool:
        """Delete the team and everything of it (messages, tasks, requests); False if none.
        Each member is notified (when the deletion commits), so a waiting teammate finds its
        team gone at once rather than at its next heartbeat."""

        def work(conn: Conn) -> bool:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM members WHERE team = %s", [self.team]
                ).fetchall()
            ]
            deleted = conn.execute("DELETE FROM teams WHERE name = %s", [self.team]).rowcount > 0
            for name in names if deleted else []:
                notify(conn, self.team, name)
            return deleted

        return self.db.run(work, "delete team")

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
        validate_name(name, "agent name")
        token = secrets.token_hex(8)
        joined = now_ms()
        where = str(Path(cwd).resolve())

        def work(conn: Conn) -> Member:
            config = _load(conn, self.team, lock=True)
            existing = config.member(name)
            if existing is not None:
                if _join_token(conn, self.team, name) == token:
                    return existing  # our own earlier attempt committed
                raise MemberExists(
                    f"team {self.team!r} already has a member named {name!r}; "
                    "choose another name or remove the existing member first"
                )
            member = Member(
                agentId=agent_id(name, self.team),
                name=name,
                agentType=agent_type,
                model=model,
                prompt=prompt,
                color=color or next_color(config),
                planModeRequired=plan_mode_required,
                joinedAt=joined,
                tmuxPaneId=tmux_pane_id,
                cwd=where,
                subscriptions=[],
                backendType=backend_type,
                **extra,
            )
            _insert_member(conn, self.team, member, token)
            return member

        return self.db.run(work, "add member")

    def update_member(self, name: str, **changes: Any) -> Member:
        """Set fields of member `name` (spec names, e.g. ``isActive=False``); None removes a key."""

        def work(conn: Conn) -> Member:
            current = _load(conn, self.team, lock=True).require(name)
            new = current.updated(**changes)
            conn.execute(
                "UPDATE members SET data = %s WHERE team = %s AND name = %s",
                [document(new.to_json_dict()), self.team, name],
            )
            return new

        return self.db.run(work, "update member")

    def remove_member(self, name: str) -> Member:
        """Remove member `name` (never the lead). Its messages stay in the history."""
        if name == LEAD_NAME:
            raise ProtocolsError("the lead member 'team-lead' cannot be removed; delete the team")

        def work(conn: Conn) -> Member:
            member = _load(conn, self.team, lock=True).require(name)
            conn.execute("DELETE FROM members WHERE team = %s AND name = %s", [self.team, name])
            return member

        return self.db.run(work, "remove member")

    def update(self, change: Callable[[TeamConfig], TeamConfig]) -> TeamConfig:
        """Apply `change` to the current config in one transaction (the team row locked) and
        store the result: the team's keys, and members added, changed or removed."""

        def work(conn: Conn) -> TeamConfig:
            before = _load(conn, self.team, lock=True)
            after = change(before)
            if after.name != self.team:
                raise ProtocolsError(f"a team cannot be renamed ({self.team!r} to {after.name!r})")
            conn.execute(
                "UPDATE teams SET config = %s WHERE name = %s",
                [document(_head(after)), self.team],
            )
            kept = set(after.member_names())
            for member in before.members:
                if member.name not in kept:
                    conn.execute(
                        "DELETE FROM members WHERE team = %s AND name = %s",
                        [self.team, member.name],
                    )
            for member in after.members:
                old = before.member(member.name)
                if old is None:
                    _insert_member(conn, self.team, member, secrets.token_hex(8))
                elif old.to_json_dict() != member.to_json_dict():
                    conn.execute(
                        "UPDATE members SET data = %s WHERE team = %s AND name = %s",
                        [document(member.to_json_dict()), self.team, member.name],
                    )
            return after

        return self.db.run(work, "update team")


def _head(config: TeamConfig) -> dict[str, Any]:
    """The team's keys in order, with an empty ``members`` holding its place."""
    return {**config.to_json_dict(), "members": []}


def _insert_member(conn: Conn, team: str, member: Member, token: str) -> None:
    conn.execute(
        "INSERT INTO members (team, name, data, join_token) VALUES (%s, %s, %s, %s)",
        [team, text(member.name, "member name"), document(member.to_json_dict()), token],
    )


def _join_token(conn: Conn, team: str, name: str) -> str | None:
    row = conn.execute(
        "SELECT join_token FROM members WHERE team = %s AND name = %s", [team, name]
    ).fetchone()
    return row[0] if row else None


def _load(conn: Conn, team: str, lock: bool = False) -> TeamConfig:
    """The team's config; with `lock`, its row is locked until the transaction ends (changes
    to the roster are one at a time, as under config.json's lock)."""
    row = conn.execute(
        "SELECT config FROM teams WHERE name = %s" + (" FOR NO KEY UPDATE" if lock else ""), [team]
    ).fetchone()
    if row is None:
        raise TeamNotFound(f"team {team!r} not found in the store")
    raw = dict(row[0])
    members = conn.execute(
        "SELECT data FROM members WHERE team = %s ORDER BY position", [team]
    ).fetchall()
    raw["members"] = [m[0] for m in members]
    return TeamConfig.from_json_dict(raw)


def roster(conn: Conn, team: str) -> list[str]:
    """The members' names in order; `TeamNotFound` if there is no such team (a team always
    has its lead)."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM members WHERE team = %s ORDER BY position", [team]
        ).fetchall()
    ]
    if not names:
        raise TeamNotFound(f"team {team!r} not found in the store")
    return names


def require_member(conn: Conn, team: str, name: str) -> None:
    """`UnknownMember` (naming the members) unless `name` is on `team`'s roster."""
    names = roster(conn, team)
    if name not in names:
        raise UnknownMember(f"{unknown_member_text(name, team, names)} (or '*' for everyone)")
