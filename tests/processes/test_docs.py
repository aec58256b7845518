"""The Python examples in README.md and docs/ run as written (each file's blocks in order, in a
fresh interpreter with its own CLAUDE_CONFIG_DIR)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from messages_api import MessagesAPI, Turn

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize(
    "doc", [d for d in DOCS if BLOCK.search(d.read_text())], ids=lambda p: p.name
)
def test_python_examples_run(doc: Path, config_root: Path) -> None:
    program = "\n".join(BLOCK.findall(doc.read_text()))
    result = subprocess.run(
        [sys.executable, "-c", program],
        cwd=REPO,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(config_root)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    for expected in re.findall(r"print\(.*?\)\s+# (.+)$", program, re.M):
        assert expected.strip() in result.stdout, f"{expected!r} not in output:\n{result.stdout}"


SHELL_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize(
    "doc", [d for d in DOCS if SHELL_BLOCK.search(d.read_text())], ids=lambda p: p.name
)
def test_shell_examples_run(doc: Path, config_root: Path, tmp_path: Path) -> None:
    """Each doc's bash blocks, in order, in one shell, as a user runs them from a checkout:
    the repository's examples/ are there, tmux is a private server, and a model name such as
    ``sonnet`` talks to the local Messages API server (every answer: "Done."), not the network."""
    script = "set -euo pipefail\n" + "\n".join(SHELL_BLOCK.findall(doc.read_text()))
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    socket = f"swarm-docs-{os.getpid()}"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_root), "SWARM_TMUX_SOCKET": socket}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env.pop("TMUX", None)
    with MessagesAPI(lambda body: Turn.text("Done."), concurrent=True) as api:
        env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key")
        try:
            result = subprocess.run(
                ["bash", "-c", script],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
        finally:
            _stop_teams(config_root)
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def _stop_teams(config_root: Path) -> None:
    """Stop whatever teammates an example left running (subprocess ones outlive tmux)."""
    for team_dir in sorted((config_root / "teams").glob("*")):
        if (team_dir / "config.json").exists():
            subprocess.run(
                [sys.executable, "-m", "swarm", "down", team_dir.name, "--wait", "5"],
                env={**os.environ, "CLAUDE_CONFIG_DIR": str(config_root)},
                capture_output=True,
                check=False,
                timeout=60,
            )


def test_the_architecture_map_names_every_module() -> None:
    """docs/architecture.md's folder map lists each module of the three packages by its file
    name, in the folder it lives in."""
    text = (REPO / "docs" / "architecture.md").read_text()
    start = text.index("## Folders: every module")
    folder_map = text[start : text.index("\n## ", start + 1)]
    missing = []
    for package in ("protocols", "teammate", "swarm"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path.name in ("__init__.py", "__main__.py") or "__pycache__" in path.parts:
                continue
            folder = path.parent.relative_to(REPO).as_posix()
            head = folder.split("/")[-1] + "/"
            if path.name not in folder_map or head not in folder_map:
                missing.append(path.relative_to(REPO).as_posix())
    assert not missing, f"not in docs/architecture.md's folder map: {missing}"
