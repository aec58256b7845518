"""Running `swarm` against the test server: its conninfo as a store URL, and `swarm` commands
as processes (shared by the tests of tests/pg)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import DEADLINE_S
from helpers import url_of as url_of  # where the contract suite finds it too


def swarm(
    *args: str, cwd: Path, env: dict[str, str] | None = None, team: str | None = "t"
) -> subprocess.CompletedProcess[str]:
    """`python -m swarm ARGS` as a process, in the test's config root (or `env`'s)."""
    full = {k: v for k, v in os.environ.items() if k != "SWARM_STORE"}
    full.update(env or {})
    if team:
        full["SWARM_TEAM"] = team
    return subprocess.run(
        [sys.executable, "-m", "swarm", *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 2,
        env=full,
        cwd=cwd,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result.stdout


def bridged_claude_code(tmp_path: Path, config_root: Path, conninfo: str) -> tuple[Path, Path, str]:
    """The set-up of a test with real Claude Code on a bridged host: the newest Claude Code
    (the test is skipped when it cannot be installed), a work directory it trusts, and team
    ``t`` created on the store there. Returns (the program, the work directory, the URL)."""
    import claude_code
    import pytest

    try:
        claude = claude_code.install(claude_code.NEWEST)
    except claude_code.Unavailable as exc:
        pytest.skip(str(exc))
    work = tmp_path / "work"
    work.mkdir()
    claude_code.trust(config_root, work)
    store_url = url_of(conninfo)
    ok(swarm("team", "create", "t", "--store", store_url, "--cwd", str(work), cwd=work))
    return claude, work, store_url
