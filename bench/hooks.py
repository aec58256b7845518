"""What a command hook adds to a tool call: the median ms of one ``Read`` call through the
agent loop with a trivial ``PreToolUse`` hook (``true``), against the same call with no hook.

What it measures
    Two `AgentLoop`s over the same directory, one with no hooks and one whose settings hold one
    PreToolUse hook ``{"matcher": "", "command": "true"}``, each run the same tool call (``Read``
    of a small file, through the loop's tool path: the hook, the permission decision, the tool,
    the transcript record), alternating call by call so both see the same machine load. The
    hook is a real ``/bin/sh -c true`` process fed the call's JSON on stdin, as in a teammate.

Figures
    ``median_no_hook_ms`` and ``median_hook_ms`` per call, their difference ``added_ms`` (the
    cost of one hook on a tool call: a fork and exec of ``/bin/sh``), and p90 of each. Printed,
    never asserted. Everything runs in a temporary directory; nothing reaches the network.
The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from benchkit import percentile

from teammate.agent.loop import AgentLoop
from teammate.api.model import ScriptedModel
from teammate.hooks import Hooks
from teammate.permissions.policy import PermissionPolicy
from teammate.tools.base import ToolContext
from teammate.tools.files import read


def loop(work: Path, hooks: Hooks | None) -> AgentLoop:
    return AgentLoop(
        ScriptedModel([]),
        [read],
        PermissionPolicy("default", work),
        "bench",
        ToolContext(cwd=work),
        hooks=hooks,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="tool calls of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarm-bench-hooks-") as tmp:
        work = Path(tmp)
        (work / "notes.txt").write_text("a small file\n" * 20)
        groups = {"PreToolUse": [{"matcher": "", "hooks": [{"command": "true"}]}]}
        plain = loop(work, None)
        hooked = loop(work, Hooks.from_groups(groups, project_dir=work))
        times: dict[str, list[float]] = {"plain": [], "hooked": []}
        for i in range(args.calls * 2):
            name, agent = ("plain", plain) if i % 2 == 0 else ("hooked", hooked)
            block = {"id": f"toolu_{i}", "name": "Read", "input": {"file_path": "notes.txt"}}
            start = time.perf_counter()
            result = agent.use(block)
            times[name].append((time.perf_counter() - start) * 1000)
            assert not result.get("is_error"), result
    plain_ms = statistics.median(times["plain"])
    hooked_ms = statistics.median(times["hooked"])
    print(f"tool call with no hook:        median {plain_ms:.3f} ms")
    print(f"tool call with a `true` hook:  median {hooked_ms:.3f} ms")
    print(f"added by one command hook:     {hooked_ms - plain_ms:.3f} ms per call")
    print(
        f"calls={args.calls} median_no_hook_ms={plain_ms:.3f} median_hook_ms={hooked_ms:.3f} "
        f"added_ms={hooked_ms - plain_ms:.3f} p90_no_hook_ms={percentile(times['plain'], 90):.3f} "
        f"p90_hook_ms={percentile(times['hooked'], 90):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
