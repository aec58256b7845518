"""Doorbells (`protocols.fs.doorbell`): a watcher without inotify is woken by swarm's writes in
other processes, never writes into what it did not make, and cleans up after killed readers."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocols.fs.doorbell import BELL_DIR, Doorbell, ring
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.watch.inotify import Notifier
from protocols.watch.wakeup import InboxWatcher

WRITE = (
    "import sys\n"
    "from pathlib import Path\n"
    "from protocols.fs.jsonio import atomic_write_text\n"
    "atomic_write_text(Path(sys.argv[1]), sys.argv[2])\n"
)


@pytest.fixture
def no_inotify(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process cannot have an inotify instance (the user's 128 are used up)."""

    def used_up() -> Notifier:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(Notifier, "shared", staticmethod(used_up))


@pytest.fixture
def inboxes(tmp_path: Path) -> Path:
    folder = tmp_path / "inboxes"
    folder.mkdir()
    (folder / "alice.json").write_text("[]")
    return folder


def write_elsewhere(path: Path, text: str) -> None:
    """Another swarm process replaces `path` (an atomic write, which rings)."""
    subprocess.run([sys.executable, "-c", WRITE, str(path), text], check=True, timeout=60)


def bells_in(folder: Path) -> list[str]:
    return sorted(os.listdir(folder / BELL_DIR))


def test_a_watcher_without_inotify_is_rung_awake_by_another_process_write(
    no_inotify: None, inboxes: Path
) -> None:
    inbox = inboxes / "alice.json"
    # its own look at the files comes every 4 x 60 s: only the bell can wake it in time
    with InboxWatcher(inbox, rescan_s=600, poll_s=60) as watcher:
        assert watcher.degraded is not None and watcher.belled
        assert "doorbells" in watcher.degraded
        [bell] = bells_in(inboxes)
        assert bell.startswith("alice.json.")
        write_elsewhere(inboxes / "bob.json", "[1]")  # not its file: its bell does not ring
        started = time.monotonic()
        assert not watcher.wait(0.3)
        assert time.monotonic() - started >= 0.25
        write_elsewhere(inbox, "[2]")
        assert watcher.wait(30)
        assert watcher.take_touched(inboxes)
    assert bells_in(inboxes) == []  # taken down with the watcher


def test_a_directory_bell_rings_for_a_task_made_by_another_process(
    no_inotify: None, tmp_path: Path
) -> None:
    paths = TeamPaths(tmp_path, "t")
    board = TaskBoard(paths)
    board.create("first")
    script = (
        "import sys\nfrom pathlib import Path\nfrom protocols.paths import TeamPaths\n"
        "from protocols.tasks.board import TaskBoard\n"
        "TaskBoard(TeamPaths(Path(sys.argv[1]), 't')).create('second')\n"
    )
    with InboxWatcher(directories=(paths.tasks_dir,), rescan_s=600, poll_s=60) as watcher:
        assert watcher.belled
        subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=60)
        assert watcher.wait(30)
        assert watcher.take_touched(paths.tasks_dir)


def test_a_write_that_rings_no_bell_is_still_seen_by_the_watchers_own_look(
    no_inotify: None, inboxes: Path
) -> None:
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=600, poll_s=0.02) as watcher:
        with inbox.open("w") as handle:  # Claude Code writes in place: no bell
            handle.write("[3, 4]")
        assert watcher.wait(30)


def test_a_ring_never_writes_into_a_planted_file_or_through_a_link(
    inboxes: Path, tmp_path: Path
) -> None:
    folder = inboxes / BELL_DIR
    folder.mkdir()
    planted = folder / "alice.json.1-deadbeef"
    planted.write_text("keep")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    (folder / "alice.json.2-deadbeef").symlink_to(outside)
    (folder / "alice.json.3-deadbeef").mkdir()
    bell = Doorbell(inboxes, "alice.json").open()
    try:
        dir_fd = os.open(inboxes, os.O_RDONLY | os.O_DIRECTORY)
        try:
            assert ring(dir_fd, "alice.json") == 1  # the real bell only
        finally:
            os.close(dir_fd)
        assert bell.drain()
        assert planted.read_text() == "keep" and outside.read_text() == "keep"
    finally:
        bell.close()


HANG = (
    "import sys\n"
    "from pathlib import Path\n"
    "from protocols.fs.doorbell import Doorbell\n"
    "Doorbell(Path(sys.argv[1]), 'alice.json').open()\n"
    "print('hung', flush=True)\n"
    "sys.stdin.readline()\n"
)


@pytest.fixture
def killed_reader(inboxes: Path) -> Iterator[str]:
    """The bell of a reader killed with SIGKILL (it never took it down)."""
    reader = subprocess.Popen(
        [sys.executable, "-c", HANG, str(inboxes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline() == "hung\n"
    [bell] = bells_in(inboxes)
    os.kill(reader.pid, signal.SIGKILL)
    reader.wait(30)
    yield bell


def test_a_killed_readers_bell_is_removed_by_the_next_ring(
    inboxes: Path, killed_reader: str
) -> None:
    dir_fd = os.open(inboxes, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ring(dir_fd, "alice.json") == 0  # nobody to hear it
    finally:
        os.close(dir_fd)
    assert bells_in(inboxes) == []


def test_a_new_bell_clears_the_silent_ones_of_killed_readers(
    inboxes: Path, killed_reader: str
) -> None:
    bell = Doorbell(inboxes, "bob.json").open()
    try:
        assert bells_in(inboxes) == [bell.name]  # only the live one is left
    finally:
        bell.close()


def test_a_planted_link_in_place_of_the_bells_folder_is_never_followed(
    no_inotify: None, inboxes: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "alice.json.1-deadbeef").write_text("keep")
    (inboxes / BELL_DIR).symlink_to(outside)
    dir_fd = os.open(inboxes, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ring(dir_fd, "alice.json") == 0  # the link is not followed
    finally:
        os.close(dir_fd)
    assert (outside / "alice.json.1-deadbeef").read_text() == "keep"
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=600, poll_s=0.02) as watcher:
        assert watcher.degraded is not None and not watcher.belled  # no bells: it polls
        write_elsewhere(inbox, "[7]")
        assert watcher.wait(30)
    assert sorted(os.listdir(outside)) == ["alice.json.1-deadbeef"]  # nothing made there
