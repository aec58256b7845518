"""What the sandbox adds to a Bash call: the median ms of one short command started and waited
for through a teammate's `Shells` (the Bash tool's path), without a sandbox, in bubblewrap, in
bubblewrap with a list of allowed domains (the proxy's forwarder started first), and under
Landlock (where the kernel has it: the sandbox where bubblewrap cannot run).

What it measures
    `Shells` over the same working directory, one without a sandbox and one per kind of
    sandbox (`teammate.sandbox`: the whole file system read-only, the directory and a TMPDIR
    writable, no network or only the proxy), each running ``echo ok > out.txt`` (a write, so
    the rules are used), alternating call by call so all see the same machine load. Each call
    is a real ``bash -c`` process with its output in files, as the Bash tool runs it.

Figures
    The median and p90 ms per call of each kind, and what each sandbox adds to the plain call
    (the target is under 10 ms). Printed, never asserted. Needs bubblewrap (``make
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

from teammate.sandbox import landlock
from teammate.sandbox.bwrap import Sandbox, unavailable
from teammate.sandbox.config import SandboxConfig
from teammate.sandbox.landlock import LandlockSandbox
from teammate.sandbox.proxy import DomainProxy
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
        config = SandboxConfig(enabled=True)
        listed = SandboxConfig(enabled=True, allowed_domains=("example.com",))
        proxy = DomainProxy(tmp / ".proxy.sock", listed.domains)
        kinds = {
            "plain": Shells(lambda: files),
            "bwrap": Shells(lambda: files, Sandbox(config, work.resolve(), tmp=tmp)),
            "bwrap+proxy": Shells(
                lambda: files, Sandbox(listed, work.resolve(), tmp=tmp, proxy=proxy)
            ),
        }
        abi = landlock.available()
        if abi is not None:
            boxed = LandlockSandbox(config, work.resolve(), tmp=tmp, abi=abi)
            kinds["landlock"] = Shells(lambda: files, boxed)
        times: dict[str, list[float]] = {kind: [] for kind in kinds}
        for _ in range(5):  # warm every path (page cache, bwrap's binary)
            for shells in kinds.values():
                one_call(shells, work)
        for _ in range(args.calls):  # alternating call by call: the same machine load
            for kind, shells in kinds.items():
                times[kind].append(one_call(shells, work))
        proxy.close()
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(f"one Bash call (echo ok > out.txt), {args.calls} of each kind, alternating:")
    for kind, values in times.items():
        added = medians[kind] - medians["plain"]
        judged = "" if kind == "plain" else (
            f"   adds {added:6.2f} ms (target < {TARGET_MS:g} ms): {verdict(added < TARGET_MS)}"
        )  # fmt: skip
        print(f"  {kind:<12} median {medians[kind]:6.2f} ms   p90 "
              f"{percentile(values, 90):6.2f} ms{judged}")  # fmt: skip
    print(" ".join(
        f"{kind.replace('+', '_')}_median_ms={medians[kind]:.2f}" for kind in times
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
