"""`swarm down`, `swarm stop` and `swarm start` with real teammates and the real CLI: `down` says
whom it waits for, obeys Ctrl-C at once (exit 130, the team's files kept, saying who went and
who was only asked) and finishes when run again; `stop` stops every member and keeps the files
and each member's tasks (nobody else takes them), `start` brings the members back, each
carrying on with its tasks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from multiprocessing import get_context
from pathlib import Path

from helpers import ctrl_c_obeyed, spawn_worker, swarm, wait_for

from protocols.fs.locks import FileGuard
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def pause_holding_no_lock(pid: int, root: Path) -> None:
    """SIGSTOP `pid` at a moment it holds no file's lock under `root` (none of the ``.flock``
    files there locked by it in /proc/locks; its instance lock it holds for life): alive but
    deaf. (Paused inside a lock, it would hold up every writer of that file for the lock's
    timeout: the subject of `test_down_says_which_member_a_paused_lock_holder_...` below, not of this one.)"""

    def paused_free() -> bool:
        os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: _state(pid) == "T", f"{pid} to stop")
        if _data_locks_held(pid, root):
            os.kill(pid, signal.SIGCONT)  # inside a lock: let it out and try again
            return False
        return True

    wait_for(paused_free, f"{pid} to be paused outside every lock")


def _data_locks_held(pid: int, root: Path) -> bool:
    inodes = {f.stat().st_ino for f in root.rglob("*.flock")}
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[4] == str(pid) and int(fields[5].rsplit(":", 1)[1]) in inodes:
            return True
    return False


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]


def _hold_paused(config: str) -> None:
    """Child: take config.json's lock as swarm does, then stop itself (SIGSTOP) holding it."""
    with FileGuard(Path(config), keep_lock_dir=True):
        os.kill(os.getpid(), signal.SIGSTOP)


def test_down_says_whom_it_waits_for_obeys_ctrl_c_and_finishes_when_run_again(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    ann, bea = spawn_worker("ann", work), spawn_worker("bea", work)
    pause_holding_no_lock(bea, config_root)  # alive, but it cannot answer: down must wait for it
    try:
        down = subprocess.Popen(
            [sys.executable, "-m", "swarm", "down", "t", "--wait", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SWARM_TEAM": "t"},
            preexec_fn=ctrl_c_obeyed,
        )
        assert down.stderr is not None
        said = [down.stderr.readline()]
        assert "asking ann, bea to shut down; waiting up to 60 s" in said[0], said
        # ann agrees and goes; bea is still awaited, and down says so as it waits
        # (on a loaded machine a "still waiting" line may come while ann is still on its way out,
        # before the line that says it agreed: read until both are said)
        while not (
            any("still waiting for bea" in line for line in said)
            and any(line.startswith("ann: agreed to shut down") for line in said)
        ):
            said.append(down.stderr.readline())
            assert said[-1], said
        assert any(line.startswith("ann: agreed to shut down") for line in said), said
        down.send_signal(signal.SIGINT)
        out, err = down.communicate(timeout=30)
        assert down.returncode == 130, (out, err)
        assert "interrupted; stopped: ann" in err and "still running: bea" in err, err
        assert "run `swarm down` again to finish" in err and "Traceback" not in err
        paths = TeamPaths(config_root, "t")
        assert paths.config.exists()  # nothing deleted
        assert TeamFile(paths).load().member_names() == ["team-lead", "bea"]
        assert not alive(ann)
    finally:
        os.kill(bea, signal.SIGCONT)
    # bea reads the request it was sent, agrees and exits by itself; down run again finishes
    wait_for(lambda: not alive(bea), "bea to act on the request it was sent")
    again = swarm("down", "t", "--wait", "5")
    assert again.returncode == 0, again.stderr
    assert "deleted team 't'" in again.stdout
    assert not TeamPaths(config_root, "t").team_dir.exists()
    assert not TeamPaths(config_root, "t").tasks_dir.exists()


def test_down_says_which_member_a_paused_lock_holder_kept_listed_and_deletes_the_team(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    ann = spawn_worker("ann", work)
    pause_holding_no_lock(
        ann, config_root
    )  # so it cannot be inside config.json's lock when the child takes it
    holder = get_context("spawn").Process(target=_hold_paused, args=(str(paths.config),))
    holder.start()
    try:
        assert holder.pid is not None
        wait_for(lambda: _state(holder.pid) == "T", "the child to hold config.json's lock, paused")
        os.kill(ann, signal.SIGCONT)
        env = {**os.environ, "SWARM_TEAM": "t", "SWARM_LOCK_TIMEOUT": "2"}
        down = subprocess.run(
            [sys.executable, "-m", "swarm", "down", "t", "--wait", "20"],
            capture_output=True, text=True, env=env, timeout=90,
        )  # fmt: skip
        # ann agreed and went, but config.json stayed locked: down says it could not remove
        # ann from the team, and deletes the team's files all the same (no lock is needed)
        said = down.stdout + down.stderr
        assert down.returncode == 0, said
        assert "ann: error: ann was stopped, but could not be removed from team 't'" in said
        assert "within 2 s (another swarm process holds it)" in said
        assert "deleted team 't'" in said and "Traceback" not in said
        assert not alive(ann)
        assert not paths.team_dir.exists()
    finally:
        os.kill(holder.pid, signal.SIGCONT)  # type: ignore[arg-type]
        holder.join(30)


def test_down_finishes_a_deletion_cut_short(config_root: Path, tmp_path: Path) -> None:
    assert swarm("team", "create", "t", "--cwd", str(tmp_path), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    TaskBoard(paths).create("left over")
    paths.config.unlink()  # as a deletion killed after removing the team's file leaves it
    done = swarm("down", "t")
    assert done.returncode == 0, done.stderr
    assert not paths.team_dir.exists() and not paths.tasks_dir.exists()
    missing = swarm("down", "t")
    assert missing.returncode == 1 and "team 't' not found" in missing.stderr


def test_stop_keeps_the_files_and_the_tasks_and_start_carries_on(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    board = TaskBoard(paths)
    # the task waits for a file the test writes after the restart
    wait_go = "while [ ! -e go ]; do sleep 0.05; done; echo done >> runs.txt"
    added = swarm("task", "add", "wait for go", "--command", wait_go, "--cwd", str(work))
    assert added.returncode == 0, added.stderr
    ann = spawn_worker("ann", work)
    wait_for(lambda: board.require("1").status == "in_progress", "ann to take task #1")
    stopped = swarm("stop", "t", "--wait", "2")
    assert stopped.returncode == 0, stopped.stderr
    assert "ann:" in stopped.stdout and "swarm start t" in stopped.stdout
    assert not alive(ann)
    task = board.require("1")
    assert (task.owner, task.status) == ("ann", "pending")  # still ann's
    status = json.loads(swarm("status", "--json").stdout)
    (shown,) = [m for m in status["members"] if m["name"] == "ann"]
    assert shown["state"] == "stopped"
    # another worker does not take a stopped member's task
    bob = spawn_worker("bob", work)
    wait_for(lambda: json.loads(swarm("status", "--json").stdout)["members"], "bob")
    assert board.require("1").owner == "ann"
    sent = swarm("send", "ann", "hello $(whoami)")
    assert sent.returncode == 0 and "waits in its inbox" in sent.stderr

    started = swarm("start", "t")
    assert started.returncode == 0, started.stderr
    assert "started ann (fresh)" in started.stdout and "its tasks: #1" in started.stdout
    new_ann = TeamFile(paths).load().require("ann")
    identity = ProcessIdentity.from_value(new_ann.to_json_dict())
    assert identity is not None and identity.alive() and identity.pid != ann
    (work / "go").touch()
    wait_for(lambda: board.require("1").status == "completed", "ann to finish task #1")
    assert board.require("1").owner == "ann"
    assert (work / "runs.txt").read_text() == "done\n"  # run once: by ann, after the restart
    nothing = swarm("start", "t")
    assert nothing.returncode == 0 and "nothing to start" in nothing.stdout
    assert swarm("down", "t", "--wait", "5").returncode == 0
    assert not alive(bob)
