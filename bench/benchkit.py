"""Helpers shared by the benchmark scripts: percentiles, verdicts, collecting child results."""

from __future__ import annotations

import math
import os
import queue
import subprocess
import sys
import time
from collections.abc import Sequence
from multiprocessing.queues import Queue
from typing import Any


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (`pct` in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def collect(results: Queue, count: int, timeout: float) -> list[Any]:
    """`count` items from `results`, waiting at most `timeout` seconds in all."""
    deadline = time.monotonic() + timeout
    items = []
    while len(items) < count:
        try:
            items.append(results.get(timeout=max(0.1, deadline - time.monotonic())))
        except queue.Empty:
            break
    return items


def lead_messages(mailbox: Any, kind: type) -> list[Any]:
    """Structured messages of type `kind` in the lead's inbox (`mailbox` is a `Mailbox`)."""
    return [
        m for m in (e.structured() for e in mailbox.read_all("team-lead")) if isinstance(m, kind)
    ]


def export_tree(repo: Any, rev: str, into: Any) -> Any:
    """The tree at `rev` of git repository `repo`, exported (no checkout, no worktree) into
    `into`: the baseline a benchmark runs beside this tree."""
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def peak_rss_mb(pid: int) -> float | None:
    """The peak resident memory of live process `pid` (VmHWM), in MiB."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def start_claude_teammate(
    name: str,
    team: str,
    root: str,
    workdir: Any,
    api_url: str,
    python: str = sys.executable,
    tree: Any = None,
    flags: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """A real Claude teammate process talking to the local Messages API server at `api_url`
    (run by `python`: another checkout's, to compare; or the code of `tree`, an exported
    checkout, on ``PYTHONPATH``), with extra `flags`; its output goes to
    ``<root>/<name>.log``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(CLAUDE_CONFIG_DIR=root, ANTHROPIC_BASE_URL=api_url, ANTHROPIC_API_KEY="bench")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    argv = [python, "-m", "teammate", "--agent-id", f"{name}@{team}", "--agent-name", name]
    argv += ["--team-name", team, "--model", "sonnet", *flags]
    with open(os.path.join(root, f"{name}.log"), "w") as log:
        return subprocess.Popen(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
