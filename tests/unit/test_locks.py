"""Locks: Claude Code's mkdir protocol (stale after 10 s, refreshed while held), the flock under
it, fast recovery from a dead swarm holder, and loud failure on timeout."""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from pathlib import Path

import pytest
from helpers import finishes

from protocols.errors import LockTimeout
from protocols.fs.locks import FileGuard, _Refresher, flock_path_for, lock_dir_for


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "inbox.json"
    path.write_text("[]")
    return path


def test_the_lock_is_claude_codes_directory_and_goes_away_on_release(target: Path) -> None:
    with FileGuard(target) as guard:
        assert guard.held
        assert lock_dir_for(target).is_dir()
        assert list(lock_dir_for(target).iterdir()) == []  # nothing may be put inside
    assert not lock_dir_for(target).exists()
    assert flock_path_for(target).parent.name == ".swarm-locks"


def test_a_fresh_foreign_lock_makes_the_writer_wait_then_fail_loudly(target: Path) -> None:
    os.mkdir(lock_dir_for(target))  # Claude Code holds it
    started = time.monotonic()
    with pytest.raises(LockTimeout, match="nothing was written"):
        FileGuard(target, timeout=0.3).acquire()
    assert time.monotonic() - started >= 0.3
    assert lock_dir_for(target).is_dir()  # a live lock is not broken


def test_a_stale_foreign_lock_is_removed(target: Path) -> None:
    lock_dir = lock_dir_for(target)
    os.mkdir(lock_dir)
    old = time.time() - 11
    os.utime(lock_dir, (old, old))
    with FileGuard(target, timeout=2):
        assert lock_dir.is_dir()
    assert not lock_dir.exists()


def test_staleness_follows_the_clock(target: Path) -> None:
    os.mkdir(lock_dir_for(target))
    later = time.time() + 10.5
    with FileGuard(target, timeout=2, clock=lambda: later):
        pass


def _hold_and_die(target: str, ready: multiprocessing.synchronize.Event) -> None:
    FileGuard(Path(target)).acquire()
    ready.set()
    os.kill(os.getpid(), 9)


def test_a_lock_left_by_a_killed_swarm_process_is_taken_over_at_once(target: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    child = ctx.Process(target=_hold_and_die, args=(str(target), ready))
    child.start()
    child.join(10)
    assert child.exitcode == -9
    assert lock_dir_for(target).is_dir()  # the killed holder left Claude Code's lock behind
    with FileGuard(target, timeout=2):  # well inside the 10 s stale window
        pass


def test_two_guards_in_one_process_exclude_each_other(target: Path) -> None:
    with FileGuard(target), pytest.raises(LockTimeout):
        FileGuard(target, timeout=0.2).acquire()


def test_a_guard_cannot_be_acquired_twice(target: Path) -> None:
    guard = FileGuard(target)
    with guard, pytest.raises(RuntimeError):
        guard.acquire()


def test_long_holds_refresh_the_lock_mtime_and_stay_owned(target: Path) -> None:
    with FileGuard(target) as guard:
        lock_dir = lock_dir_for(target)
        old = time.time() - 8
        os.utime(lock_dir, (old, old))
        refresher = _Refresher(interval=0.05)
        refresher.add(guard)
        deadline = time.monotonic() + 5
        while os.stat(lock_dir).st_mtime < time.time() - 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        refresher.discard(guard)
        assert os.stat(lock_dir).st_mtime > time.time() - 5
        # touching changed the directory's ctime: the guard still knows it as its own
        assert guard.owns_lock_dir()
        guard.confirm()
    assert not lock_dir.exists()


def test_the_refresher_thread_ends_when_no_lock_is_held(target: Path) -> None:
    refresher = _Refresher(interval=0.05)
    with FileGuard(target) as guard:
        refresher.add(guard)
        thread = refresher._thread
        assert thread is not None and thread.is_alive()
        refresher.discard(guard)
    thread.join(timeout=5)
    assert not thread.is_alive()  # an idle process has no thread waking it


def test_something_planted_at_the_private_lock_name_is_removed_not_followed(
    tmp_path: Path,
) -> None:
    target = tmp_path / "inbox.json"
    target.write_text("[]")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("secret")
    private = tmp_path / ".inbox.json.lock.new"
    private.symlink_to(outside)
    with FileGuard(target):
        assert lock_dir_for(target).is_dir()
    assert not private.exists() and not private.is_symlink()
    assert sorted(os.listdir(outside)) == ["keep"]
    private.mkdir()
    (private / "x").write_text("")
    with pytest.raises(LockTimeout, match="directory with files in it"):
        FileGuard(target, timeout=1).acquire()
    assert (private / "x").exists()


def test_a_kept_lock_directory_is_renamed_in_and_out_with_a_fresh_time(target: Path) -> None:
    """`keep_lock_dir`: no directory made and removed per hold. ``X.lock`` still comes and
    goes in one step, and Claude Code, which judges a lock by its mtime, sees a fresh one even
    when the kept directory sat unused for an hour."""
    private = target.parent / f".{target.name}.lock.new"
    with FileGuard(target, keep_lock_dir=True):
        first = os.stat(lock_dir_for(target)).st_ino
        assert not private.exists()
    assert not lock_dir_for(target).exists() and private.is_dir()
    assert os.stat(private).st_ino == first
    old = time.time() - 3600
    os.utime(private, (old, old))
    before = time.time()
    with FileGuard(target, keep_lock_dir=True):
        held = os.stat(lock_dir_for(target))
        assert held.st_ino == first and held.st_mtime >= before - 1
        assert not private.exists()
        with pytest.raises(LockTimeout):  # still a lock to everyone else
            FileGuard(target, timeout=0.2, keep_lock_dir=True).acquire()
    with FileGuard(target):  # a guard that does not keep it takes it, and removes it after
        assert os.stat(lock_dir_for(target)).st_ino == first
    assert not lock_dir_for(target).exists() and not private.exists()


def _hold_kept_and_die(target: str, ready: multiprocessing.synchronize.Event) -> None:
    FileGuard(Path(target), keep_lock_dir=True).acquire()
    ready.set()
    os.kill(os.getpid(), 9)


def test_a_kept_lock_directory_left_by_a_killed_holder_is_taken_over_at_once(
    target: Path,
) -> None:
    with FileGuard(target, keep_lock_dir=True):
        pass  # the directory is kept for the next holder, which is killed holding it
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    child = ctx.Process(target=_hold_kept_and_die, args=(str(target), ready))
    child.start()
    child.join(10)
    assert child.exitcode == -9 and lock_dir_for(target).is_dir()
    with FileGuard(target, timeout=2, keep_lock_dir=True):  # well inside the stale window
        assert lock_dir_for(target).is_dir()
    assert not lock_dir_for(target).exists()


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory"])
def test_a_flock_file_that_is_not_a_file_is_moved_aside_and_made_again(
    target: Path, kind: str
) -> None:
    """swarm's own lock file planted as a FIFO, a socket or a directory: before, every lock of
    the target failed with "Illegal seek" (a FIFO) or worse; now it is set aside and the lock
    works, exclusive as ever."""
    flock = flock_path_for(target)
    flock.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(flock)
    elif kind == "directory":
        flock.mkdir()
    server = socket.socket(socket.AF_UNIX)
    if kind == "socket":
        server.bind(str(flock))
    try:
        guard = FileGuard(target, timeout=5)
        taken = finishes(guard.acquire)
        assert not isinstance(taken, BaseException), taken
        assert finishes(lambda: FileGuard(target, timeout=0.3).acquire()).__class__ is LockTimeout
        guard.release()
    finally:
        server.close()
    assert flock.is_file() and not flock.is_symlink()
    aside = [p for p in flock.parent.iterdir() if p.name.startswith(f".refused-{flock.name}-")]
    assert len(aside) == 1
    with FileGuard(target, timeout=5):
        pass
