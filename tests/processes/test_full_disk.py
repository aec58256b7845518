"""A full disk (issue 13, item 10), on a real, small tmpfs mounted for the test.

Every command fails with one clear line and leaves nothing half made; an archive append that
runs out of space leaves no torn line (and a torn line left by a writer that died is cut before
the next append); compaction that keeps running out of space loses and duplicates nothing; a
teammate whose disk fills while it works keeps its outcome, says what is wrong, and writes it
down once there is room again.
"""

from __future__ import annotations

import errno
import json
import math
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Processes, swarm, teammate_argv, wait_for

from protocols.fs.jsonio import append_durably
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


class SmallDisk:
    """A tmpfs of `size` mounted at `path`, and a filler file that takes what is free."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def fill(self, leave_pages: int = 0) -> None:
        """Take every free byte but `leave_pages` pages of 4 KiB."""
        self.free()
        st = os.statvfs(self.path)
        size = max(0, (st.f_bavail - leave_pages) * st.f_frsize)
        with open(self.filler, "wb") as out:
            try:
                out.write(b"\0" * size)
                out.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    root = mount / "config"
    root.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error: "), result.stderr
    return lines[0]


def test_commands_on_a_full_disk_fail_in_one_line_and_make_nothing_half(
    disk: SmallDisk, tmp_path: Path
) -> None:
    root = disk.path / "config"
    assert swarm("team", "create", "t", team=None).returncode == 0
    TeamFile(TeamPaths(root, "t")).add_member("alice", cwd=tmp_path)
    inbox_before = (root / "teams/t/inboxes/alice.json").read_bytes()
    disk.fill()
    assert "No space left on device" in one_line_error(swarm("team", "create", "u", team=None))
    assert not (root / "teams" / "u").exists() and not (root / "tasks" / "u").exists()
    assert "No space left" in one_line_error(swarm("send", "alice", "hello " * 2000))
    assert (root / "teams/t/inboxes/alice.json").read_bytes() == inbox_before
    one_line_error(swarm("task", "add", "x" * 5000))
    assert TaskBoard(TeamPaths(root, "t")).list() == []
    assert swarm("status").returncode == 0  # reading needs no space
    disk.free()
    assert swarm("team", "create", "u", team=None).returncode == 0
    assert swarm("send", "alice", "hello").returncode == 0


def test_an_append_that_runs_out_of_space_leaves_no_torn_line(disk: SmallDisk) -> None:
    archive = disk.path / "archive.jsonl"
    append_durably(archive, b'{"n": 1}\n')
    disk.fill(leave_pages=1)
    big = (json.dumps({"n": 2, "pad": "x" * 20_000}) + "\n").encode()
    with pytest.raises(OSError) as failed:
        append_durably(archive, big)
    assert failed.value.errno == errno.ENOSPC
    assert archive.read_bytes() == b'{"n": 1}\n'  # cut back at once
    disk.free()
    with open(archive, "ab") as out:  # a writer that died half way through a line
        out.write(b'{"n": 3, "torn')
    append_durably(archive, b'{"n": 4}\n')
    assert [json.loads(line)["n"] for line in archive.read_bytes().splitlines()] == [1, 4]


def test_compaction_that_keeps_running_out_of_space_loses_and_duplicates_nothing(
    disk: SmallDisk, tmp_path: Path
) -> None:
    root = disk.path / "config"
    paths = TeamPaths(root, "t")
    team = TeamFile(paths)
    team.create(cwd=tmp_path)
    team.add_member("alice", cwd=tmp_path)
    mailbox = Mailbox(paths, compact_after=0)
    rng = random.Random(13)
    acknowledged: list[str] = []
    failures = 0
    for n in range(40):
        mailbox.send("alice", f"message {n} " + "y" * rng.randrange(4000, 12000), sender="bob",
                     message_id=f"m{n}")  # fmt: skip
        acknowledged.append(f"m{n}")
        unread = mailbox.read_unread("alice")
        pages = math.ceil(paths.inbox("alice").stat().st_size / 4096)
        disk.fill(leave_pages=pages + rng.randrange(-1, 2))  # about what compaction needs
        try:
            mailbox.mark_read("alice", unread)
        except OSError:
            failures += 1
        disk.free()
    mailbox.mark_read("alice", mailbox.read_unread("alice"))
    mailbox.compact("alice")
    assert failures > 0, "the disk never ran out of space: this test proved nothing"
    stored = [e.id for e in mailbox.peek_all("alice")]
    assert sorted(stored) == sorted(acknowledged)  # every acknowledged one, once
    for line in (paths.inbox_archive("alice")).read_bytes().splitlines():
        json.loads(line)  # no torn line swallowed another
    json.loads(paths.inbox("alice").read_text())


def test_a_teammate_on_a_full_disk_survives_and_finishes_once_there_is_room(
    disk: SmallDisk, tmp_path: Path
) -> None:
    root = disk.path / "config"
    paths = TeamPaths(root, "t")
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", team=None).returncode == 0
    TeamFile(paths).add_member("alice", cwd=work)
    processes = Processes(work)
    try:
        alice = processes.start(teammate_argv("alice"), {**os.environ, "SWARM_LOCK_TIMEOUT": "2"})
        gate = "while [ ! -e go ]; do sleep 0.02; done; echo done > out.txt"
        TaskBoard(paths).create("wait for go", metadata={"command": gate})
        wait_for(lambda: TaskBoard(paths).require("1").owner == "alice", "alice to take #1")
        disk.fill()
        (work / "go").touch()
        wait_for(lambda: (work / "out.txt").exists(), "the command to run")
        task = TaskBoard(paths).require("1")
        assert task.status == "in_progress" and alice.poll() is None
        disk.free()
        wait_for(lambda: TaskBoard(paths).require("1").status == "completed", "#1 written down")
        mailbox = Mailbox(paths)
        wait_for(
            lambda: [e for e in mailbox.read_all("team-lead") if '"completedTaskId":"1"' in e.text],
            "the completion report",
        )
        assert alice.poll() is None
        assert (work / "out.txt").read_text() == "done\n"  # the work ran once
    finally:
        processes.close()
