"""Planted symbolic links are reported, never followed (issue 13, item 1).

A hostile process that can write in a team's directories plants a link where swarm keeps a file
or a directory, pointing at a file or directory of the user's outside the config root. Every
`swarm` command and every teammate must then refuse with an error that names the link, and
leave everything outside the config root exactly as it was: same bytes, same times, nothing new.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import swarm, teammate_argv, wait_for

from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

VICTIM_TEXT = (
    '[{"from": "mallory", "text": "outside secret", "timestamp": "2026-01-01T00:00:00.000Z"}]'
)


def tree(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every entry under `root`: content (None for a directory), mtime and inode."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            st = path.lstat()
            content = None if path.is_dir() else path.read_bytes()
            found[str(path.relative_to(root))] = (content, st.st_mtime_ns, st.st_ino)
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory of the user's, outside the config root, with files worth protecting."""
    victim = tmp_path / "outside"
    victim.mkdir()
    for name in ("flock", "instance", "archive", "log", "messages.json", "task.json", "config"):
        (victim / name).write_text(VICTIM_TEXT)
    (victim / "dir").mkdir()
    (victim / "dir" / "keep.txt").write_text("keep me")
    return victim


@pytest.fixture
def team_t(config_root: Path, tmp_path: Path) -> TeamPaths:
    assert swarm("team", "create", "t", "--cwd", str(tmp_path), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).add_member("alice", cwd=tmp_path)
    TeamFile(paths).add_member("bob", cwd=tmp_path)
    return paths


def plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():
        os.rmdir(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


def refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != 0, result.stdout + result.stderr
    assert "symbolic link" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


FILE_LINKS = {
    # where the link is planted (relative to the team dir or root), and the command that touches it
    "inbox lock file": (
        "teams/t/inboxes/.swarm-locks/alice.json.flock",
        "flock",
        ["send", "alice", "hi"],
    ),
    "an inbox": ("teams/t/inboxes/bob.json", "messages.json", ["inbox", "bob"]),
    "an inbox, sent to": ("teams/t/inboxes/bob.json", "messages.json", ["send", "bob", "hi"]),
    "the config": ("teams/t/config.json", "config", ["status"]),
    "a task file": ("tasks/t/1.json", "task.json", ["task", "show", "1"]),
    "the task list lock": ("tasks/t/.lock", "flock", ["task", "add", "x"]),
    "the highwatermark": ("tasks/t/.highwatermark", "flock", ["task", "add", "x"]),
    "the lead's inbox": ("teams/t/inboxes/team-lead.json", "messages.json", ["permissions"]),
}


@pytest.mark.parametrize("case", sorted(FILE_LINKS))
def test_a_link_in_place_of_a_file_is_refused_and_the_outside_file_untouched(
    case: str, team_t: TeamPaths, outside: Path
) -> None:
    where, victim, command = FILE_LINKS[case]
    before = tree(outside)
    plant(team_t.root / where, outside / victim)
    refused(swarm(*command))
    assert tree(outside) == before
    assert "outside secret" not in swarm("inbox", "bob").stdout


DIRECTORY_LINKS = {
    "the inboxes": ("teams/t/inboxes", ["send", "alice", "hi"]),
    "the task board": ("tasks/t", ["task", "add", "x"]),
    "the lock directory": ("teams/t/inboxes/.swarm-locks", ["send", "alice", "hi"]),
    "the temporary files": ("teams/t/inboxes/.swarm-tmp", ["send", "alice", "hi"]),
    "the team": ("teams/t", ["task", "list"]),
    "a lock": ("teams/t/inboxes/alice.json.lock", ["send", "alice", "hi"]),
}


@pytest.mark.parametrize("case", sorted(DIRECTORY_LINKS))
def test_a_link_in_place_of_a_directory_is_refused_and_the_outside_untouched(
    case: str, team_t: TeamPaths, outside: Path
) -> None:
    where, command = DIRECTORY_LINKS[case]
    link = team_t.root / where
    if case in ("the inboxes", "the task board", "the team"):
        # the real directory moves outside (as an attacker would move it) and a link replaces it
        os.rename(link, outside / "dir" / "moved")
        link.symlink_to(outside / "dir" / "moved")
    else:
        plant(link, outside / "dir")
    if case == "the temporary files":
        # writes under a lock put their temporary file beside the target; `.swarm-tmp/` is
        # for the unlocked ones, such as the first `[]` of an inbox that does not exist yet
        team_t.inbox("alice").unlink()
    before = tree(outside)
    refused(swarm(*command))
    assert tree(outside) == before


def test_archive_and_log_links_are_never_appended_to(
    team_t: TeamPaths, outside: Path, tmp_path: Path
) -> None:
    before = tree(outside)
    plant(team_t.inbox_archive("alice"), outside / "archive")
    mailbox = Mailbox(team_t, compact_after=0)
    mailbox.send("alice", "one", sender="team-lead")
    entries = mailbox.read_unread("alice")
    with pytest.raises(ProtocolsError, match="symbolic link"):
        mailbox.mark_read("alice", entries)  # compaction would append to the archive
    # the read mark was written first, as compaction does; the message stays in the live inbox
    assert [e.text for e in mailbox.read_all("alice")] == ["one"]
    plant(team_t.log("carol"), outside / "log")
    result = swarm(
        "spawn", "carol", "--prompt", "hi", "--backend", "subprocess", "--cwd", str(tmp_path)
    )
    refused(result)
    assert "carol" not in TeamFile(team_t).load().member_names()  # nothing half made
    assert tree(outside) == before


def test_a_teammate_refuses_a_linked_instance_file_and_truncates_nothing(
    team_t: TeamPaths, outside: Path, tmp_path: Path
) -> None:
    before = tree(outside)
    plant(team_t.team_dir / ".swarm-locks" / "alice.instance", outside / "instance")
    proc = subprocess.run(
        teammate_argv("alice"), cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert tree(outside) == before


def test_a_running_teammate_reports_a_planted_link_and_lives(
    team_t: TeamPaths, outside: Path, tmp_path: Path
) -> None:
    """Links planted while a teammate runs (its status file, a task file) are refused; the
    teammate keeps working the board."""
    proc = subprocess.Popen(
        teammate_argv("alice"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: (team_t.agent_status("alice")).exists(), "alice's status file")
        before = tree(outside)
        plant(team_t.agent_status("alice"), outside / "config")
        plant(team_t.tasks_dir / "7.json", outside / "task.json")
        result = swarm("task", "add", "after the links", "--command", "echo done > out.txt")
        assert result.returncode == 0, result.stderr
        wait_for(lambda: (tmp_path / "out.txt").exists(), "the task to run")
        assert proc.poll() is None
        assert tree(outside) == before
    finally:
        proc.kill()
        proc.wait(10)


def test_the_config_root_itself_may_be_a_link(tmp_path: Path) -> None:
    """Links above and at the root are the user's arrangement (a dotfiles checkout); only the
    team state below it is kept free of links."""
    real = tmp_path / "real-config"
    real.mkdir()
    linked = tmp_path / "linked-config"
    linked.symlink_to(real)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(linked)}
    created = subprocess.run(
        [sys.executable, "-m", "swarm", "team", "create", "viaLink".lower()],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    assert (real / "teams" / "vialink" / "config.json").exists()
    config = json.loads((real / "teams" / "vialink" / "config.json").read_text())
    assert config["name"] == "vialink"


def test_safefs_refuses_dot_dot_and_links_anywhere(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "a")
    assert safefs.read_text(tmp_path / "a" / "f") == "x"
    with pytest.raises(safefs.LinkRefused, match=str(tmp_path / "l")):
        safefs.read_text(tmp_path / "l" / "f")
    with pytest.raises(safefs.PathRefused):
        safefs.read_text(tmp_path / "a" / ".." / "a" / "f")
    (tmp_path / "a" / "g").symlink_to(tmp_path / "a" / "f")
    with pytest.raises(safefs.LinkRefused):
        safefs.open_path(tmp_path / "a" / "g", os.O_WRONLY | os.O_APPEND)
    with pytest.raises(safefs.LinkRefused):
        safefs.makedirs(tmp_path / "l" / "new")
    assert not (tmp_path / "a" / "new").exists()
