"""`swarm doctor`: check this machine and project for what a team needs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from protocols.printable import printable_line
from swarm.cli.common import emit, json_option
from swarm.views.doctor import run_checks

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@click.command()
@click.option(
    "--cwd",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    help="the project whose settings and .mcp.json to check",
)
@json_option
def doctor(cwd: Path, as_json: bool) -> None:
    """Check what a team needs here: tmux, inotify limits, a writable config root, an API key,
    Claude Code, and the project's MCP servers (found, never started).

    Exits 1 when a check fails; warnings say what works with less."""
    checks = run_checks(cwd.resolve())

    def text(_: object) -> str:
        lines = []
        for check in checks:
            line = f"{MARKS[check.state]}  {check.name:<28} {check.found}"
            lines.append(printable_line(line))
            if check.fix:
                lines.append(printable_line(f"      {'':<28} -> {check.fix}"))
        return "\n".join(lines)

    emit([c.to_json() for c in checks], as_json, text)
    if any(c.state == "fail" for c in checks):
        sys.exit(1)
