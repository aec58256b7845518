"""InboxWatcher and the process's inotify instance: what wakes a watcher, what does not, and
what is caught when an event never comes (a queue overflow, a directory made again, no inotify
at all). Every watch of a process, the task board's `DirWatch` included, is on one instance,
and watchers of one directory each hear only the events they asked for."""

from __future__ import annotations

import errno
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import wait_for

from protocols.fs import safefs
from protocols.fs.jsonio import atomic_write_text
from protocols.paths import TeamPaths
from protocols.watch import wakeup as watch_mod
from protocols.watch.dirwatch import DirWatch
from protocols.watch.inotify import IN_Q_OVERFLOW, Notifier
from protocols.watch.wakeup import InboxWatcher


def replace(path: Path, text: str) -> None:
    """swarm's atomic write: a temporary file renamed over `path` (a new inode)."""
    atomic_write_text(path, text)


def settled(watcher: InboxWatcher) -> None:
    """Forget what happened so far (events already queued are taken first)."""
    while watcher.wait(0.05):
        watcher.clear()


@pytest.fixture
def inboxes(tmp_path: Path) -> Path:
    directory = tmp_path / "inboxes"
    directory.mkdir()
    for name in ("alice", "bob"):
        (directory / f"{name}.json").write_text("[]")
    return directory


def test_a_replaced_inbox_wakes_its_watcher_every_time(inboxes: Path) -> None:
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=60) as watcher:
        assert watcher.degraded is None
        for n in range(3):  # the watch follows the file to its new inode each time
            settled(watcher)
            replace(inbox, json.dumps([n]))
            assert watcher.wait(10)
            assert watcher.take_touched(inboxes)


def test_an_in_place_write_wakes_its_watcher(inboxes: Path) -> None:
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=60) as watcher:
        settled(watcher)
        inbox.write_text('[{"from": "x"}]')  # Claude Code 2.1.88 writes in place
        assert watcher.wait(10)


def test_another_members_inbox_does_not_wake_the_watcher(inboxes: Path) -> None:
    alice = InboxWatcher(inboxes / "alice.json", rescan_s=60)
    bob = InboxWatcher(inboxes / "bob.json", rescan_s=60)
    with alice, bob:
        settled(alice)
        settled(bob)
        replace(inboxes / "bob.json", "[1]")
        assert bob.wait(10)  # bob's write has been delivered by now
        assert not alice.wait(0.2)


def test_an_inbox_that_does_not_exist_yet_is_heard_when_it_appears(inboxes: Path) -> None:
    later = inboxes / "carol.json"
    with InboxWatcher(later, rescan_s=60) as watcher:
        settled(watcher)
        replace(inboxes / "bob.json", "[2]")  # a neighbour: not carol
        assert not watcher.wait(0.2)
        replace(later, "[]")
        assert watcher.wait(10)
        settled(watcher)
        replace(later, "[3]")  # from now on carol's file itself is watched
        assert watcher.wait(10)


def test_a_deleted_inbox_wakes_its_watcher_and_is_watched_again_when_back(inboxes: Path) -> None:
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=60) as watcher:
        settled(watcher)
        inbox.unlink()
        assert watcher.wait(10)
        settled(watcher)
        replace(inbox, "[]")
        assert watcher.wait(10)


def test_a_directory_reports_which_names_changed(inboxes: Path) -> None:
    with InboxWatcher(directories=(inboxes,), rescan_s=60) as watcher:
        settled(watcher)
        watcher.take_changed(inboxes)
        replace(inboxes / "bob.json", "[4]")
        assert watcher.wait(10)
        names: set[str] = set()
        while not names >= {"bob.json"}:  # events may come in more than one batch
            changed = watcher.take_changed(inboxes)
            assert changed is not None
            names |= changed
            if not names >= {"bob.json"}:
                assert watcher.wait(10)
        assert "alice.json" not in names


@pytest.mark.parametrize("subdirectories", [True, False])
def test_subdirectories_are_news_only_when_asked_for(inboxes: Path, subdirectories: bool) -> None:
    with InboxWatcher(
        directories=(inboxes,), rescan_s=60, subdirectories=subdirectories
    ) as watcher:
        settled(watcher)
        watcher.take_changed(inboxes)
        (inboxes / "bob.json.lock").mkdir()  # a lock directory, as every claim makes
        (inboxes / ".bob.json.tmp-1").write_text("[5]")  # a write's temporary file
        replace(inboxes / "bob.json", "[5]")  # inotify keeps order: the mkdir is heard first
        names: set[str] = set()
        while "bob.json" not in names:
            assert watcher.wait(10)
            changed = watcher.take_changed(inboxes)
            assert changed is not None
            names |= changed
        assert ("bob.json.lock" in names) is subdirectories
        assert (".bob.json.tmp-1" in names) is subdirectories


def test_lost_events_wake_every_watcher_and_say_that_anything_may_have_changed(
    inboxes: Path,
) -> None:
    with InboxWatcher(inboxes / "alice.json", directories=(inboxes,), rescan_s=60) as watcher:
        settled(watcher)
        watcher.take_changed(inboxes)
        overflow = struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0)
        for callback, name in Notifier.shared()._handle(overflow):
            callback(name)
        assert watcher.wait(0)
        assert watcher.take_changed(inboxes) is None  # unknown: look at every inbox


def test_a_directory_made_again_is_watched_again_after_the_rescan(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    with InboxWatcher(directories=(tasks,), rescan_s=0.05) as watcher:
        settled(watcher)
        shutil.rmtree(tasks)
        # each wait ends at the 0.05 s rescan: wait again until the news comes (under load it
        # may take longer than one rescan), with a deadline
        wait_for(lambda: watcher.wait(10), "the watcher to hear that it went")
        tasks.mkdir()
        watcher.clear()
        watcher.wait(0.05)  # the safety-net rescan re-arms the watch
        settled(watcher)
        (tasks / "1.json").write_text("{}")
        wait_for(lambda: watcher.wait(10), "the watcher to hear of the new file")


def test_without_inotify_the_watcher_polls_and_still_sees_a_change(
    inboxes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def used_up() -> Notifier:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(Notifier, "shared", staticmethod(used_up))
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=60, poll_s=0.02) as watcher:
        assert watcher.degraded is not None and "max_user_instances" in watcher.degraded
        assert not watcher.wait(0.1)  # nothing changed: no wake-up
        replace(inbox, "[5]")
        assert watcher.wait(10)
        assert watcher.take_touched(inboxes)


def test_a_polling_watcher_takes_inotify_once_it_can(
    inboxes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Notifier.shared

    def used_up() -> Notifier:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(Notifier, "shared", staticmethod(used_up))
    monkeypatch.setattr(watch_mod, "RETRY_INOTIFY_S", 0.0)
    inbox = inboxes / "alice.json"
    with InboxWatcher(inbox, rescan_s=60, poll_s=0.02) as watcher:
        assert watcher.degraded is not None
        monkeypatch.setattr(Notifier, "shared", real)
        watcher.wait(0.1)
        assert watcher.degraded is None
        settled(watcher)
        replace(inbox, "[6]")
        assert watcher.wait(10)


ONE_PROCESS = """
import json
import os
import sys
from pathlib import Path

from protocols.watch.dirwatch import DirWatch
from protocols.watch.inotify import Notifier
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.watch.wakeup import InboxWatcher


def instances():
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return links.count("anon_inode:inotify")


paths = TeamPaths(Path(sys.argv[1]), "t")
board = TaskBoard(paths)
board.create("a")
board.list()
if not board._index.watch.available:
    print(json.dumps("no inotify instance free"))
    sys.exit(0)
seen = {"board only": [instances(), Notifier.shared().reading]}
with InboxWatcher(paths.inbox("alice"), directories=(paths.tasks_dir,)) as watcher:
    inboxes = DirWatch(str(paths.inboxes))
    inboxes.changes()
    board.create("b")
    tasks = [t.subject for t in board.list()]
    if watcher.degraded or not inboxes.available:
        print(json.dumps("no inotify instance free"))
        sys.exit(0)
    seen["and watchers"] = [instances(), Notifier.shared().reading]
seen["watchers gone"] = [instances(), Notifier.shared().reading]
seen["tasks"] = tasks
rebuilds = board._index.rebuilds
board.create("c")  # heard while nobody reads: the look reads the queue itself
seen["later"] = [[t.subject for t in board.list()], board._index.rebuilds - rebuilds]
print(json.dumps(seen))
"""


def test_every_watch_of_a_process_is_on_its_one_inotify_instance(
    paths: TeamPaths, config_root: Path
) -> None:
    """An inbox watcher, the task board's index and another directory watch: one instance (the
    user has 128 of them for every process, editors included). The reader thread reads only
    while a watcher waits for it: the board's index reads for itself when it looks."""
    safefs.makedirs(paths.inboxes)
    done = subprocess.run(
        [sys.executable, "-c", ONE_PROCESS, str(config_root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    if seen == "no inotify instance free":
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")
    assert seen == {
        "board only": [1, False],
        "and watchers": [1, True],
        "watchers gone": [1, False],
        "tasks": ["a", "b"],
        "later": [["a", "b", "c"], 0],  # from the event, not from a look at every file
    }


def test_a_directory_watch_and_an_inbox_watcher_of_one_directory_hear_their_own_events(
    inboxes: Path,
) -> None:
    watch = DirWatch(str(inboxes))
    assert watch.changes() is None  # the first look is a full one
    if not watch.available:
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")
    try:
        with InboxWatcher(directories=(inboxes,), rescan_s=60) as watcher:
            settled(watcher)
            watcher.take_changed(inboxes)
            assert watch.changes() == set()
            (inboxes / "bob.json").unlink()  # a removal: only the directory watch asked for it
            assert watch.changes() == {"bob.json"}  # delivered before it answers
            assert not watcher.changed.is_set()
            replace(inboxes / "alice.json", "[7]")
            assert watch.changes() == {"alice.json"}
            assert watcher.changed.is_set()  # the same event, delivered to both by then
            assert "alice.json" in (watcher.take_changed(inboxes) or set())
    finally:
        watch.close()


def test_a_directory_watch_armed_again_by_another_watcher_still_says_it_cannot_tell(
    tmp_path: Path,
) -> None:
    """A file written while the directory was gone was heard by nobody: whoever re-arms the
    shared watch, the directory watch answers None (look at everything), never 'nothing'."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    watch = DirWatch(str(tasks))
    watch.changes()
    if not watch.available:
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")
    try:
        assert watch.changes() == set()
        with InboxWatcher(directories=(tasks,), rescan_s=60) as watcher:
            settled(watcher)
            shutil.rmtree(tasks)
            assert watcher.wait(10)
            assert watch.changes() is None  # gone, and not there to watch again yet
            tasks.mkdir()
            (tasks / "1.json").write_text("{}")
            Notifier.shared().repair()  # what the inbox watcher's rescan does
            assert watch.changes() is None  # not set(): nobody heard 1.json written
            assert watch.changes() == set()
            (tasks / "2.json").write_text("{}")
            assert watch.changes() == {"2.json"}
    finally:
        watch.close()


def test_subscribers_of_one_directory_each_hear_hidden_names_only_if_they_asked(
    tmp_path: Path,
) -> None:
    """Hidden names (temporary files, private lock directories) are dropped undecoded for a
    subscriber that does not want them, never for its neighbours on the same directory, nor
    for a hidden file someone waits for there."""
    try:
        notifier = Notifier.shared()
    except OSError:
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")
    heard: dict[str, list[str | None]] = {"all": [], "visible": [], "waited": []}
    handles = [
        notifier.watch_dir(str(tmp_path), heard["visible"].append, passive=True, hidden=False),
        notifier.watch_dir(str(tmp_path), heard["all"].append, passive=True),
    ]
    try:
        (tmp_path / ".tmp-1").write_text("x")
        (tmp_path / "1.json").write_text("x")
        notifier.sync()
        assert set(heard["visible"]) == {"1.json"}
        assert set(heard["all"]) == {".tmp-1", "1.json"}
        notifier.unwatch(handles.pop())  # only the subscriber without hidden names is left
        handles.append(notifier.watch_file(str(tmp_path / ".later"), heard["waited"].append))
        (tmp_path / ".later").write_text("x")  # waited for through the directory's watch
        notifier.sync()
        assert heard["waited"] and set(heard["waited"]) == {".later"}
        assert set(heard["visible"]) == {"1.json"}
    finally:
        for handle in handles:
            notifier.unwatch(handle)


def test_sync_delivers_more_events_than_one_read_holds(tmp_path: Path) -> None:
    """`sync` stops reading at the first read that did not fill its buffer: a queue longer
    than one buffer is still delivered whole before it returns."""
    try:
        notifier = Notifier.shared()
    except OSError:
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")
    heard: set[str | None] = set()
    handle = notifier.watch_dir(str(tmp_path), heard.add, passive=True)
    try:
        names = {f"{n:04d}-{'x' * 60}.json" for n in range(3000)}  # ~80 bytes per event
        for name in names:
            (tmp_path / name).write_text("")  # IN_CREATE and IN_CLOSE_WRITE: ~480 KB queued
        notifier.sync()
        assert heard == names
    finally:
        notifier.unwatch(handle)
