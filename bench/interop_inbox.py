"""How many messages a real Claude Code (2.1.88 and 2.1.330) and swarm lose when they write one
inbox at once.

What it measures
    A Claude Code teammate (installed from npm into .cache/, run offline in a tmux pane on a
    private server, its model the test suite's local Messages API server) sends ``--messages``
    messages (default 50) to the lead in bursts of 25 `SendMessage` calls. Meanwhile swarm's
    side (`tests/inbox_load.py`) runs one writer sending to the same inbox and one reader
    marking everything read (which archives it), each pausing ``gap`` seconds between
    operations. The round ends when Claude Code's model is called after its last burst: by then
    every one of its `SendMessage` calls has returned "success". Then the archive and the inbox
    are searched for every message.

    Rounds: no swarm load (the baseline: Claude Code alone), swarm at ``gap`` 10 ms (about 100
    writes and 100 reads a second, as `tests/interop/test_interop.py` runs it), and swarm in
    tight loops (``gap`` 0). Each runs ``--rounds`` times (default 2), for each Claude Code
    version (``--version`` picks one; 2.1.330 deletes what it reads and locks with a temp file
    renamed into place, so its figures are its own).

Figures, per load
    * cc_lost: Claude Code's messages that are nowhere although its tool said success (it gives
      up on a lock after ~0.65 s and drops the message);
    * cc_gave_up: how many writes Claude Code's own debug log (``--debug-file``) says it gave
      up on ("Failed to write to inbox"): what tells its loss from swarm's;
    * swarm_lost: swarm's acknowledged messages that are nowhere (the target is 0);
    * swarm_sent: how many swarm acknowledged in that time.

Everything runs under a temporary config root and HOME; nothing leaves this machine. The last
line printed is one line of ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import claude_code
import inbox_load
from claude_code import MODEL, reacting
from messages_api import AGENT_KEY, MessagesAPI, Turn, by_agent

from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.team.file import TeamFile

LOADS = {"none": None, "gap10ms": 0.01, "tight": 0.0}
BURST = 25


def swarm(*args: str, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "swarm", *args], env=env, check=True, capture_output=True, text=True
    )


def one_round(program: Path, messages: int, gap: float | None) -> dict[str, int]:
    root = Path(tempfile.mkdtemp(prefix="swarm-interop-bench-"))
    config, work, logs = root / "config", root / "work", root / "logs"
    for directory in (config, work, logs, root / "home"):
        directory.mkdir()
    socket = f"swarm-interop-bench-{os.getpid()}"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "HOME": str(root / "home")}
    env.update(SWARM_TEAM="t", SWARM_TMUX_SOCKET=socket, ANTHROPIC_API_KEY=claude_code.API_KEY)
    os.environ["CLAUDE_CONFIG_DIR"] = str(config)
    bursts = [
        Turn.tools(
            [
                ("SendMessage", {"to": "team-lead", "message": f"cc-{i}", "summary": "burst"})
                for i in range(start, min(start + BURST, messages))
            ]
        )
        for start in range(0, messages, BURST)
    ]
    stop = root / "stop"
    load: list[subprocess.Popen[bytes]] = []
    try:
        swarm("team", "create", "t", "--cwd", str(work), env=env)
        paths = TeamPaths.for_team("t")
        TeamFile(paths).add_member("carol", cwd=work)
        claude_code.trust(config, work)
        with MessagesAPI(by_agent({"dan": reacting([("Send", lambda _: list(bursts))])})) as api:
            if gap is not None:
                load = inbox_load.start("t", "carol", gap, logs, stop)
            swarm(
                "spawn", "dan", "-p", "Send the bursts.", "--model", MODEL,
                "--teammate-command",
                f"{claude_code.command(program)} --debug-file {root / 'claude-debug.log'}",
                "--backend", "tmux",
                "--permission-mode", "acceptEdits", "--cwd", str(work),
                env={**env, "ANTHROPIC_BASE_URL": api.url_for("dan")},
            )  # fmt: skip
            deadline = time.monotonic() + 120
            calls = 1 + len(bursts)  # the prompt, then one call after each burst's results
            while (
                sum(1 for r in api.requests if r.get(AGENT_KEY) == "dan" and r.get("tools")) < calls
            ):
                if time.monotonic() > deadline:
                    raise SystemExit(
                        "interop_inbox: Claude Code did not finish its bursts in 120 s"
                    )
                time.sleep(0.05)
        stop.touch()
        for proc in load:
            proc.wait(30)
        texts = [e.text for e in Mailbox(paths).peek_all("team-lead")]
        acked = inbox_load.acknowledged(logs) if gap is not None else []
        debug = (root / "claude-debug.log").read_text(errors="replace")
        return {
            "cc_lost": sum(1 for i in range(messages) if f"cc-{i}" not in texts),
            "cc_gave_up": debug.count("Failed to write to inbox for team-lead"),
            "swarm_lost": sum(1 for text in acked if text not in texts),
            "swarm_sent": len(acked),
        }
    finally:
        stop.touch()
        for proc in load:
            if proc.poll() is None:
                proc.kill()
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--version", choices=claude_code.VERSIONS, action="append")
    args = parser.parse_args()
    figures: dict[str, int] = {}
    for version in args.version or claude_code.VERSIONS:
        try:
            program = claude_code.install(version)
        except claude_code.Unavailable as exc:
            print(f"interop_inbox: skipped: {exc}")
            return 0
        print(
            f"Claude Code {version} sends {args.messages} messages to the lead,"
            f" {args.rounds} rounds per load"
        )
        tag = "v" + version.replace(".", "_")
        figures.update({f"{tag}_{k}": v for k, v in one_version(program, args).items()})
    print(
        " ".join(
            f"{k}={v}"
            for k, v in {"messages": args.messages, "rounds": args.rounds, **figures}.items()
        )
    )
    return 0


def one_version(program: Path, args: argparse.Namespace) -> dict[str, int]:
    figures: dict[str, int] = {}
    for name, gap in LOADS.items():
        totals = {"cc_lost": 0, "cc_gave_up": 0, "swarm_lost": 0, "swarm_sent": 0}
        for _ in range(args.rounds):
            for key, value in one_round(program, args.messages, gap).items():
                totals[key] += value
        sent = args.messages * args.rounds
        load = (
            "no swarm load (baseline)"
            if gap is None
            else f"swarm writer+reader, gap {gap * 1000:g} ms"
        )
        print(
            f"  {load:38} Claude Code lost {totals['cc_lost']:3} of {sent}"
            f" (its own log: {totals['cc_gave_up']} writes given up);"
            f" swarm lost {totals['swarm_lost']} of {totals['swarm_sent']} acknowledged"
        )
        figures.update({f"{name}_{key}": value for key, value in totals.items()})
    return figures


if __name__ == "__main__":
    sys.exit(main())
