"""JSON in Claude Code's byte format (``JSON.stringify(value, null, 2)``): swarm's own printer
(`protocols.fs.jsonio._pretty`: the C string encoder per leaf) beside the standard library's
``json.dumps(indent=2)``, on an inbox of 200 messages and a team file of 50 members, in the same
run. Python 3.11 and 3.12 indent in pure Python, so the own printer is faster there; from 3.13
json indents in C. `protocols.fs.jsonio.dumps_pretty` uses whichever this interpreter's figures
favour (`OWN_PRINTER`). Run it under each interpreter to compare:

    .venv/bin/python bench/json_pretty.py
    PYTHONPATH=. python3.13 bench/json_pretty.py

The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from protocols.fs.jsonio import OWN_PRINTER, _pretty

ROUNDS = 7


def inbox(n: int = 200) -> list[dict[str, Any]]:
    return [
        {
            "from": f"worker-{i % 7}",
            "text": f'Task #{i} is done: all 12 tests pass. Notes: ünïcode → fine, "quoted".',
            "summary": f"task {i} done",
            "timestamp": "2026-11-28T10:00:00.000Z",
            "color": "blue",
            "read": i % 2 == 0,
            "msg_id": f"6f1c2a4e-5b0d-4c7e-9a51-{i:012d}",
        }
        for i in range(n)
    ]


def team(n: int = 50) -> dict[str, Any]:
    members = [
        {
            "agentId": f"m{i}@t",
            "name": f"m{i}",
            "agentType": "worker",
            "model": "sonnet",
            "joinedAt": 1764324000000 + i,
            "tmuxPaneId": f"%{i}",
            "cwd": "/work/repo",
            "subscriptions": [],
            "isActive": False,
        }
        for i in range(n)
    ]
    return {"name": "t", "description": "a team", "createdAt": 1764324000000, "members": members}


def per_call_us(function: Callable[[Any], str], value: Any, calls: int) -> float:
    best = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            function(value)
        best.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(best)


def main() -> None:
    stdlib: Callable[[Any], str] = lambda v: json.dumps(  # noqa: E731
        v, ensure_ascii=False, indent=2, separators=(",", ": ")
    )
    own: Callable[[Any], str] = lambda v: _pretty(v, "")  # noqa: E731
    figures = {}
    for name, value, calls in (("inbox200", inbox(), 50), ("team50", team(), 200)):
        assert own(value) == stdlib(value), "the two printers must give the same bytes"
        figures[name] = (per_call_us(own, value, calls), per_call_us(stdlib, value, calls))
    version = ".".join(map(str, sys.version_info[:2]))
    print(f"Python {version}: dumps_pretty uses {'its own printer' if OWN_PRINTER else 'json'}")
    for name, (mine, theirs) in figures.items():
        print(f"  {name}: own printer {mine:.0f} us, json.dumps(indent=2) {theirs:.0f} us "
              f"(own/json {mine / theirs:.2f})")  # fmt: skip
    pairs = " ".join(f"{n}_own_over_json={m / t:.2f}" for n, (m, t) in figures.items())
    print(f"python={version} own_printer={int(OWN_PRINTER)} {pairs}")


if __name__ == "__main__":
    main()
