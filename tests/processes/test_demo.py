"""`make demo` works as the README says: the example runs offline to the end and reports each
step (subprocess backend here; the tmux backend is covered by the e2e tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_runs_offline_to_the_end(config_root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "shell_team_demo.py"), "--backend", "subprocess"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "asks: Run: rm -r build" in out and "completed #6" in out
    assert "dee asks: Write REPORT.md" in out
    assert "dee says: REPORT.md is written" in out
    assert "REPORT.md: # Board report" in out
    assert out.count(": approved") == 4
    assert "#6 completed" in out
    assert out.index("spawned ann") < out.index("task #1:")  # the team first, then its work


def test_the_readme_tour_runs_offline_as_written(config_root: Path, tmp_path: Path) -> None:
    """The README's session, with no API key and no network: its Claude teammate plays a
    scripted model, so `swarm config` and `swarm restart --resume` work on it too."""
    readme = (REPO / "README.md").read_text()
    tour = readme.split("## The `swarm` command", 1)[1].split("```bash\n", 1)[1].split("```")[0]
    assert "swarm spawn bea" in tour and "swarm restart bea --resume" in tour
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    socket = f"swarm-tour-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(CLAUDE_CONFIG_DIR=str(config_root), SWARM_TMUX_SOCKET=socket)
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env.pop("TMUX", None)
    try:
        result = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + tour],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "restarted bea" in result.stdout and "with its conversation" in result.stdout
    assert "deleted team 'demo'" in result.stdout
