"""How long a `swarm` command takes from exec to exit: agents call these hundreds of times.

What it measures
    Each command runs ``--runs`` times (default 20) as a fresh process, exactly as a user or an
    agent runs it (the installed ``swarm`` entry script of this interpreter's environment), in a
    temporary config root holding one team with one teammate. The figure is the median wall
    time from start to exit. Two baselines run in the same loop, interleaved with the commands
    so that a busy machine slows every row alike:

    * ``python -c pass``: the interpreter alone (with this environment's site-packages);
    * ``python -c "import click, pydantic"``: the two libraries every command needs.

    Targets (issue 18): ``swarm send`` and ``swarm task add`` at most 80 ms, ``swarm --help``
    at most 60 ms. The other rows are for information.

    Python's compiled files (``.pyc``) are written first and used, as after ``pip install``:
    ``PYTHONDONTWRITEBYTECODE`` is dropped from the environment, or every changed module would
    be compiled again on each run (several ms each).

    ``--imports`` also prints, per command, which heavy packages it loaded (libtmux, rich,
    anthropic, swarm.lead, mcp, yaml, cryptography): `send`, `inbox`, `task` and
    `status` must load none of the first four.

Everything runs under a temporary config root (``CLAUDE_CONFIG_DIR`` and ``HOME`` point
there), never ``~/.claude``. The last line printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import verdict

SWARM = str(Path(sys.executable).with_name("swarm"))
BASELINES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import click, pydantic": [sys.executable, "-c", "import click, pydantic"],
}
COMMANDS = {
    "swarm --help": [SWARM, "--help"],
    "swarm --version": [SWARM, "--version"],
    "swarm send": [SWARM, "send", "alice", "hello from the benchmark"],
    "swarm task add": [SWARM, "task", "add", "a task from the benchmark"],
    "swarm task list": [SWARM, "task", "list"],
    "swarm inbox": [SWARM, "inbox", "alice", "--unread"],
    "swarm status": [SWARM, "status"],
}
TARGETS_MS = {"swarm send": 80.0, "swarm task add": 80.0, "swarm --help": 60.0}
HEAVY = ("libtmux", "rich", "anthropic", "swarm.lead", "mcp", "yaml", "cryptography")
LIGHT_COMMANDS = ("swarm send", "swarm task add", "swarm task list", "swarm inbox", "swarm status")


def compile_packages() -> None:
    """Write the .pyc files of swarm's packages, wherever they are installed."""
    for package in ("protocols", "swarm", "teammate"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


def run_once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return elapsed


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """The heavy packages `argv` (a swarm command) imports, from ``python -X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "swarm", *argv[1:]],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    return [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in loaded)]


def make_team(env: dict[str, str]) -> None:
    """Team ``bench`` with the lead and one shell teammate, alice (no process: never started)."""
    subprocess.run(
        [SWARM, "team", "create", "bench"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    add_alice = (
        "from protocols.paths import TeamPaths, config_root; "
        "from protocols.team.file import TeamFile; "
        "TeamFile(TeamPaths(config_root(), 'bench')).add_member('alice', agent_type='worker')"
    )
    subprocess.run([sys.executable, "-c", add_alice], env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--imports", action="store_true", help="list heavy imports per command")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="swarm-bench-cli-") as tmp:
        compile_packages()
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "CLAUDE_CONFIG_DIR": tmp,
            "HOME": tmp,
            "SWARM_TEAM": "bench",
            "NO_COLOR": "1",
        }
        make_team(env)
        rows = {**BASELINES, **COMMANDS}
        times: dict[str, list[float]] = {label: [] for label in rows}
        for argv in rows.values():  # one warm-up each: the page cache, .pyc files
            run_once(argv, env)
        for _ in range(args.runs):
            for label, argv in rows.items():
                times[label].append(run_once(argv, env))
        medians = {label: statistics.median(values) for label, values in times.items()}
        base = medians["python -c pass"]
        libs = medians["import click, pydantic"]
        print(f"median of {args.runs} runs, ms (python -c pass = {base:.1f} ms)")
        print(f"{'command':<26}{'median':>8}{'over pass':>11}{'over libs':>11}  target")
        for label, median in medians.items():
            target = TARGETS_MS.get(label)
            mark = f"<= {target:.0f} {verdict(median <= target)}" if target else ""
            print(f"{label:<26}{median:>8.1f}{median - base:>11.1f}{median - libs:>11.1f}  {mark}")
        if args.imports:
            print("heavy packages each command imports:")
            for label in (*LIGHT_COMMANDS, "swarm --help"):
                loaded = heavy_imports(COMMANDS[label], env)
                print(f"  {label:<24}{', '.join(loaded) or '-'}")
        figures = {
            "python_pass_ms": base,
            "import_click_pydantic_ms": libs,
            **{
                label.replace("swarm ", "").replace("--", "").replace(" ", "_") + "_ms": m
                for label, m in medians.items()
                if label.startswith("swarm")
            },
        }
        met = all(medians[label] <= target for label, target in TARGETS_MS.items())
        print(" ".join(f"{k}={v:.1f}" for k, v in figures.items()) + f" targets={verdict(met)}")


if __name__ == "__main__":
    main()
