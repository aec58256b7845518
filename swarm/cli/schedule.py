"""`swarm schedule add|list|remove` and `swarm scheduler`: scheduled runs (`swarm.schedule`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from protocols.paths import config_root
from protocols.printable import printable_line
from protocols.store.selection import open_store
from swarm.cli.common import NO_TEAM, emit, given_store, json_option, paths_for, store_option
from swarm.cli.completion import complete_team
from swarm.errors import SwarmError
from swarm.schedule.book import ScheduleBook, book_for, books
from swarm.schedule.cron import local_zone, time_zone
from swarm.schedule.model import MISSED, Book, Missed, Schedule, find_in
from swarm.schedule.scheduler import Done, instant, run_due, runner_name, serve


@click.group()
def schedule() -> None:
    """Scheduled runs: add a task, send a message or bring a team up on a cron schedule.

    \b
    A schedule fires while a scheduler runs: `swarm scheduler`, `swarm lead`
    or `swarm host serve` (any number of them: each firing is done once).
      swarm schedule add "0 9 * * 1-5" --team shop --task "triage new issues"
      swarm schedule add "*/30 * * * *" --team shop --send ann "status?"
      swarm schedule add @daily --up examples/teams/shell-pipeline.yaml
      swarm schedule list
      swarm schedule remove s1a2b3c4
    """


@schedule.command("add")
@click.argument("cron")
@click.option("--task", "subject", metavar="SUBJECT", help="add a task with this subject")
@click.option("--description", "-d", default="", help="the task's description (with --task)")
@click.option("--command", "-c", help="the task's shell command (with --task)")
@click.option("--for", "for_", multiple=True, metavar="WHO", help="who may take the task")
@click.option("--send", nargs=2, metavar="NAME TEXT", help='send TEXT to member NAME (or "*")')
@click.option(
    "--up",
    "up_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="bring the team of this file up (swarm up), or back up if it is there (--resume)",
)
@click.option(
    "--missed",
    type=click.Choice(MISSED),
    default="skip",
    show_default=True,
    help="firings missed while no scheduler ran: skip them, or run the last one once",
)
@click.option("--zone", metavar="TZ", help="the time zone of CRON (default: this machine's)")
@click.option(
    "--team",
    "-t",
    envvar="SWARM_TEAM",
    shell_complete=complete_team,
    help="the team (--task, --send; default: $SWARM_TEAM)",
)
@store_option
@json_option
def schedule_add(
    cron: str,
    subject: str | None,
    description: str,
    command: str | None,
    for_: tuple[str, ...],
    send: tuple[str, str] | None,
    up_file: Path | None,
    missed: Missed,
    zone: str | None,
    team: str | None,
    as_json: bool,
) -> None:
    """Add a schedule: at each time CRON names, add a task (--task), send a message (--send)
    or bring a team up (--up). CRON is five fields, minute hour day-of-month month
    day-of-week, or @hourly, @daily, @weekly, @monthly, @yearly; prints its id.

    \b
      swarm schedule add "0 9 * * 1-5" --team shop --task "run the tests" -c "make test"
      swarm schedule add "0 18 * * fri" --team shop --send "*" "wrap up for the week"
      swarm schedule add @daily --up nightly.yaml --missed once
    """
    actions = [a for a, given in (("task", subject), ("send", send), ("up", up_file)) if given]
    if len(actions) != 1:
        raise click.UsageError("give one of --task SUBJECT, --send NAME TEXT or --up FILE")
    task_only = {"--description": description, "--command": command, "--for": for_}
    stray = [name for name, value in task_only.items() if value and actions != ["task"]]
    if stray:
        raise click.UsageError(f"{', '.join(stray)} go with --task")
    fields: dict[str, Any] = {"action": actions[0]}
    # a team file is this machine's: its schedule is kept here; a team's task or message is
    # kept with the team (in its store, when it is on PostgreSQL: its every machine fires it)
    book: Book = ScheduleBook(config_root())
    if up_file is not None:
        fields |= _up_fields(up_file)
    else:
        if not team:
            raise click.UsageError(NO_TEAM)
        paths = paths_for(team)
        book = book_for(paths)
        fields["team"] = team
        if send is not None:
            fields |= _send_fields(paths, *send)
        else:
            takers = [w.strip() for given in for_ for w in given.split(",") if w.strip()]
            here = str(Path.cwd().resolve()) if paths.store is None else ""
            fields |= {"subject": subject, "description": description, "command": command,
                       "takers": takers, "cwd": here}  # fmt: skip
    added = book.add(
        Schedule(id="new", cron=cron, zone=zone or local_zone(), missed=missed, **fields)
    )
    emit(added.model_dump(mode="json"), as_json, lambda _: added.id)


def _up_fields(file: Path) -> dict[str, Any]:
    from swarm.up.apply import plan_up
    from swarm.up.spec import load_team_file

    plan = plan_up(load_team_file(file))  # a file that cannot be brought up: said now
    return {"file": str(file.resolve()), "team": plan.team}


def _send_fields(paths: Any, to: str, text: str) -> dict[str, Any]:
    if not text.strip():
        raise SwarmError("--send NAME TEXT: the text is empty")
    if to != "*":
        open_store(paths).team_file().require_entry(to)  # a misspelt name: said now
    return {"to": to, "text": text}


@schedule.command("list")
@store_option
@json_option
def schedule_list(as_json: bool) -> None:
    """List the schedules of this config root: id, when (and its next firing), the team, what
    it does, and how its last firing went."""
    now = datetime.now(UTC)
    kept = [(s, book.where) for book in _books() for s in book.all()]
    shown = [_shown(s, now, where) for s, where in kept]
    emit(shown, as_json, lambda _: "\n".join(_line(s) for s in shown) or "No schedules")


def _books() -> list[Book]:
    """The schedules of this config root, and of the stores its teams (and --store or
    $SWARM_STORE) are on."""
    return books(config_root(), _stores())


def _stores() -> list[str]:
    """The store given (--store, else $SWARM_STORE), if any."""
    given = given_store() or os.environ.get("SWARM_STORE")
    return [given] if given else []


def _shown(found: Schedule, now: datetime, where: str) -> dict[str, Any]:
    settled = instant(found.settled) or now
    upcoming = found.cron_of().next_after(max(now, settled))
    last = found.history[-1].model_dump() if found.history else None
    local = upcoming.astimezone(time_zone(found.zone)) if upcoming else None
    return {
        **found.model_dump(mode="json", exclude={"history"}),
        "what": found.what(),
        "next": upcoming.isoformat() if upcoming else None,
        "next_local": local.strftime("%a %Y-%m-%d %H:%M") if local else None,
        "last": last,
        "kept": where,  # files, or the store (its password left out)
    }


def _line(shown: dict[str, Any]) -> str:
    upcoming = f"{shown['next_local']} {shown['zone']}" if shown["next_local"] else "never"
    last = shown["last"]
    went = f"; last: {last['outcome']}, {last['detail']}" if last else ""
    return printable_line(
        f"{shown['id']}  {shown['cron']}  team {shown['team']}: {shown['what']}; "
        f"next {upcoming}{went}"
    )


@schedule.command("remove")
@click.argument("schedule_id", metavar="ID")
@store_option
@json_option
def schedule_remove(schedule_id: str, as_json: bool) -> None:
    """Remove schedule ID (or a unique start of it); it fires no more."""
    kept = [(s, book) for book in _books() for s in book.all()]
    found = find_in([s for s, _ in kept], schedule_id)
    removed = next(book for s, book in kept if s.id == found.id).remove(found.id)
    emit(removed.model_dump(mode="json"), as_json, lambda _: f"removed {removed.id}")


@click.command()
@click.option("--once", is_flag=True, help="one pass over the schedules, then exit")
@click.option(
    "--now",
    "at",
    metavar="TIME",
    help="with --once: the pass as if it were TIME (ISO 8601, e.g. 2026-12-01T09:00Z)",
)
@store_option
@json_option
def scheduler(once: bool, at: str | None, as_json: bool) -> None:
    """Fire the schedules of this config root as they come due, until Ctrl-C or SIGTERM; each
    firing prints a line. Several schedulers (and `swarm lead`, `swarm host serve`) may run
    at once: each firing is done once. The schedules of teams on PostgreSQL are kept in their
    store and fired by any scheduler whose config root points at it (or given --store), on
    any machine.

    \b
      swarm scheduler                     # in a terminal, or as a systemd service
      swarm scheduler --once              # what is due now, then exit (from cron)
    """
    root = config_root()
    stores = _stores()
    if at is not None and not once:
        raise click.UsageError("--now goes with --once")
    now = _parse_now(at) if at is not None else datetime.now(UTC)

    def say(done: Done) -> None:
        click.echo(_done_text(done, as_json))

    if once:
        for done in run_due(root, now, runner_name("swarm scheduler"), stores):
            say(done)
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    click.echo(f"swarm scheduler: firing the schedules of {root}; Ctrl-C stops", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        serve(root, stop, runner_name("swarm scheduler"), say, stores)


def _parse_now(text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise SwarmError(
            f"--now {text!r}: not a time; give ISO 8601, e.g. 2026-12-01T09:00Z"
        ) from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _done_text(done: Done, as_json: bool) -> str:
    if as_json:
        return json.dumps(done.to_json(), ensure_ascii=True)
    return printable_line(done.line())
