"""Load on one inbox from swarm's side, for the checks next to Claude Code: a writer process that
sends to the lead as fast as `gap` allows and logs each message once `send` returned (so it is
acknowledged), and a reader process that reads the unread ones and marks them read (which
archives them), logging how many each time. Both stop when the `stop` file appears.

    procs = start(team="t", sender="carol", gap=0.01, logs=tmp_path, stop=tmp_path / "stop")
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import sys, time
from pathlib import Path
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths

role, team, sender, out, stop, gap = sys.argv[1:7]
mailbox = Mailbox(TeamPaths.for_team(team))
with Path(out).open("a") as log:
    i = 0
    while not Path(stop).exists():
        time.sleep(float(gap))
        if role == "writer":
            mailbox.send("team-lead", f"swarm-{i}", sender=sender)
            print(f"swarm-{i}", file=log, flush=True)  # acknowledged: send returned
            i += 1
        else:
            unread = mailbox.read_unread("team-lead")
            mailbox.mark_read("team-lead", unread)  # moves them to the archive
            print(len(unread), file=log, flush=True)
"""


def start(
    team: str, sender: str, gap: float, logs: Path, stop: Path
) -> list[subprocess.Popen[bytes]]:
    """The writer (its log: ``logs/acked.txt``) and the reader (``logs/reads.txt``)."""
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                PROGRAM,
                role,
                team,
                sender,
                str(logs / log),
                str(stop),
                str(gap),
            ]
        )
        for role, log in (("writer", "acked.txt"), ("reader", "reads.txt"))
    ]


def acknowledged(logs: Path) -> list[str]:
    return (logs / "acked.txt").read_text().split()


def reads(logs: Path) -> int:
    """How many times the reader has read the inbox so far."""
    path = logs / "reads.txt"
    return len(path.read_text().split()) if path.exists() else 0
