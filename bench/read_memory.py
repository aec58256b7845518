"""Peak RSS of a teammate reading a 1 GB file with Read's offset and limit, against its RSS idle.

What it measures
    A 1 GB text file (``--size-mb``; lines of 100 bytes, each starting with its number) is
    made in a temporary directory. One real teammate process (``python -m teammate --model
    sonnet``) talks through the real `anthropic` SDK to the test suite's local Messages API
    server (``tests/messages_api.py``), which scripts its model:

    1. a first prompt, answered with text only: the teammate goes idle having read nothing.
       Its ``VmRSS`` and ``VmHWM`` (peak RSS) from ``/proc/<pid>/status`` are the baseline;
    2. a second prompt, answered with Reads of the file: lines 1-2000 (the start), 2000 lines
       from the middle, the last 2000 lines (``offset``/``limit``), then a Read of the whole file
       (refused: it is over Read's 256 KB limit for a file read without a range), then text.
       When the teammate is idle again, its ``VmHWM`` is read before it is shut down.

    Each Read's result must start (or, refused, fail) as expected: ``wrong_reads`` counts those
    that did not. The figure is ``above_idle_mb`` = peak RSS after the reads minus RSS idle
    before them; the target is under 100 MB (the Read that loaded the file whole, before this
    change, needed the file's size and more).

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR``), never ``~/.claude``; the
teammate is shut down with a ``shutdown_request``. The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import lead_messages, start_claude_teammate, verdict
from helpers import wait_for as wait_until
from messages_api import MessagesAPI, Turn

from protocols import LEAD_NAME, Mailbox, TeamFile, TeamPaths
from protocols.clock import now_iso
from protocols.messages.models import IdleNotification, ShutdownApproved, ShutdownRequest

TEAM = "read-memory"
NAME = "alice"
LINE_BYTES = 100
PAGE = 2000  # lines a Read asks for
TARGET_MB = 100.0
DEADLINE_S = 120.0


def line(number: int) -> str:
    return f"{number:012d} " + "r" * (LINE_BYTES - 14) + "\n"


def make_file(path: Path, size_mb: int) -> int:
    """A text file of about `size_mb` MiB; its number of lines."""
    lines = max(size_mb * 2**20 // LINE_BYTES, 3 * PAGE)
    chunk = 10_000
    with path.open("w", encoding="ascii") as out:
        for start in range(1, lines + 1, chunk):
            out.write("".join(line(n) for n in range(start, min(start + chunk, lines + 1))))
    return lines


def reads(lines: int) -> list[tuple[dict[str, Any], int | None]]:
    """The Reads asked for, each with the first line its result must show (None: refused)."""
    middle = lines // 2
    last = lines - PAGE + 1
    return [
        ({"file_path": "big.log", "offset": 1, "limit": PAGE}, 1),
        ({"file_path": "big.log", "offset": middle, "limit": PAGE}, middle),
        ({"file_path": "big.log", "offset": last, "limit": PAGE}, last),
        ({"file_path": "big.log"}, None),
    ]


def script(lines: int) -> list[Turn]:
    return [
        Turn.text("Ready."),
        *(Turn.tool("Read", fields) for fields, _ in reads(lines)),
        Turn.text("Read the start, the middle and the end of big.log."),
    ]


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of process `pid`, in kB."""
    found = {}
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = row.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def wrong_reads(requests: list[dict[str, Any]], lines: int) -> int:
    """Reads whose result was not the one meant (a page starting at its line, or refused)."""
    results = [
        block
        for body in requests
        for block in body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    wrong = abs(len(results) - len(reads(lines)))
    for result, (_, first) in zip(results, reads(lines), strict=False):
        content = result.get("content")
        if first is None:
            refused = isinstance(content, str) and "more than Read shows whole" in content
            wrong += not (result.get("is_error") and refused)
        else:
            wrong += not (isinstance(content, str) and content.startswith(f"{first:>6}\t"))
    return wrong


def run(size_mb: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="swarm-bench-read-memory-") as root:
        os.environ["CLAUDE_CONFIG_DIR"] = root
        workdir = Path(root) / "work"
        workdir.mkdir()
        lines = make_file(workdir / "big.log", size_mb)
        paths = TeamPaths(Path(root), TEAM)
        team = TeamFile(paths)
        team.create(description="read memory", cwd=workdir)
        team.add_member(NAME, cwd=workdir)
        mailbox = Mailbox(paths)
        with MessagesAPI(script(lines)) as api:
            proc = start_claude_teammate(NAME, TEAM, root, workdir, api.url)
            try:
                idle = prompted(mailbox, proc, "Say when you are ready.", 1)
                peak = prompted(mailbox, proc, "Read the start, middle and end of big.log.", 2)
                shut_down(mailbox, proc, Path(root) / f"{NAME}.log")
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
            wrong = wrong_reads(api.requests, lines)
        size = (workdir / "big.log").stat().st_size
    return {
        "file_mb": size / 2**20,
        "idle_rss_mb": idle["VmRSS"] / 1024,
        "idle_hwm_mb": idle["VmHWM"] / 1024,
        "peak_rss_mb": peak["VmHWM"] / 1024,
        "wrong_reads": wrong,
    }


def prompted(
    mailbox: Mailbox, proc: subprocess.Popen[bytes], text: str, idles: int
) -> dict[str, int]:
    """Send `text`; once the teammate is idle for the `idles`-th time, its memory."""
    mailbox.send(NAME, text, sender=LEAD_NAME, summary=text[:40])
    wait_until(
        lambda: len(lead_messages(mailbox, IdleNotification)) >= idles,
        f"alice to go idle ({idles})",
        timeout=DEADLINE_S,
    )
    return memory_kb(proc.pid)


def shut_down(mailbox: Mailbox, proc: subprocess.Popen[bytes], log: Path) -> None:
    request = ShutdownRequest(requestId=f"shutdown-1@{NAME}", from_=LEAD_NAME, timestamp=now_iso())
    mailbox.send(NAME, request, sender=LEAD_NAME)
    code = proc.wait(timeout=DEADLINE_S)
    if code != 0 or not lead_messages(mailbox, ShutdownApproved):
        raise SystemExit(f"alice did not shut down cleanly (exit code {code}):\n{log.read_text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="the file's size, MiB")
    args = parser.parse_args()
    figures = run(args.size_mb)
    above = figures["peak_rss_mb"] - figures["idle_rss_mb"]
    print(
        f"a {figures['file_mb']:.0f} MiB file: Reads of 2000 lines at its start, middle and "
        "end, then a Read of all of it (refused), by one teammate process"
    )
    print(
        f"  idle, having read nothing: VmRSS {figures['idle_rss_mb']:.1f} MiB, "
        f"VmHWM {figures['idle_hwm_mb']:.1f} MiB"
    )
    print(f"  after the reads: VmHWM {figures['peak_rss_mb']:.1f} MiB")
    print(
        f"  peak above idle: {above:.1f} MiB (target < {TARGET_MB:.0f} MiB: "
        f"{verdict(above < TARGET_MB)}); wrong reads: {figures['wrong_reads']}"
    )
    print(
        f"file_mb={figures['file_mb']:.0f} idle_rss_mb={figures['idle_rss_mb']:.1f} "
        f"idle_hwm_mb={figures['idle_hwm_mb']:.1f} peak_rss_mb={figures['peak_rss_mb']:.1f} "
        f"above_idle_mb={above:.1f} target_mb={TARGET_MB:.0f} "
        f"wrong_reads={figures['wrong_reads']}"
    )


if __name__ == "__main__":
    main()
