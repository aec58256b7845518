"""The board's index (`protocols.tasks.index`) never answers from a stale picture: a task file
added, rewritten in place (as Claude Code writes them, even with the same size and mtime),
removed, or a whole directory replaced behind its back is seen by the next listing and claim.
Without inotify (no instance free for the process) it looks at every file each time, still
answers right, and takes an instance when one is free again."""

from __future__ import annotations

import errno
import gc
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from protocols.fs.jsonio import atomic_write_bytes, ensure_file
from protocols.fs.locks import FileGuard
from protocols.paths import TeamPaths
from protocols.tasks import files as tasks_module
from protocols.tasks import index as task_index
from protocols.tasks.board import ClaimFailure, TaskBoard
from protocols.team.file import TeamFile
from protocols.watch import dirwatch
from protocols.watch.dirwatch import DirWatch
from protocols.watch.inotify import Notifier


@pytest.fixture
def board(team: TeamFile) -> TaskBoard:
    return TaskBoard(team.paths)


def needs_inotify() -> None:
    """Skip unless this process can have an inotify instance now: the machine's user may have
    used up ``fs.inotify.max_user_instances`` (128 by default) in other processes."""
    watch = DirWatch("/")
    if watch.changes() is None and not watch.available:
        pytest.skip("no inotify instance free (fs.inotify.max_user_instances used up)")


def write_in_place(path: Path, task: dict[str, object], keep_times: bool = False) -> None:
    """Rewrite a task file the way Claude Code does: truncate and write, same inode."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(json.dumps(task, indent=2).encode())
    if keep_times:  # the same mtime, as a rewrite within one tick of the clock would leave
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def raw(paths: TeamPaths, task_id: str) -> dict[str, object]:
    return dict(json.loads(paths.task(task_id).read_text()))


def test_a_task_written_in_place_behind_its_back_is_seen(
    board: TaskBoard, paths: TeamPaths
) -> None:
    first, second = board.create("a"), board.create("b")
    assert board.claim_next("alice").task.id == first.id  # type: ignore[union-attr]
    board.update(first.id, status="completed")
    assert [t.status for t in board.list()] == ["completed", "pending"]

    # Claude Code's lead gives task 2 to bob, in place: bob is busy now
    write_in_place(paths.task(second.id), {**raw(paths, second.id), "owner": "bob"})
    assert board.get(second.id).owner == "bob"  # type: ignore[union-attr]
    assert [t.owner for t in board.list()] == ["alice", "bob"]
    third = board.create("c")
    refused = board.claim_next("bob")
    assert refused is not None and refused.reason == ClaimFailure.AGENT_BUSY
    assert refused.busy_with == [second.id]
    assert board.claim_next("carol").task.id == third.id  # type: ignore[union-attr]


def test_a_same_size_same_mtime_rewrite_is_still_seen(board: TaskBoard, paths: TeamPaths) -> None:
    """What a cache keyed on (inode, size, mtime) would miss: inotify reports the write."""
    needs_inotify()
    task = board.create("a")
    board.list()
    text = raw(paths, task.id)
    write_in_place(paths.task(task.id), {**text, "status": "completed"}, keep_times=False)
    board.list()
    same_size = {**text, "status": "pending", "subject": "aaa"}  # 2 letters less, 2 more
    assert len(json.dumps(same_size, indent=2)) == paths.task(task.id).stat().st_size
    write_in_place(paths.task(task.id), same_size, keep_times=True)
    assert [(t.status, t.subject) for t in board.list()] == [("pending", "aaa")]
    assert board.claim_next("alice").task.id == task.id  # type: ignore[union-attr]


def test_files_added_and_removed_behind_its_back(board: TaskBoard, paths: TeamPaths) -> None:
    first = board.create("a")
    board.list()
    made = {**raw(paths, first.id), "id": "9", "subject": "written by Claude Code"}
    paths.task("9").write_text(json.dumps(made, indent=2))
    assert [t.id for t in board.list()] == [first.id, "9"]
    paths.task(first.id).unlink()
    assert [t.id for t in board.list()] == ["9"]
    assert board.claim_next("alice").task.id == "9"  # type: ignore[union-attr]
    assert board.claim("alice", first.id).reason == ClaimFailure.TASK_NOT_FOUND


def test_a_blocker_completed_behind_its_back_unblocks(board: TaskBoard, paths: TeamPaths) -> None:
    blocker = board.create("a", owner="bob")
    blocked = board.create("b", blocked_by=[blocker.id])
    assert board.claim_next("alice") is None
    write_in_place(paths.task(blocker.id), {**raw(paths, blocker.id), "status": "completed"})
    assert board.claim_next("alice").task.id == blocked.id  # type: ignore[union-attr]


def test_a_replaced_directory_is_read_again(board: TaskBoard, paths: TeamPaths) -> None:
    board.create("a")
    board.create("b")
    rebuilds = board._index.rebuilds
    assert len(board.list()) == 2
    saved = paths.tasks_dir.with_name("saved")
    shutil.copytree(paths.tasks_dir, saved)
    shutil.rmtree(paths.tasks_dir)
    assert board.list() == []
    (saved / "2.json").unlink()
    saved.rename(paths.tasks_dir)
    assert [t.subject for t in board.list()] == ["a"]
    assert board._index.rebuilds > rebuilds


def test_boards_of_one_directory_share_one_index(team: TeamFile) -> None:
    one, two = TaskBoard(team.paths), TaskBoard(team.paths)
    assert one._index is two._index
    task = one.create("a")
    assert two.claim_next("alice").task.id == task.id  # type: ignore[union-attr]
    assert one.list()[0].owner == "alice"


class _Blind(DirWatch):
    """No inotify: every look is a full one."""

    def changes(self) -> set[str] | None:
        return None


def test_without_inotify_every_file_is_looked_at(
    paths: TeamPaths, team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_index, "DirWatch", _Blind)
    monkeypatch.setattr(task_index, "_SHARED", type(task_index._SHARED)())
    board = TaskBoard(paths)
    first, second = board.create("a"), board.create("b")
    write_in_place(paths.task(first.id), {**raw(paths, first.id), "owner": "bob"})
    assert board.claim_next("alice").task.id == second.id  # type: ignore[union-attr]
    board.create("c")
    assert board.claim_next("bob").reason == ClaimFailure.AGENT_BUSY  # type: ignore[union-attr]
    assert board._index.rebuilds >= 3


def test_the_watch_reports_names_and_says_when_it_cannot_tell(tmp_path: Path) -> None:
    needs_inotify()
    watch = DirWatch(str(tmp_path / "d"))
    assert watch.changes() is None  # no directory yet
    (tmp_path / "d").mkdir()
    assert watch.changes() is None  # watched from now on: the caller looks at everything once
    assert watch.changes() == set()
    (tmp_path / "d" / "1.json").write_text("{}")
    os.mkdir(tmp_path / "d" / "1.json.lock")  # lock directories are not files that changed
    os.rmdir(tmp_path / "d" / "1.json.lock")
    assert watch.changes() == {"1.json"}
    os.replace(tmp_path / "d" / "1.json", tmp_path / "d" / "2.json")
    assert watch.changes() == {"1.json", "2.json"}
    shutil.rmtree(tmp_path / "d")
    assert watch.changes() is None


def test_a_watch_collected_while_its_notifier_is_locked_is_unwatched_without_a_hang(
    tmp_path: Path,
) -> None:
    """The cyclic collector runs a watch's finalizer in whatever thread allocates, even one that
    holds the notifier's lock (a test run hung so: a collected watch's unwatch waited, inside
    `Notifier._dir_mask`, for the lock its own thread held). The finalizer must not wait: the
    watch goes as soon as the lock is free."""
    needs_inotify()
    notifier = Notifier.shared()
    watch = DirWatch(str(tmp_path))
    assert watch.changes() is None  # watched from now on
    handle = watch._handle
    assert handle is not None and notifier.armed(handle)
    watch.itself = watch  # type: ignore[attr-defined]  # a cycle: only the collector frees it
    del watch

    def collect_holding_the_lock() -> None:
        with notifier._lock:
            gc.collect()

    collector = threading.Thread(target=collect_holding_the_lock, daemon=True)
    collector.start()
    collector.join(60)
    assert not collector.is_alive(), "the finalizer waited for a lock its own thread holds"
    notifier.sync()
    assert not notifier.armed(handle)


def test_a_closed_watch_is_unwatched_at_once(tmp_path: Path) -> None:
    needs_inotify()
    notifier = Notifier.shared()
    watch = DirWatch(str(tmp_path))
    assert watch.changes() is None
    handle = watch._handle
    assert handle is not None and notifier.armed(handle)
    watch.close()
    assert not notifier.armed(handle)
    assert watch.changes() is None  # watched again, with a new handle
    assert watch._handle is not None and watch._handle != handle
    watch.close()


def used_up() -> Notifier:
    """`Notifier.shared` when the user's inotify instances are all taken."""
    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))


def test_without_an_instance_free_the_board_stats_every_file_then_takes_one_when_it_can(
    paths: TeamPaths, team: TeamFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_inotify()  # this process's instance exists: it is handed out again afterwards
    real = Notifier.shared
    monkeypatch.setattr(Notifier, "shared", staticmethod(used_up))
    monkeypatch.setattr(dirwatch, "RETRY_S", 0.0)  # ask for an instance at every look
    monkeypatch.setattr(task_index, "_SHARED", type(task_index._SHARED)())
    board = TaskBoard(paths)
    first, second = board.create("a"), board.create("b")
    write_in_place(paths.task(first.id), {**raw(paths, first.id), "owner": "bob"})
    assert board.claim_next("alice").task.id == second.id  # type: ignore[union-attr]
    assert not board._index.watch.available
    rebuilds = board._index.rebuilds
    assert [t.owner for t in board.list()] == ["bob", "alice"]
    assert board._index.rebuilds > rebuilds  # every look is a full one

    monkeypatch.setattr(Notifier, "shared", real)  # an instance is free again
    board.list()  # it takes the process's instance and watches: one more full look
    assert board._index.watch.available
    rebuilds = board._index.rebuilds
    write_in_place(paths.task(first.id), {**raw(paths, first.id), "status": "completed"})
    assert [t.status for t in board.list()] == ["completed", "in_progress"]
    assert board._index.rebuilds == rebuilds  # from the event, not from a full look


def test_a_watch_without_an_instance_asks_again_only_every_retry_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[float] = []
    clock = [100.0]

    def counted() -> Notifier:
        asked.append(clock[0])
        return used_up()

    monkeypatch.setattr(Notifier, "shared", staticmethod(counted))
    monkeypatch.setattr(dirwatch, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    watch = DirWatch(str(tmp_path))
    assert watch.changes() is None
    clock[0] += dirwatch.RETRY_S - 1
    assert watch.changes() is None
    assert asked == [100.0] and not watch.available
    clock[0] += 1
    assert watch.changes() is None
    assert asked == [100.0, 100.0 + dirwatch.RETRY_S]


def test_a_forked_child_neither_steals_nor_removes_its_parents_watch(tmp_path: Path) -> None:
    """A child shares its parent's inotify descriptor: reading it or removing a watch on it
    would take the parent's. The child's copy of a watch looks at everything and takes its own
    instance instead; closing either copy leaves the parent's watch in place."""
    needs_inotify()
    watch = DirWatch(str(tmp_path))
    watch.changes()
    assert watch.changes() == set()
    for use in ("close", "look, then close"):
        pid = os.fork()
        if pid == 0:  # the child: never back into pytest
            code = 1
            try:
                if use.startswith("look"):
                    (tmp_path / "child.json").write_text("{}")
                    code = 0 if watch.changes() is None else 2
                else:
                    code = 0
                watch.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, use
        (tmp_path / "1.json").write_text("{}")
        assert "1.json" in (watch.changes() or set()), use
    watch.close()


def _cc_create(directory: Path) -> None:
    (directory / "7.json").write_text("{}")  # Claude Code: open(O_CREAT|O_TRUNC), write, close


def _swarm_create(directory: Path) -> None:
    assert ensure_file(directory / "7.json", "{}")  # a new task: hard-linked into place


def _cc_rewrite(directory: Path) -> None:
    write_in_place(directory / "7.json", {"id": "7"}, keep_times=True)


def _swarm_locked_write(directory: Path) -> None:
    # under the task's lock: its lock directory made under a hidden name and renamed into
    # place, a hidden temporary file beside the task renamed over it, the lock removed
    with FileGuard(directory / "7.json"):
        atomic_write_bytes(directory / "7.json", b'{"id": "7"}')


def _swarm_unlocked_write(directory: Path) -> None:
    atomic_write_bytes(directory / "7.json", b'{"id": "7"}')  # through .swarm-tmp/


def _removed(directory: Path) -> None:
    (directory / "7.json").unlink()


def _renamed_away(directory: Path) -> None:
    os.rename(directory / "7.json", directory.parent / "elsewhere.json")


def _renamed_in(directory: Path) -> None:
    (directory.parent / "elsewhere.json").write_text("{}")
    os.rename(directory.parent / "elsewhere.json", directory / "7.json")


@pytest.mark.parametrize(
    ("change", "existing"),
    [
        (_cc_create, False),
        (_swarm_create, False),
        (_cc_rewrite, True),
        (_swarm_locked_write, True),
        (_swarm_unlocked_write, True),
        (_removed, True),
        (_renamed_away, True),
        (_renamed_in, False),
    ],
)
def test_every_change_of_a_task_file_is_reported_and_nothing_else(
    tmp_path: Path, change: Callable[[Path], None], existing: bool
) -> None:
    """The watch asks the kernel for fewer kinds of event than it used to, and drops lock
    directories and hidden names undecoded: each way a task file changes, Claude Code's and
    swarm's, is still reported, and it is the only name reported."""
    needs_inotify()
    directory = tmp_path / "tasks"
    directory.mkdir()
    (directory / "3.json").write_text("{}")  # a neighbour nobody touches
    if existing:
        (directory / "7.json").write_text("{}")
    watch = DirWatch(str(directory))
    try:
        assert watch.changes() is None  # the first look is a full one
        assert watch.changes() == set()
        change(directory)
        assert watch.changes() == {"7.json"}
        assert watch.changes() == set()
    finally:
        watch.close()


def test_a_write_in_place_is_reported_once_its_writer_closes_the_file(tmp_path: Path) -> None:
    """Claude Code's write in place is complete when it closes the file (under the task's
    lock): the index hears of it then, and reads the file whole."""
    needs_inotify()
    (tmp_path / "7.json").write_text("{}")
    watch = DirWatch(str(tmp_path))
    try:
        watch.changes()
        assert watch.changes() == set()
        with open(tmp_path / "7.json", "r+b") as handle:
            handle.truncate(0)
            handle.write(b'{"id": "7"}')
            handle.flush()
            assert watch.changes() == set()  # written, not yet closed
        assert watch.changes() == {"7.json"}
    finally:
        watch.close()


def test_a_half_written_task_file_is_read_again_at_its_close_not_waited_for(
    board: TaskBoard, paths: TeamPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index hears of an in-place write when its writer closes the file: a file found
    half written then (a writer that wrote it in two goes, or a hostile one) is skipped until
    the next close, never waited for under the list lock."""
    needs_inotify()
    task = board.create("a")
    board.list()
    whole = raw(paths, task.id)
    text = json.dumps({**whole, "subject": "b"}, indent=2)
    with open(paths.task(task.id), "r+b") as handle:  # the first go
        handle.truncate(0)
        handle.write(text[:20].encode())

    def no_patience(*args: object) -> object:
        raise AssertionError("waited for a file inotify will report again")

    monkeypatch.setattr(tasks_module, "parse_patiently", no_patience)
    assert board.list() == []  # half written: not a task, for now
    assert board.claim_next("alice") is None
    with open(paths.task(task.id), "r+b") as handle:  # the second go
        handle.seek(20)
        handle.write(text[20:].encode())
    assert [t.subject for t in board.list()] == ["b"]
