"""The `swarm` command's entry point: ``swarm status`` answered before click is imported.

``swarm status`` is what a person runs to see a team at a glance, again and again, so its new
process should take well under 100 ms. Importing click (and the modules it loads: ``inspect``,
``uuid``, ``platform`` ...) is about a tenth of that. So `main` first looks for the plain forms
of that one command, the ones people type:

    swarm status [--json] [--team NAME | --team=NAME | -t NAME]   (each at most once)

with the team from ``--team`` or ``$SWARM_TEAM``, kept in files under the config root, and there.
It prints exactly what the click command prints (both call
`swarm.views.status_report.status_report`; tests/unit/test_cli_quick.py compares the two).
Anything else, including every form that is an error (no team, an unknown team, a bad name, an
option it does not know, ``--help``, a store in PostgreSQL, shell completion) and a look that
fails, goes to the click group (`swarm.cli.main`), which parses, reports and exits as always:
this is a shortcut for the commonest case, never a second set of rules. ``swarm --version``
is answered here too, from `swarm.__version__` (click's option would read the package's
metadata: ~30 ms more than ``swarm --help``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from protocols.collector import collection_paused, no_last_collection
from swarm.cli.exits import INTERRUPTED, os_error_text

COMPLETION_VARIABLE = "_SWARM_COMPLETE"  # click's shell completion for prog_name "swarm"


def main(argv: list[str] | None = None) -> int:
    """Run `swarm` with `argv` (default: the process's arguments); the exit code.

    Run as the program (no `argv`: the ``swarm`` script, ``python -m swarm``), a plain status
    ends the process as soon as its text is out (`os._exit`): the interpreter's teardown of the
    look's ~100,000 objects is ~3 ms, and nothing is left to do (no thread, no lock, no file
    open; the summaries were written, the log lines flushed as they came)."""
    no_last_collection()
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # as click's version option prints it, without click
        from swarm import __version__

        sys.stdout.write(f"swarm {__version__}\n")
        sys.stdout.flush()
        return 0
    try:
        report = _quick_status(args)
    except KeyboardInterrupt:  # Ctrl-C during the look: as click's commands end on it
        sys.stderr.write("\ninterrupted\n")
        return INTERRUPTED
    if report is None:
        from swarm.cli.main import main as click_main

        return click_main(argv)
    try:
        sys.stdout.write(report + "\n")
        sys.stdout.flush()
    except OSError as exc:  # as `swarm.cli.main` reports it: a closed pipe, a full disk
        from protocols.printable import printable

        sys.stderr.write(f"swarm: error: {printable(os_error_text(exc))}\n")
        return 1
    if argv is None:
        sys.stderr.flush()
        os._exit(0)
    return 0


def status_form(args: list[str], environ: Mapping[str, str]) -> tuple[str, bool] | None:
    """(the team, JSON wanted) if `args` are a plain ``swarm status`` (module doc), else None."""
    if not args or args[0] != "status" or environ.get(COMPLETION_VARIABLE):
        return None
    team: str | None = None
    as_json = False
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
        elif arg in ("--team", "-t") and team is None and rest and _value(rest[0]):
            team = rest.pop(0)
        elif arg.startswith("--team=") and team is None and _value(arg[len("--team=") :]):
            team = arg[len("--team=") :]
        else:
            return None
    team = team or environ.get("SWARM_TEAM") or None
    return None if team is None else (team, as_json)


def _value(text: str) -> bool:
    """Whether `text` is plainly an option's value (not empty, not like an option)."""
    return bool(text) and not text.startswith("-")


def _quick_status(args: list[str]) -> str | None:
    """What ``swarm status`` prints for `args`, or None when the click group is to answer."""
    form = status_form(args, os.environ)
    if form is None:
        return None
    team, as_json = form
    # imports and the look make no cycles worth ~2 ms of collector passes
    with collection_paused():
        try:
            from protocols.fs import safefs
            from protocols.paths import config_root
            from protocols.store.selection import locate
            from swarm.views.status_report import status_report

            paths = locate(team, config_root(), None)
            if paths.store is not None or not safefs.exists(paths.config):
                return None  # PostgreSQL (its own checks), or no such team (click reports it)
            return status_report(paths, as_json)
        except Exception:  # a bad name, a failed look: click does it again, and reports
            return None
