"""A teammate reports, skips or quarantines, backs off, and lives (issue 13, items 11, 12, 13, 16).

Each test runs real teammate processes and breaks what is around them: a lock held past its
timeout, a garbage ``config.json`` (later restored), task files with hostile ids, a message
holding a lone UTF-16 surrogate, a failing or denied task, a model API that answers 529 for
ever, no inotify instances left, a teammate that cannot start, a user with no passwd entry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import DEADLINE_S, Processes, read_lines, swarm, teammate_argv, wait_for
from messages_api import MessagesAPI, Turn

from protocols.inbox.ids import identity_of
from protocols.inbox.mailbox import Mailbox
from protocols.member.status import read_status
from protocols.paths import TeamPaths
from protocols.tasks.board import NewTask, TaskBoard
from protocols.team.file import TeamFile


def lead_texts(paths: TeamPaths) -> list[str]:
    mailbox = Mailbox(paths)
    return [e.text for e in mailbox.peek_all("team-lead")]


def activity(paths: TeamPaths, name: str) -> str:
    status = read_status(paths, name)
    return status.activity if status is not None else ""


def completed(paths: TeamPaths, task_id: str) -> bool:
    task = TaskBoard(paths).get(task_id)
    return task is not None and task.status == "completed"


def test_a_lock_held_past_its_timeout_is_waited_out_and_nothing_is_lost(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    """The lead's inbox stays locked (a Claude Code-style lock directory, kept fresh) longer
    than the teammate's lock timeout: its completion report waits in its outbox, and arrives
    once the lock is gone; the teammate never dies."""
    paths = team.paths
    lock = paths.inbox("team-lead").with_name("team-lead.json.lock")
    lock.mkdir()
    released = threading.Event()

    def keep_fresh() -> None:  # as Claude Code's holder refreshes a lock it keeps
        while not released.wait(1.0):
            os.utime(lock)

    refresher = threading.Thread(target=keep_fresh, daemon=True)
    refresher.start()
    env = {**os.environ, "SWARM_LOCK_TIMEOUT": "0.5"}
    alice = procs.start(teammate_argv("alice"), env)
    TaskBoard(paths).create("one", metadata={"command": "echo one > one.txt"})
    wait_for(lambda: completed(paths, "1"), "task 1 to complete")
    wait_for(lambda: "could not lock" in activity(paths, "alice"), "alice to report the lock")
    TaskBoard(paths).create("two", metadata={"command": "echo two > two.txt"})
    wait_for(lambda: completed(paths, "2"), "task 2 to complete while the lock is held")
    assert alice.poll() is None
    released.set()
    refresher.join()
    lock.rmdir()
    wait_for(
        lambda: sum('"completedTaskId":"' in t for t in lead_texts(paths)) == 2,
        "both completion reports to arrive",
    )
    notes = [json.loads(t) for t in lead_texts(paths) if '"idle_notification"' in t]
    assert sorted(n["completedTaskId"] for n in notes if "completedTaskId" in n) == ["1", "2"]
    assert alice.poll() is None


def test_a_garbage_config_is_survived_and_work_resumes_once_it_is_restored(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    alice = procs.start(teammate_argv("alice"))
    TaskBoard(paths).create("first", metadata={"command": "true"})
    wait_for(lambda: completed(paths, "1"), "task 1")
    good = paths.config.read_bytes()
    paths.config.write_text("{ this is not json")
    TaskBoard(paths).create("second", metadata={"command": "echo 2 > second.txt"})
    wait_for(lambda: "problem" in activity(paths, "alice"), "alice to report the team file")
    assert alice.poll() is None
    paths.config.write_bytes(good)
    wait_for(lambda: completed(paths, "2"), "task 2 once the team file is back")
    assert alice.poll() is None
    assert (tmp_path / "second.txt").exists()


def test_task_files_with_hostile_ids_are_skipped_by_teammates_and_commands(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    board = TaskBoard(paths)
    board.create("real", metadata={"command": "echo real > real.txt"})
    hostile = {
        "5.json": {"id": "../../../x", "subject": "escape", "description": "", "status": "pending",
                   "blocks": [], "blockedBy": []},
        "6.json": {"id": "6", "subject": "bad blocker", "description": "", "status": "pending",
                   "blocks": [], "blockedBy": ["../../etc/passwd"]},
        "7.json": {"id": "8", "subject": "not its own name", "description": "",
                   "status": "pending", "blocks": [], "blockedBy": [],
                   "metadata": {"command": "touch wrong.txt"}},
    }  # fmt: skip
    for name, value in hostile.items():
        (paths.tasks_dir / name).write_text(json.dumps(value))
    alice = procs.start(teammate_argv("alice"))
    wait_for(lambda: completed(paths, "1"), "the real task")
    listing = swarm("task", "list")
    assert listing.returncode == 0 and "#1 [completed] real" in listing.stdout
    assert "escape" not in listing.stdout and "bad blocker" not in listing.stdout
    assert not (tmp_path / "wrong.txt").exists() and not (paths.tasks_dir / "8.json").exists()
    board.create("after", metadata={"command": "echo after > after.txt"})
    wait_for(lambda: (tmp_path / "after.txt").exists(), "alice to keep working")
    assert alice.poll() is None
    restarted = procs.start(teammate_argv("bob"))  # a teammate that starts on this board lives
    board.create("for bob", metadata={"command": "true"})
    wait_for(lambda: completed(paths, "9") or completed(paths, "10"), "a later task")
    assert restarted.poll() is None


def swarm_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`swarm ARGS` as its own process, given 60 s: a command that hangs fails the test."""
    env = {**os.environ, "SWARM_TEAM": "t"}
    command = [sys.executable, "-m", "swarm", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


def test_a_fifo_planted_as_an_inbox_or_the_team_file_hangs_nobody(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    """Opening a FIFO waits for a writer: planted as alice's inbox or as config.json, it hung
    `swarm status`, `send` and `inbox` for ever. The inbox is now moved aside as a corrupt one
    is, config.json is refused by an error that names it, and alice lives through both."""
    paths = team.paths
    alice = procs.start(teammate_argv("alice"))
    TaskBoard(paths).create("first", metadata={"command": "true"})
    wait_for(lambda: completed(paths, "1"), "task 1")
    inbox = paths.inbox("alice")
    inbox.unlink(missing_ok=True)
    os.mkfifo(inbox)
    for args in (("status",), ("inbox", "alice"), ("send", "alice", "after the FIFO")):
        done = swarm_process(*args)
        assert done.returncode == 0, (args, done.stderr)
    assert stat.S_ISREG(inbox.lstat().st_mode)
    aside = [p for p in inbox.parent.iterdir() if p.name.startswith("alice.json.corrupt-")]
    assert len(aside) == 1 and stat.S_ISFIFO(aside[0].lstat().st_mode)
    assert "after the FIFO" in swarm_process("inbox", "alice").stdout

    good = paths.config.read_bytes()
    paths.config.unlink()
    os.mkfifo(paths.config)
    for args in (("status",), ("send", "alice", "hello"), ("team", "show", "t")):
        done = swarm_process(*args)
        assert done.returncode == 1, (args, done.stdout)
        assert f"{paths.config} is a FIFO, not a regular file" in done.stderr
        assert "Traceback" not in done.stderr
    TaskBoard(paths).create("second", metadata={"command": "echo 2 > second.txt"})
    wait_for(lambda: "problem" in activity(paths, "alice"), "alice to report the team file")
    assert alice.poll() is None
    paths.config.unlink()
    paths.config.write_bytes(good)
    wait_for(lambda: completed(paths, "2"), "task 2 once the team file is back")
    assert alice.poll() is None and (tmp_path / "second.txt").exists()


def test_a_message_with_a_lone_surrogate_is_no_poison(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    raw = (
        '[{"from": "bob", "text": "bad \\ud800 text", "timestamp": '
        '"2026-01-01T00:00:00.000Z", "read": false}]'
    )
    paths.inbox("alice").write_text(raw)
    alice = procs.start(teammate_argv("alice"))
    wait_for(
        lambda: any("Received" in e.text for e in Mailbox(paths).read_all("bob")),
        "alice to answer bob",
    )
    assert alice.poll() is None
    alice.kill()
    alice.wait()
    again = procs.start(teammate_argv("alice"))  # respawned: the message does not kill it again
    TaskBoard(paths).create("then work", metadata={"command": "echo w > w.txt"})
    wait_for(lambda: (tmp_path / "w.txt").exists(), "the respawned alice to work")
    assert again.poll() is None
    shown = swarm("inbox", "alice")
    assert shown.returncode == 0 and "\\ud800" in shown.stdout


def test_a_failed_task_never_stalls_its_worker_and_can_be_retried(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    board = TaskBoard(paths)
    board.create("fails", metadata={"command": "test -e fixed.txt"})
    board.create("after it", metadata={"command": "true"}, blocked_by=["1"])
    alice = procs.start(teammate_argv("alice"))
    wait_for(lambda: (board.get("1") or board.require("1")).failed, "task 1 to fail")
    board.create("independent", metadata={"command": "echo ok > ok.txt"})
    wait_for(lambda: completed(paths, "3"), "alice to go on with task 3")
    assert board.require("2").status == "pending" and not board.require("2").owner  # blocked
    listing = swarm("task", "list").stdout
    assert "#1 [failed] fails (alice)" in listing
    status = json.loads(swarm("status", "--json").stdout)
    assert [t["id"] for t in status["failed"]] == ["1"]
    assert "failed" in swarm("status").stdout
    (tmp_path / "fixed.txt").write_text("now it works")
    result = swarm("task", "retry", "1")
    assert result.returncode == 0, result.stderr
    # alice failed it: she does not take it again by itself, but takes it when given it by name
    assert "alice failed it before and will not take it again by itself" in result.stderr + (
        result.stdout
    )
    given = swarm("task", "update", "1", "--owner", "alice")
    assert given.returncode == 0, given.stderr
    wait_for(lambda: completed(paths, "1") and completed(paths, "2"), "the retried task")
    assert alice.poll() is None


def test_a_denied_task_is_failed_and_its_worker_available(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    board = TaskBoard(paths)
    board.create("dangerous", metadata={"command": "rm -rf build"})
    alice = procs.start(teammate_argv("alice"))
    request = wait_for(lambda: json.loads(swarm("permissions", "--json").stdout), "alice to ask")[0]
    assert swarm("deny", request["id"], "--reason", "not today").returncode == 0
    wait_for(lambda: board.require("1").failed, "task 1 to be failed")
    assert "not today" in board.require("1").failure
    board.create("harmless", metadata={"command": "echo ok > ok.txt"})
    wait_for(lambda: completed(paths, "2"), "alice to take the next task")
    assert alice.poll() is None


def test_a_teammate_whose_model_fails_still_obeys_a_shutdown(
    team: TeamFile, procs: Processes, tmp_path: Path
) -> None:
    paths = team.paths
    # overloaded without a retry-after: the back-off grows (0.5 s, 1 s, 2 s ...)
    with MessagesAPI(lambda body: Turn.failure(529, retry_after=None)) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        alice = procs.start(teammate_argv("alice", model="sonnet"), env)
        Mailbox(paths).send("alice", "Please work.", sender="team-lead")
        wait_for(
            lambda: "model unavailable (overloaded, 529), retry " in activity(paths, "alice"),
            "the status to say the model is being retried",
        )
        view = json.loads(swarm("status", "--json").stdout)
        (row,) = [m for m in view["members"] if m["name"] == "alice"]
        assert re.search(r"retry \d+/10 in \d+ s", row["activity"]), row["activity"]
        result = swarm("shutdown", "alice", "--wait", "15")
        assert result.returncode == 0 and "approved" in result.stdout, result.stderr
        assert alice.wait(DEADLINE_S) == 0


# a user namespace of its own whose inotify limit is 0: inotify_init fails there with EMFILE,
# as on a machine where other programs used every instance up, without taking the instances
# of the tests running beside this one
NO_INOTIFY = [
    "unshare",
    "--user",
    "--map-root-user",
    "sh",
    "-c",
    'echo 0 > /proc/sys/user/max_inotify_instances && exec "$@"',
    "sh",
]


def _without_inotify() -> list[str]:
    """The NO_INOTIFY prefix, or [] where user namespaces or their limits are unavailable."""
    probe = [
        *NO_INOTIFY,
        sys.executable,
        "-c",
        "import ctypes; assert ctypes.CDLL(None).inotify_init1(0) < 0",
    ]
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return NO_INOTIFY if ok else []


def test_without_inotify_teammates_start_poll_and_say_so(
    team: TeamFile, tmp_path: Path, tmux_socket: str
) -> None:
    prefix = _without_inotify()
    if not prefix:
        pytest.skip("unshare --user cannot set an inotify limit of 0 here")
    paths = team.paths
    for name in ("alice", "bob", "carol"):
        team.remove_member(name)
    env = {**os.environ, "SWARM_TEAM": paths.team}
    for name in ("w1", "w2", "w3"):
        result = subprocess.run(
            [*prefix, sys.executable, "-m", "swarm", "spawn", name, "--prompt", "go",
             "--backend", "subprocess", "--cwd", str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    board = TaskBoard(paths)
    for n in range(3):
        board.create(f"t{n}", metadata={"command": f"echo {n} > t{n}.txt"})
    wait_for(lambda: all(completed(paths, str(n)) for n in (1, 2, 3)), "the tasks", 30)
    assert any("inotify is unavailable" in t for t in lead_texts(paths))
    for name in ("w1", "w2", "w3"):
        assert swarm("shutdown", name).returncode == 0


def test_spawn_reports_a_teammate_that_exits_as_it_starts(team: TeamFile, tmp_path: Path) -> None:
    script = tmp_path / "broken.yaml"
    script.write_text("- this: [is not, a turn\n")
    result = swarm(
        "spawn", "dora", "--prompt", "go", "--script", str(script), "--backend", "subprocess",
        "--cwd", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert "dora exited as it started" in result.stderr and "Traceback" not in result.stderr
    assert "dora" not in team.load().member_names()


def _no_passwd_prefix() -> list[str]:
    """A command prefix that runs as uid 54321, which has no passwd entry (a user namespace,
    so files keep their owner); [] where user namespaces are not available."""
    probe = ["unshare", "--user", "--map-user=54321", "--map-group=54321", "true"]
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return probe[:-1] if ok else []


def test_spawn_works_for_a_uid_without_a_passwd_entry(tmp_path: Path, config_root: Path) -> None:
    prefix = _no_passwd_prefix()
    if not prefix:
        pytest.skip("unshare --user is not available here to run as a uid with no passwd entry")
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    env.update(SWARM_TEAM="nopw")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*prefix, sys.executable, "-m", "swarm", *args]
        return subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
        )

    check = subprocess.run(
        [*prefix, sys.executable, "-c", "import os, pwd; pwd.getpwuid(os.getuid())"],
        capture_output=True,
        text=True,
    )
    assert "KeyError" in check.stderr  # really a uid without a passwd entry
    created = run("team", "create", "nopw")
    assert created.returncode == 0, created.stderr
    spawned = run(
        "spawn", "w1", "--prompt", "go", "--backend", "subprocess", "--cwd", str(tmp_path)
    )
    assert spawned.returncode == 0, spawned.stderr
    assert "Traceback" not in spawned.stderr
    assert run("shutdown", "w1").returncode == 0


def test_identity_of_a_surrogate_entry_is_stable() -> None:
    item = {"from": "bob", "text": "bad \ud800 text", "timestamp": "t"}
    assert identity_of(item) == identity_of(dict(item))


@pytest.mark.slow
def test_sixteen_teammates_under_lock_pressure_all_live_and_run_each_task_once(
    paths: TeamPaths, tmp_path: Path
) -> None:
    """A short lock timeout (0.2 s) makes locks time out under load; no teammate dies of it,
    every task is done, and none twice."""
    team = TeamFile(paths)
    team.create(cwd=tmp_path)
    names = [f"w{n}" for n in range(16)]
    for name in names:
        team.add_member(name, cwd=tmp_path)
    board = TaskBoard(paths)
    count = 200
    board.create_many(
        [NewTask(f"t{n}", metadata={"command": f"echo {n} >> ran.log"}) for n in range(count)]
    )
    processes = Processes(tmp_path)
    try:
        env = {**os.environ, "SWARM_LOCK_TIMEOUT": "0.2"}
        workers = [processes.start(teammate_argv(name), env) for name in names]
        wait_for(
            lambda: all(t.status == "completed" for t in board.list()),
            "every task to be completed",
            timeout=240,
        )
        ran = (tmp_path / "ran.log").read_text().split()
        assert sorted(map(int, ran)) == list(range(count))  # each exactly once
        dead = [name for name, w in zip(names, workers, strict=True) if w.poll() is not None]
        outputs = [w.stdout.read()[-3000:] for w in workers if w.poll() is not None and w.stdout]
        assert dead == [], (dead, outputs[:1])
    finally:
        processes.close()


def test_a_teammate_sent_usr1_prints_where_its_threads_are_and_goes_on(
    team: TeamFile, procs: Processes
) -> None:
    paths = team.paths
    alice = procs.start(teammate_argv("alice"))
    lines = read_lines(alice)
    wait_for(lambda: any("joined team" in line for line in lines), "alice to join")
    alice.send_signal(signal.SIGUSR1)
    wait_for(lambda: any("most recent call first" in line for line in lines), "alice's stacks")
    assert any("teammate/runtime.py" in line for line in lines), lines
    TaskBoard(paths).create("after", metadata={"command": "true"})
    wait_for(lambda: completed(paths, "1"), "task 1 after the stacks")
    assert alice.poll() is None
