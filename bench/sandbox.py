"""What the bubblewrap sandbox adds to a Bash call: the median ms of one short command started
and waited for through a teammate's `Shells` (the Bash tool's path), in the sandbox and without.

What it measures
    Two `Shells` over the same working directory, one with a `Sandbox` (`teammate.sandbox`: the
    whole file system read-only, the directory and a TMPDIR writable, no network, its own pid
    namespace) and one without, each running ``echo ok > out.txt`` (a write, so the mounts are
    used), alternating call by call so both see the same machine load. Each call is a real
    ``bash -c`` process with its output in files, as the Bash tool runs it.

Figures
    ``median_plain_ms`` and ``median_sandboxed_ms`` per call, their difference ``added_ms`` (the
    target is under 10 ms), and p90 of each. Printed, never asserted. Needs bubblewrap (``make
    bubblewrap``); says so and exits 2 without it. The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import percentile, verdict

from teammate.sandbox.bwrap import Sandbox, unavailable
from teammate.sandbox.config import SandboxConfig
from teammate.tools.shells import Shells

TARGET_MS = 10.0


def one_call(shells: Shells, work: Path) -> float:
    """ms from starting the command to knowing it ended, and it wrote its file."""
    began = time.perf_counter()
    shell = shells.start("echo ok > out.txt", work, "bench")
    shell.finished.wait(30)
    took = (time.perf_counter() - began) * 1000
    assert shell.exit_code == 0 and (work / "out.txt").read_text() == "ok\n"
    shells.forget(shell)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind")
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        print(f"no sandbox here: {why}")
        return 2
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        work, tmp, files = base / "work", base / "tmp", base / "files"
        for directory in (work, tmp, files):
            directory.mkdir()
        sandbox = Sandbox(SandboxConfig(enabled=True), work.resolve(), tmp=tmp)
        plain, boxed = Shells(lambda: files), Shells(lambda: files, sandbox)
        times: dict[str, list[float]] = {"plain": [], "sandboxed": []}
        for _ in range(5):  # warm both paths (page cache, bwrap's binary)
            one_call(plain, work), one_call(boxed, work)
        for _ in range(args.calls):
            times["plain"].append(one_call(plain, work))
            times["sandboxed"].append(one_call(boxed, work))
    medians = {k: statistics.median(v) for k, v in times.items()}
    added = medians["sandboxed"] - medians["plain"]
    print(f"one Bash call (echo ok > out.txt), {args.calls} of each, alternating:")
    for kind, values in times.items():
        print(f"  {kind:<10} median {medians[kind]:6.2f} ms   p90 {percentile(values, 90):6.2f} ms")
    print(f"  the sandbox adds {added:.2f} ms per call (target < {TARGET_MS:g} ms): "
          f"{verdict(added < TARGET_MS)}")  # fmt: skip
    print(
        f"median_plain_ms={medians['plain']:.2f} median_sandboxed_ms={medians['sandboxed']:.2f} "
        f"added_ms={added:.2f} p90_plain_ms={percentile(times['plain'], 90):.2f} "
        f"p90_sandboxed_ms={percentile(times['sandboxed'], 90):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
