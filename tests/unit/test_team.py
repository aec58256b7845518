"""The team file: Claude Code's layout, round-robin colors, unknown keys kept on rewrite, and a
file rewritten in place or cut short (the roster's rules on every store are in
tests/contract)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from protocols.errors import ProtocolsError, TeamExists
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


def test_create_writes_claude_codes_team_layout(paths: TeamPaths, tmp_path: Path) -> None:
    config = TeamFile(paths).create(description="Working on X", cwd=tmp_path, lead_model="opus")
    raw = paths.config.read_text()
    assert not raw.endswith("\n")
    data = json.loads(raw)
    assert list(data) == [
        "name",
        "description",
        "createdAt",
        "leadAgentId",
        "leadSessionId",
        "members",
    ]
    assert data["leadAgentId"] == "team-lead@t"
    (lead,) = data["members"]
    assert list(lead) == [
        "agentId",
        "name",
        "agentType",
        "model",
        "joinedAt",
        "tmuxPaneId",
        "cwd",
        "subscriptions",
    ]
    assert lead["name"] == "team-lead" and lead["tmuxPaneId"] == "" and lead["subscriptions"] == []
    assert config.createdAt == lead["joinedAt"]
    assert paths.inbox("team-lead").read_text() == "[]"
    assert paths.tasks_dir.is_dir() and paths.tasks_lock_target.exists()


def test_creating_an_existing_team_is_refused_and_keeps_it(paths: TeamPaths) -> None:
    TeamFile(paths).create(description="first")
    with pytest.raises(TeamExists):
        TeamFile(paths).create(description="second")
    assert TeamFile(paths).load().description == "first"


def test_colors_are_handed_out_round_robin_after_the_leads_red(team: TeamFile) -> None:
    colors = [m.color for m in team.load().members]
    assert colors == [None, "blue", "green", "yellow"]


def test_colors_in_use_are_skipped_until_all_are_taken(team: TeamFile, tmp_path: Path) -> None:
    team.remove_member("carol")  # lead, alice (blue), bob (green): yellow is next and free
    assert team.add_member("dave", cwd=tmp_path).color == "yellow"
    team.remove_member("alice")  # blue is free again; the rotation goes on from the count
    names = ["e1", "e2", "e3", "e4", "e5"]
    colors = [team.add_member(n, cwd=tmp_path).color for n in names]
    assert colors == ["purple", "orange", "pink", "cyan", "blue"]
    assert team.add_member("e6", cwd=tmp_path).color == "red"  # all taken: plain round robin


def test_member_entries_have_claude_codes_keys_in_order(team: TeamFile) -> None:
    alice = json.loads(team.paths.config.read_text())["members"][1]
    assert list(alice) == [
        "agentId",
        "name",
        "agentType",
        "color",
        "planModeRequired",
        "joinedAt",
        "tmuxPaneId",
        "cwd",
        "subscriptions",
    ]
    assert alice["agentId"] == "alice@t"


def test_unknown_keys_written_by_others_survive_a_rewrite(team: TeamFile, tmp_path: Path) -> None:
    data = json.loads(team.paths.config.read_text())
    data["hiddenPaneIds"] = ["%9"]
    data["members"][1]["futureKey"] = {"x": 1}
    team.paths.config.write_text(json.dumps(data, indent=2))
    team.add_member("dave", cwd=tmp_path)
    after = json.loads(team.paths.config.read_text())
    assert after["hiddenPaneIds"] == ["%9"]
    assert after["members"][1]["futureKey"] == {"x": 1}
    assert list(after)[-1] == "hiddenPaneIds"


def test_a_broken_team_file_is_a_clear_error(paths: TeamPaths) -> None:
    TeamFile(paths).create()
    paths.config.write_text('{"name": nope}')  # damaged, not cut short by a killed writer
    with pytest.raises(ProtocolsError, match="not valid JSON"):
        TeamFile(paths).load()


def test_a_config_rewritten_in_place_is_waited_for_not_an_error(paths: TeamPaths) -> None:
    """Claude Code truncates config.json and writes it again (no lock, no rename): a reader
    that catches it empty waits for the rest instead of failing."""
    team = TeamFile(paths)
    team.create()
    team.add_member("alice")
    whole = paths.config.read_text()
    paths.config.write_text("")  # the moment after Claude Code's truncation
    writer = threading.Timer(0.1, lambda: paths.config.write_text(whole))
    writer.start()
    try:
        assert TeamFile(paths).load().member_names() == ["team-lead", "alice"]
    finally:
        writer.join()


def test_a_config_cut_short_by_a_killed_writer_is_read_from_swarms_copy(
    team: TeamFile, paths: TeamPaths
) -> None:
    """Claude Code rewrites config.json in place; killed part way (a --force stop), it leaves
    the file empty or cut short. swarm reads its own copy of the last config it wrote instead,
    and its next change writes config.json whole again. Garbage is still an error."""
    names = ["team-lead", "alice", "bob", "carol"]
    full = paths.config.read_text()
    inside_a_string = full[: full.index('"cwd": "') + 12]
    after_a_comma = full[: full.index('"subscriptions"')]
    for cut in (inside_a_string, after_a_comma, ""):
        paths.config.write_text(cut)
        assert TeamFile(paths).load().member_names() == names
    TeamFile(paths).update_member("alice", isActive=True)
    assert json.loads(paths.config.read_text())["members"][1]["isActive"] is True
    paths.config.write_text('{"name": "t", oops}')
    with pytest.raises(ProtocolsError, match="not valid JSON"):
        TeamFile(paths).load()


def test_overlapping_in_place_writes_leave_a_tail_and_the_whole_config_is_read(
    team: TeamFile, paths: TeamPaths, caplog: pytest.LogCaptureFixture
) -> None:
    """Two of Claude Code's in-place writes that overlap (each truncates, then writes from the
    start) leave the shorter config whole, followed by the tail of the longer one: the whole
    config is read, with a warning, and swarm's next change writes the file whole again. Other
    extra data is still an error."""
    longer = paths.config.read_text()
    TeamFile(paths).remove_member("carol")
    shorter = paths.config.read_text()
    assert len(shorter) < len(longer)
    paths.config.write_text(shorter + longer[len(shorter) :])  # as the two writes leave it
    with caplog.at_level("WARNING", logger="protocols.team.file"):
        assert TeamFile(paths).load().member_names() == ["team-lead", "alice", "bob"]
    assert "two in-place writes overlapped" in caplog.text
    TeamFile(paths).update_member("alice", isActive=True)
    assert json.loads(paths.config.read_text())["members"][1]["isActive"] is True
    for extra in ("garbage", '{"name": "x", "members": []}'):  # not a tail: still an error
        paths.config.write_text(shorter + extra)
        with pytest.raises(ProtocolsError, match="not valid JSON"):
            TeamFile(paths).load()


def test_swarms_copy_is_written_under_the_lock_of_the_change_it_copies(
    paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two swarm writers' copies must land in the order of their changes: a copy written after
    the lock's release can lose to an older one, and a reader falling back on it (a config
    cut short) would then miss a member added meanwhile."""
    import protocols.team.file as team_module
    from protocols.fs.locks import held_guard

    copies: list[tuple[list[str], bool]] = []
    write_json = team_module.write_json

    def watched(path: Path, data: Any, *args: Any) -> None:
        if path == paths.config_backup:
            guard = held_guard(paths.config)
            copies.append(([m["name"] for m in data["members"]], bool(guard and guard.held)))
        write_json(path, data, *args)

    monkeypatch.setattr(team_module, "write_json", watched)
    team = TeamFile(paths)
    team.create(description="copies")
    team.add_member("alice")
    team.update_member("alice", isActive=True)
    team.remove_member("alice")
    assert copies == [
        (["team-lead"], True),
        (["team-lead", "alice"], True),
        (["team-lead", "alice"], True),
        (["team-lead"], True),
    ]
    assert json.loads(paths.config_backup.read_text()) == json.loads(paths.config.read_text())


def test_entries_are_the_raw_members_and_copies(team: TeamFile) -> None:
    entries = team.entries()
    assert [e["name"] for e in entries] == ["team-lead", "alice", "bob", "carol"]
    assert entries == [m.to_json_dict() for m in team.load().members]
    entries[1]["name"] = "changed"
    alice = team.entry("alice")
    assert alice is not None and alice["name"] == "alice" and team.entry("nobody") is None


def test_entries_of_an_odd_file_come_through_the_model(team: TeamFile, paths: TeamPaths) -> None:
    raw = json.loads(paths.config.read_text(encoding="utf-8"))
    raw["members"][1]["joinedAt"] = str(raw["members"][1]["joinedAt"])  # the model takes it
    raw["members"][2]["isActive"] = [1]  # the model refuses it
    paths.config.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ProtocolsError, match=r"(?s)not a valid team file.*isActive"):
        team.member_names()
    raw["members"][2]["isActive"] = True
    paths.config.write_text(json.dumps(raw), encoding="utf-8")
    alice = team.entry("alice")
    assert alice is not None and isinstance(alice["joinedAt"], int)


@pytest.mark.parametrize(
    "members", [[{"name": "x"}], "not a list", [["name", "x"]], [{"agentId": "a", "name": 5}]]
)
def test_entries_of_a_broken_member_list_name_the_file(
    team: TeamFile, paths: TeamPaths, members: object
) -> None:
    raw = json.loads(paths.config.read_text(encoding="utf-8"))
    raw["members"] = members
    paths.config.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ProtocolsError, match=r"config\.json is not a valid team file"):
        team.entries()
