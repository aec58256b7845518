"""The roster in PostgreSQL gives the very records the team file gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.errors import InvalidName, MemberExists, ProtocolsError, TeamExists, TeamNotFound
from protocols.pg import Database, PgTeamFile
from protocols.team.file import TeamFile


def test_the_roster_has_the_team_files_keys_in_the_same_order(
    db: Database, paths, tmp_path: Path
) -> None:
    on_file, in_store = TeamFile(paths), PgTeamFile(db, "t")
    for team in (on_file, in_store):
        team.create(description="same", cwd=tmp_path, lead_session_id="s-1")
        team.add_member("alice", cwd=tmp_path, model="sonnet", prompt='it\'s "$(rm -rf /)"\n')
        team.add_member("bob", cwd=tmp_path, extraKey={"kept": ["as", "is"]})
        team.update_member("alice", isActive=False)
        team.remove_member("bob")
        team.add_member("carol", cwd=tmp_path)
    a, b = on_file.load().to_json_dict(), in_store.load().to_json_dict()
    assert list(a) == list(b)
    for field in ("name", "description", "leadAgentId", "leadSessionId"):
        assert a[field] == b[field]
    strip = ("joinedAt",)
    assert [{k: v for k, v in m.items() if k not in strip} for m in a["members"]] == [
        {k: v for k, v in m.items() if k not in strip} for m in b["members"]
    ]
    assert [list(m) for m in a["members"]] == [list(m) for m in b["members"]]


def test_roster_changes_are_refused_as_on_file(db: Database, pg_team: PgTeamFile) -> None:
    with pytest.raises(TeamExists):
        PgTeamFile(db, "t").create()
    with pytest.raises(MemberExists):
        pg_team.add_member("alice")
    with pytest.raises(InvalidName):
        pg_team.add_member("Robert'); DROP TABLE members;--")
    with pytest.raises(InvalidName):
        PgTeamFile(db, "x\ny").create()
    with pytest.raises(ProtocolsError, match="cannot be removed"):
        pg_team.remove_member("team-lead")
    with pytest.raises(TeamNotFound):
        PgTeamFile(db, "nope").load()
    assert pg_team.member_names() == ["team-lead", "alice", "bob", "carol"]


def test_deleting_a_team_deletes_what_it_had(db: Database, pg_team: PgTeamFile) -> None:
    from protocols.pg import PgMailbox, PgTaskBoard

    PgMailbox(db, "t").send("alice", "hi", sender="bob")
    PgTaskBoard(db, "t").create("a task")
    assert pg_team.delete()
    assert not pg_team.exists()
    left = db.run(
        lambda c: c.execute(
            "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM tasks)"
        ).fetchone()
    )
    assert left == (0,)
