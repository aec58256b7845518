"""The test run's reaper (`tests/reaper.py`), with real processes: once the runner it watches is
gone, every process carrying the run's token dies, and processes of another run are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from helpers import wait_for

REAPER = Path(__file__).parent.parent / "reaper.py"
SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_the_reaper_kills_the_runs_processes_once_the_runner_is_gone() -> None:
    token, other = uuid.uuid4().hex, uuid.uuid4().hex
    runner = subprocess.Popen(SLEEP, env={**os.environ, "SWARM_TEST_RUN": token})
    # a teammate the run left behind, in a session of its own (as `swarm spawn` starts one)
    left = subprocess.Popen(
        SLEEP, env={**os.environ, "SWARM_TEST_RUN": token}, start_new_session=True
    )
    stranger = subprocess.Popen(SLEEP, env={**os.environ, "SWARM_TEST_RUN": other})
    reaper = subprocess.Popen(
        [sys.executable, str(REAPER), token, str(runner.pid)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _alive(left.pid)  # the runner still runs: nothing is touched
        runner.kill()  # the runner dies as a CI timeout kills it
        runner.wait()
        _, err = reaper.communicate(timeout=60)
        assert reaper.returncode == 0, err
        left.wait(timeout=30)
        wait_for(lambda: not _alive(left.pid), "the left-behind process to be killed")
        assert "killed 1 processes the test run left" in err
        assert _alive(stranger.pid)  # another run's process is not this run's to kill
    finally:
        for proc in (runner, left, stranger, reaper):
            proc.kill()
            proc.wait()
