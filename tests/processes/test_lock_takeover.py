"""Locks whose holder was paused, and locks that are no locks (issue 13, items 9 and 15).

- A swarm writer holding an inbox lock is paused (SIGSTOP) past the 10 s stale window (the test
  jumps the lock's clock instead of waiting); a Claude Code-style writer takes the lock by
  proper-lockfile's stale rule and appends its message; the paused writer resumes. Its write
  must not overwrite the other's: both messages end up in the inbox, once each.
- A file, or a directory with things in it, at ``X.json.lock`` ends every wait at its deadline
  (or at once) with an error naming it; nothing spins.
"""

from __future__ import annotations

import json
import os
import signal
import time
from multiprocessing import get_context
from pathlib import Path

import pytest
from helpers import swarm, wait_for

from protocols.inbox import file as inbox_module
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile


def _send_pausing_inside_the_lock(root: str, text: str) -> None:
    """Child: send to alice, stopping itself (SIGSTOP) once it holds the lock and has read."""
    os.environ["CLAUDE_CONFIG_DIR"] = root
    original = inbox_module.InboxFile.append_locked
    paused = False

    def pause_then_append(self: inbox_module.InboxFile, *args: object, **kwargs: object) -> None:
        nonlocal paused
        if not paused:
            paused = True
            os.kill(os.getpid(), signal.SIGSTOP)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    inbox_module.InboxFile.append_locked = pause_then_append  # type: ignore[method-assign]
    Mailbox(TeamPaths(Path(root), "t")).send("alice", text, sender="bob")


def _stopped(pid: int) -> bool:
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    return state == "T"


def claude_code_style_append(inbox: Path, text: str) -> None:
    """proper-lockfile as Claude Code uses it: mkdir the lock, and take a lock whose mtime is
    older than 10 s as stale; then rewrite the inbox in place and release."""
    lock = inbox.with_name(inbox.name + ".lock")
    try:
        lock.mkdir()
    except FileExistsError:
        assert time.time() - lock.stat().st_mtime > 10, "the lock is not stale"
        lock.rmdir()
        lock.mkdir()
    try:
        items = json.loads(inbox.read_text())
        items.append(
            {"from": "claude", "text": text, "timestamp": "2026-01-01T00:00:00.000Z", "read": False}
        )
        inbox.write_text(json.dumps(items, indent=2))  # in place, as 2.1.88 writes
    finally:
        lock.rmdir()


def test_a_paused_holder_never_overwrites_what_took_its_lock(
    team: TeamFile, config_root: Path
) -> None:
    paths = team.paths
    inbox = paths.inbox("alice")
    child = get_context("spawn").Process(
        target=_send_pausing_inside_the_lock, args=(str(config_root), "from the paused swarm")
    )
    child.start()
    try:
        wait_for(lambda: child.pid is not None and _stopped(child.pid), "the writer to pause")
        lock = inbox.with_name("alice.json.lock")
        assert lock.is_dir()  # held by the paused writer
        old = time.time() - 20
        os.utime(lock, (old, old))  # 20 s pass for the lock (a clock jump; no waiting)
        claude_code_style_append(inbox, "from claude code")
        os.kill(child.pid, signal.SIGCONT)
        child.join(60)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
    texts = [e.text for e in Mailbox(paths).read_all("alice")]
    assert sorted(texts) == ["from claude code", "from the paused swarm"], texts


@pytest.mark.parametrize(
    "what", ["a file", "a stale directory with files in it", "a fresh directory with files in it"]
)
def test_something_that_is_no_lock_ends_the_wait_with_a_clear_error(
    what: str, team: TeamFile, config_root: Path
) -> None:
    lock = team.paths.inbox("alice").with_name("alice.json.lock")
    if what == "a file":
        lock.write_text("not a lock")
    else:
        lock.mkdir()
        (lock / "left-behind").write_text("x")
        if what.startswith("a stale"):
            old = time.time() - 60
            os.utime(lock, (old, old))
    result = swarm("send", "alice", "hello", env={"SWARM_LOCK_TIMEOUT": "2"})
    assert result.returncode == 1, result.stdout
    assert str(lock) in result.stderr and "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr
    assert Mailbox(team.paths).read_all("alice") == []
    if what == "a file":
        assert "is a file, not a lock directory" in result.stderr
    elif what.startswith("a stale"):
        assert "with files in it" in result.stderr
    else:
        assert "held for 2 s" in result.stderr
