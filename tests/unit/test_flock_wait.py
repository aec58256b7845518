"""Waiting for a kernel lock without polling (`protocols.fs.flock_wait`), against a real holder in
another process (flock locks belong to an open file: the holder is a separate process, as the
other writers of an inbox are)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocols.fs import flock_wait
from protocols.fs.flock_wait import wait_for_flock

HOLD = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
    "fcntl.flock(fd, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.readline()\n"
)


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    return tmp_path / "inbox.json.flock"


@pytest.fixture
def holder(lock_file: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock until its stdin gets a line."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait(10)


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The helper threads `wait_for_flock` starts during the test, as they are made."""
    made: list[threading.Thread] = []
    real = threading.Thread

    def counted(*args: Any, **kwargs: Any) -> threading.Thread:
        thread = real(*args, **kwargs)
        if thread.name == "swarm-flock-wait":
            made.append(thread)
        return thread

    monkeypatch.setattr(flock_wait.threading, "Thread", counted)
    monkeypatch.setattr(flock_wait, "_IDLE", [])  # helpers kept by earlier tests: not these
    return made


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()


def free(lock_file: Path) -> bool:
    """Whether a third open of the file can take the lock (it is let go at once)."""
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def open_lock(lock_file: Path) -> int:
    return os.open(lock_file, os.O_RDWR | os.O_CREAT)


def test_the_waiter_takes_the_lock_when_the_holder_lets_go(
    lock_file: Path, holder: subprocess.Popen[str]
) -> None:
    fd = open_lock(lock_file)
    got: list[bool] = []
    waiting = threading.Thread(target=lambda: got.append(wait_for_flock(fd, time.monotonic() + 30)))
    waiting.start()
    assert not free(lock_file)
    release(holder)
    waiting.join(30)
    assert got == [True]
    assert not free(lock_file), "the waiter holds it now"
    fcntl.flock(fd, fcntl.LOCK_UN)
    assert free(lock_file)
    os.close(fd)


def test_the_deadline_ends_the_wait_and_the_abandoned_helper_never_keeps_the_lock(
    lock_file: Path, holder: subprocess.Popen[str], helpers: list[threading.Thread]
) -> None:
    fd = open_lock(lock_file)
    assert wait_for_flock(fd, time.monotonic() + 0.1) is False
    os.close(fd)  # the caller closes its descriptor, as FileGuard does on a timeout
    [abandoned] = helpers
    release(holder)
    # the helper still blocked in the kernel gets it now, and must let it go at once
    abandoned.join(30)
    assert not abandoned.is_alive()
    assert free(lock_file)


def test_a_free_lock_is_taken_at_once(lock_file: Path) -> None:
    fd = open_lock(lock_file)
    assert wait_for_flock(fd, time.monotonic() + 5) is True
    assert not free(lock_file)
    os.close(fd)
    assert free(lock_file)


def test_too_many_abandoned_waits_make_it_poll(
    lock_file: Path,
    holder: subprocess.Popen[str],
    helpers: list[threading.Thread],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a descriptor whose wait was abandoned is closed, never waited on again (FileGuard opens
    # a new one per acquire): its helper shares its open file, and so would share the lock
    fds = [open_lock(lock_file) for _ in range(3)]
    assert wait_for_flock(fds[0], time.monotonic() + 0.05) is False
    os.close(fds[0])
    [abandoned] = helpers
    assert abandoned.is_alive()  # still blocked behind the holder
    monkeypatch.setattr(flock_wait, "MAX_ABANDONED", 0)  # already one too many
    assert wait_for_flock(fds[1], time.monotonic() + 0.05) is False
    assert helpers == [abandoned]  # it polled: no second helper
    os.close(fds[1])
    got: list[bool] = []
    waiting = threading.Thread(
        target=lambda: got.append(wait_for_flock(fds[2], time.monotonic() + 30))
    )
    waiting.start()
    release(holder)
    waiting.join(30)
    assert got == [True], "the polling wait takes the lock once it is free"
    assert not free(lock_file), "the poller holds it, whatever the abandoned helper did"
    os.close(fds[2])
    abandoned.join(30)
    assert not abandoned.is_alive(), "the abandoned helper let go once the holder did"
    assert free(lock_file)


def test_one_helper_thread_serves_wait_after_wait(
    lock_file: Path, helpers: list[threading.Thread]
) -> None:
    """Starting a thread for every wait cost more CPU than the wait itself (nearly every claim
    of sixteen workers waits for the list lock): a helper that took a lock for its caller waits
    for the next one."""
    for _ in range(3):
        process = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(lock_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None and process.stdout.readline() == "held\n"
            fd = open_lock(lock_file)
            got: list[bool] = []
            waiting = threading.Thread(
                target=lambda fd=fd, got=got: got.append(wait_for_flock(fd, time.monotonic() + 30))
            )
            waiting.start()
            release(process)
            waiting.join(30)
            assert got == [True]
            os.close(fd)  # lets go of the lock
        finally:
            process.kill()
            process.wait(10)
    assert len(helpers) == 1
    assert helpers[0].is_alive()  # idle, for the next wait
