"""Processes are known by identity, and a teammate's processes all go with it (issue 13,
items 4, 8 and 17).

- A dead member's pid taken by an unrelated process (really reused through ns_last_pid where
  the kernel lets root set it, else recorded as if it were) must not make the member look alive,
  and no command may signal that stranger.
- A worker killed while its task's command runs: reap, ``shutdown --force``, ``swarm down`` and
  the teammate's own exit stop the command too (its process group, and whatever carries the
  teammate's token), so the returned task never runs twice at once.
- A ``swarm spawn`` killed before it started the teammate leaves a member that reap removes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import BACKENDS, swarm, wait_for

from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity, pid_alive, start_time
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def states(team: str = "t") -> dict[str, str]:
    view = json.loads(swarm("status", "--json", team=team).stdout)
    return {m["name"]: m["state"] for m in view["members"]}


def spawn(name: str, cwd: Path, backend: str = "subprocess") -> None:
    result = swarm("spawn", name, "--prompt", "Work.", "--backend", backend, "--cwd", str(cwd))
    assert result.returncode == 0, result.stderr


def stranger_with_pid(pid: int) -> subprocess.Popen[bytes]:
    """An unrelated process, given `pid` when the kernel allows choosing it (root can write
    ns_last_pid), else any pid; the caller records it in the member's entry either way."""
    for _ in range(20):
        try:
            NS_LAST_PID.write_text(str(pid - 1))
        except OSError:
            break
        proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


@pytest.mark.parametrize("command", ["status", "reap", "shutdown --force", "down"])
def test_a_reused_pid_is_a_stranger_never_a_member(
    command: str, tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    spawn("alice", tmp_path)
    paths = TeamPaths(config_root, "t")
    team = TeamFile(paths)
    alice = team.load().member("alice")
    pid = alice.model_extra["pid"]
    assert alice.model_extra["pidStart"] == start_time(pid)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), "alice to die")
    stranger = stranger_with_pid(pid)
    try:
        if stranger.pid != pid:  # could not choose the pid: record it as if it had been reused
            team.update_member("alice", pid=stranger.pid)
        assert team.load().member("alice").model_extra["pid"] == stranger.pid
        if command == "status":
            assert states()["alice"] == "dead"
        elif command == "reap":
            assert "reaped alice" in swarm("reap").stdout
        elif command == "shutdown --force":
            result = swarm("shutdown", "alice", "--force", "--wait", "0.5")
            assert result.returncode == 0, result.stderr
        else:
            assert swarm("down", "t", team=None).returncode == 0
        assert stranger.poll() is None, "the stranger was signalled"
        assert pid_alive(stranger.pid)
    finally:
        stranger.kill()
        stranger.wait()


SLEEPER = "sleep 300 & echo $! > sleeper.pid; wait"


def start_sleeping_worker(tmp_path: Path, config_root: Path, backend: str) -> tuple[int, int]:
    """A worker running a task whose command leaves a `sleep 300` child: (worker, sleeper)."""
    swarm("team", "create", "t", team=None)
    spawn("w1", tmp_path, backend)
    swarm("task", "add", "sleep", "--command", SLEEPER)
    board = TaskBoard(TeamPaths(config_root, "t"))
    wait_for(
        lambda: (tmp_path / "sleeper.pid").exists() and (tmp_path / "sleeper.pid").read_text(),
        "the command to start its child",
    )
    assert board.require("1").owner == "w1"
    worker = TeamFile(TeamPaths(config_root, "t")).load().member("w1").model_extra["pid"]
    return worker, int((tmp_path / "sleeper.pid").read_text())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["reap after kill -9", "shutdown --force", "down", "sigterm"])
def test_what_a_worker_started_goes_with_it(
    how: str, backend: str, tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    worker, sleeper = start_sleeping_worker(tmp_path, config_root, backend)
    identity = ProcessIdentity.of(sleeper)
    assert identity is not None
    try:
        if how == "reap after kill -9":
            os.kill(worker, signal.SIGKILL)
            wait_for(lambda: not pid_alive(worker), "the worker to die")
            assert "reaped w1" in swarm("reap").stdout
            # the task is back on the board only once its command is gone: no double run
            assert TaskBoard(TeamPaths(config_root, "t")).require("1").status == "pending"
            assert not identity.alive(), "the command outlived the reap"
        elif how == "shutdown --force":
            result = swarm("shutdown", "w1", "--force", "--wait", "0.5")
            assert result.returncode == 0, result.stderr
            assert not identity.alive(), "the command outlived shutdown --force"
        elif how == "down":
            assert swarm("down", "t", "--wait", "0.5", team=None).returncode == 0
            assert not identity.alive(), "the command outlived swarm down"
        else:
            os.kill(worker, signal.SIGTERM)  # the teammate's own exit
            wait_for(lambda: not pid_alive(worker), "the worker to exit")
            wait_for(lambda: not identity.alive(), "the command to go with the worker", 10)
    finally:
        if identity.alive():
            os.kill(sleeper, signal.SIGKILL)


def test_a_spawn_killed_before_it_started_the_teammate_is_reaped(
    config_root: Path, tmp_path: Path
) -> None:
    """The member entry a killed `swarm spawn` left (no pid, its spawner gone) is dead, not
    "starting" for ever: reap removes it and frees the name."""
    swarm("team", "create", "t", team=None)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    spawner = ProcessIdentity.of(gone.pid)
    assert spawner is not None
    gone.wait()
    team = TeamFile(TeamPaths(config_root, "t"))
    team.add_member("ghost", cwd=tmp_path, spawnedBy=spawner.to_value(), processToken="t0k")
    assert states()["ghost"] == "dead"
    assert "reaped ghost" in swarm("reap").stdout
    spawn("ghost", tmp_path)
    assert states()["ghost"] in ("idle", "working")
    assert swarm("shutdown", "ghost").returncode == 0


@pytest.mark.slow
def test_spawns_killed_at_random_moments_leave_nothing_stuck(
    config_root: Path, tmp_path: Path
) -> None:
    swarm("team", "create", "t", team=None)
    rng = random.Random(os.environ.get("SWARM_TEST_SEED", "spawn-kills"))
    env = {**os.environ, "SWARM_TEAM": "t"}
    names = [f"k{n}" for n in range(8)]
    for name in names:
        proc = subprocess.Popen(
            [sys.executable, "-m", "swarm", "spawn", name, "--prompt", "hi", "--backend",
             "subprocess", "--cwd", str(tmp_path)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(rng.uniform(0.05, 0.9))  # a random moment of its work, not a wait
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    swarm("reap")
    team = TeamFile(TeamPaths(config_root, "t"))
    left = {name: state for name, state in states().items() if name in names}
    # whatever survived the kills was started and joined; nothing waits for a dead spawner
    assert all(state in ("idle", "working") for state in left.values()), left
    for name in names:
        if name in left:
            assert swarm("shutdown", name).returncode == 0
        else:
            spawn(name, tmp_path)  # the name is free again
            assert swarm("shutdown", name).returncode == 0
    assert [m.name for m in team.load().members] == ["team-lead"]
