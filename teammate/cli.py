"""Entry point of the teammate process: parse, choose a brain, run, report failures.

Exit codes: 0 after an approved shutdown or SIGTERM, 1 when it cannot run (not a member of the
team, already running, no such brain), 2 for a bad command line.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path

from protocols.clock import now_iso
from protocols.errors import ProtocolsError
from protocols.mailbox import Mailbox
from protocols.messages import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from teammate.instance import AlreadyRunning
from teammate.options import UsageError, parse
from teammate.runtime import Teammate, TeammateError
from teammate.shell_brain import DEFAULT_ASK_RULES, ShellBrain


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("SWARM_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        return 2
    paths = TeamPaths.for_team(options.team_name)
    say = functools.partial(print, flush=True)
    if options.model != "shell":
        reason = (
            f"model {options.model!r} needs the Claude brain, which is not built yet; "
            "start the teammate with --model shell for the offline shell worker"
        )
        print(f"swarm-teammate: {reason}", file=sys.stderr)
        _report_failure(paths, options.agent_name, options.color, reason)
        return 1
    brain = ShellBrain(
        cwd=Path.cwd(),
        ask_rules=options.ask or DEFAULT_ASK_RULES,
        permission_mode=options.permission_mode,
        timeout_s=options.task_timeout_s,
    )
    try:
        return Teammate(options, brain, paths, say=say).run()
    except (TeammateError, AlreadyRunning, ProtocolsError) as exc:
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _report_failure(paths: TeamPaths, name: str, color: str | None, reason: str) -> None:
    """Tell the lead this teammate could not start (if the team exists)."""
    note = IdleNotification(
        from_=name, timestamp=now_iso(), idleReason="failed", failureReason=reason
    )
    try:
        Mailbox(paths).send(LEAD_NAME, note, sender=name, color=color)
    except ProtocolsError as exc:
        print(f"swarm-teammate: could not tell the lead: {exc}", file=sys.stderr)
