"""`make demo` works as the README says: the example runs offline to the end and reports each
step (subprocess backend here; the tmux backend is covered by the e2e tests)."""

from __future__ import annotations

import os
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
    assert "asks: Run: rm -r build" in out and "finished #6: resolved" in out
    assert "dee asks: Write REPORT.md" in out
    assert "dee says: REPORT.md is written" in out
    assert "REPORT.md: # Board report" in out
    assert out.count(": approved") == 4
    assert "#6 completed" in out
