"""A team's roster on every store: members added, changed and removed as Claude Code's team
file has them, duplicates, strangers and the lead's removal refused."""

from __future__ import annotations

import pytest

from protocols.errors import (
    InvalidName,
    MemberExists,
    ProtocolsError,
    TeamExists,
    TeamNotFound,
    UnknownMember,
)
from protocols.paths import TeamPaths
from protocols.store.contract import StoreContract
from protocols.store.selection import open_store


def test_roster_changes_that_cannot_be_are_refused(store: StoreContract) -> None:
    team = store.team_file()
    with pytest.raises(TeamExists):
        team.create()
    with pytest.raises(MemberExists, match="already has a member named 'alice'"):
        team.add_member("alice")
    with pytest.raises(InvalidName):
        team.add_member("Robert'); DROP TABLE members;--")
    with pytest.raises(UnknownMember, match="members are: team-lead, alice, bob, carol"):
        team.update_member("zed", isActive=True)
    with pytest.raises(ProtocolsError, match="cannot be removed"):
        team.remove_member("team-lead")
    assert team.member_names() == ["team-lead", "alice", "bob", "carol"]


def test_a_team_that_is_not_there_is_a_clear_error(
    store: StoreContract, store_paths: TeamPaths
) -> None:
    elsewhere = open_store(TeamPaths(store_paths.root, "nope", store=store_paths.store))
    assert not elsewhere.team_exists() and store.team_exists()
    with pytest.raises(TeamNotFound, match="team 'nope' not found"):
        elsewhere.team_file().load()


def test_members_are_changed_and_removed(store: StoreContract) -> None:
    team = store.team_file()
    team.update_member("bob", isActive=False, tmuxPaneId="%3", pid=1234)
    bob = team.load().member("bob")
    assert bob is not None and bob.model_extra is not None
    assert bob.isActive is False and bob.tmuxPaneId == "%3" and bob.model_extra["pid"] == 1234
    assert team.is_active("bob") is False and team.is_active("nobody") is None
    team.update_member("bob", isActive=None)
    assert team.is_active("bob") is None and "isActive" not in team.require_entry("bob")
    assert team.remove_member("bob").name == "bob"
    assert team.member_names() == ["team-lead", "alice", "carol"]
    assert [m.name for m in team.members()] == ["team-lead", "alice", "carol"]
    assert team.entry("bob") is None


def test_update_applies_a_change_of_the_whole_config(store: StoreContract) -> None:
    team = store.team_file()
    after = team.update(
        lambda c: c.updated(
            description="new",
            members=[m.updated(model="opus") if m.name == "bob" else m for m in c.members[:3]],
        )
    )
    assert team.load().to_json_dict() == after.to_json_dict()
    assert team.member_names() == ["team-lead", "alice", "bob"]
    assert team.load().require("bob").model == "opus"
    assert team.load().description == "new"
