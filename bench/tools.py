"""A teammate's tools on real-job sizes, side by side with the tree before them.

What it measures
    * ``output``: a real Claude teammate process runs one Bash command that prints ``--gb`` GB
      (100-character lines); its peak RSS (VmHWM) against the same teammate's after a command
      that prints nothing. Target: < 100 MB above idle.
    * ``message``: the teammate runs ``sleep --sleep`` in the foreground; a message is sent to
      it once the command runs; the figure is the time from the send to the model request that
      carries the message (the test server's arrival clock, this process's). Target: < 1 s.
      The baseline waits for the command to end: it is watched for at most ``--baseline-wait``
      seconds, and reported as more than that if the message has not reached the model by then.
    * ``read`` and ``search``: `bench/read_memory.py` (peak RSS of a teammate reading a 1 GB
      file by parts) and `bench/search.py` (Glob and Grep over a 50,000-file tree with a large
      ignored folder, against ripgrep), run as they are, their figures printed here.

Baseline
    The tree at ``--baseline`` (default fa8f768, the commit issue 37 was measured on), exported
    with ``git archive`` and run with ``PYTHONPATH`` pointing at it, in the same run, against
    the same server (`tests/messages_api.py`), with the same scripted model.

Everything runs under temporary config roots, never ``~/.claude``. The last line is
``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import export_tree, peak_rss_mb, start_claude_teammate
from helpers import wait_for
from messages_api import MessagesAPI, Turn

from protocols import Mailbox, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.messages.models import ShutdownRequest

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
BASELINE = "fa8f768"
TEAM = "tools"
NAME = "alice"


class Teammate:
    """One teammate of one tree in a fresh config root, talking to `api`."""

    def __init__(self, tree: Path | None, scratch: Path, api: MessagesAPI) -> None:
        self.root = scratch / "config"
        self.work = scratch / "work"
        self.root.mkdir()
        self.work.mkdir()
        self.paths = TeamPaths(self.root, TEAM)
        TeamFile(self.paths).create(description="tools", cwd=self.work)
        TeamFile(self.paths).add_member(NAME, cwd=self.work, model="sonnet")
        self.proc = start_claude_teammate(
            NAME,
            TEAM,
            str(self.root),
            self.work,
            api.url,
            tree=tree,
            flags=["--permission-mode", "bypassPermissions"],
        )

    def tell(self, text: str, sender: str = "team-lead") -> None:
        Mailbox(self.paths).send(NAME, text, sender=sender)

    def stop(self) -> None:
        request = ShutdownRequest(
            requestId=f"shutdown-1@{NAME}", from_="team-lead", timestamp=now_iso()
        )
        Mailbox(self.paths).send(NAME, request, sender="team-lead")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        _kill_sleepers()


def output_rss(tree: Path | None, gigabytes: float) -> tuple[float, float]:
    """(peak RSS after a command that prints nothing, after one that prints `gigabytes`)."""
    lines = int(gigabytes * 1e9 / 100)
    big = f"yes {'x' * 99} | head -n {lines}"
    peaks = []
    for command in ("true", big):
        script = [Turn.tool("Bash", {"command": command, "timeout": 600_000}), Turn.text("Done.")]
        with (
            tempfile.TemporaryDirectory(prefix="swarm-tools-") as scratch,
            MessagesAPI(script) as api,
        ):
            mate = Teammate(tree, Path(scratch), api)
            mate.tell("run it")
            wait_for(lambda: len(api.requests) >= 2, "the command to end", timeout=900)
            peaks.append(peak_rss_mb(mate.proc.pid) or 0.0)
            mate.stop()
    return peaks[0], peaks[1]


def message_latency(tree: Path | None, seconds: int, watch_s: float) -> float | None:
    """Seconds from a message's send to the model request carrying it, while the teammate
    runs ``sleep seconds`` in the foreground (None: not within `watch_s`)."""
    script = [Turn.tool("Bash", {"command": f"sleep {seconds}", "timeout": 600_000})]
    with tempfile.TemporaryDirectory(prefix="swarm-tools-") as scratch, MessagesAPI(script) as api:
        mate = Teammate(tree, Path(scratch), api)
        mate.tell("run the long tests")
        wait_for(lambda: _sleeping(seconds), f"sleep {seconds} to run", timeout=60)
        sent = time.monotonic()
        mate.tell("what is the status?", sender="bob")
        try:
            wait_for(lambda: len(api.arrivals) >= 2, "the message to reach the model", watch_s)
            latency: float | None = api.arrivals[1][0] - sent
        except AssertionError:
            latency = None
        mate.stop()
    return latency


def _sleeping(seconds: int) -> bool:
    return bool(_sleepers(seconds))


def _sleepers(seconds: int | None = None) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if words[0] == b"sleep" and (seconds is None or words[1:2] == [str(seconds).encode()]):
                found.append(int(entry.name))
    return found


def _kill_sleepers() -> None:
    """The baseline leaves its command running past its own end: stop what this bench started
    (a ``sleep`` under a tools config root)."""
    for pid in _sleepers():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if b"swarm-tools-" in environ:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)


def run_script(name: str, args: list[str]) -> str:
    """Another bench script's output (its last line is key=value pairs)."""
    result = subprocess.run(
        [sys.executable, str(BENCH / name), *args], capture_output=True, text=True, check=False
    )
    return (result.stdout + result.stderr).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="output,message,read,search")
    parser.add_argument("--gb", type=float, default=1.0, help="GB of output for `output`")
    parser.add_argument("--sleep", type=int, default=600, help="seconds of the long command")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--baseline-wait", type=float, default=30.0)
    parser.add_argument("--small", action="store_true", help="tiny sizes for a smoke test")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    pairs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="swarm-baseline-") as base:
        trees: dict[str, Path | None] = {"this tree": None}
        if not args.no_baseline:
            trees[f"baseline {args.baseline}"] = export_tree(REPO, args.baseline, Path(base))
        if "output" in parts:
            print(f"a command printing {args.gb:g} GB: the teammate's peak RSS")
            for label, tree in trees.items():
                idle, busy = output_rss(tree, args.gb)
                grew = f"+{busy - idle:.0f}"
                print(f"  {label:24} idle {idle:7.0f} MiB   after {busy:7.0f} MiB   ({grew})")
                key = "output" if tree is None else "baseline_output"
                pairs[f"{key}_rss_over_idle_mb"] = round(busy - idle)
        if "message" in parts:
            print(f"a message while `sleep {args.sleep}` runs: from its send to the model")
            for label, tree in trees.items():
                watch = 30.0 if tree is None else args.baseline_wait
                latency = message_latency(tree, args.sleep, watch)
                shown = (
                    f"{latency:.3f} s"
                    if latency is not None
                    else f"> {watch:g} s (waits for the command)"
                )
                print(f"  {label:24} {shown}")
                key = "message" if tree is None else "baseline_message"
                pairs[f"{key}_s"] = round(latency, 3) if latency is not None else f">{watch:g}"
    small = ["--size-mb", "20"] if args.small else []
    if "read" in parts and (BENCH / "read_memory.py").exists():
        print("\nbench/read_memory.py:\n" + run_script("read_memory.py", small))
    if "search" in parts and (BENCH / "search.py").exists():
        files = ["--files", "2000"] if args.small else []
        print("\nbench/search.py:\n" + run_script("search.py", files))
    print(" ".join(f"{k}={v}" for k, v in pairs.items()))


if __name__ == "__main__":
    main()
