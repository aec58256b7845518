"""`swarm send` and `swarm inbox`: messages between members."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME
from protocols.printable import printable, printable_json, printable_line
from protocols.store.selection import open_store
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.cli.completion import complete_member, complete_recipient
from swarm.team.sending import dead_members, send_text
from swarm.team.signatures import lead_mailbox

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from protocols.paths import TeamPaths
    from protocols.store.contract import MailboxContract


@click.command()
@click.argument("to", shell_complete=complete_recipient)
@click.argument("text", required=False)
@click.option(
    "--file",
    "body_file",
    type=click.File("r", encoding="utf-8"),
    help="read the message from this file (- for standard input) instead of TEXT",
)
@click.option(
    "--from",
    "sender",
    shell_complete=complete_member,
    default=LEAD_NAME,
    show_default=True,
    help="the sender's name",
)
@click.option("--summary", help="a 5-10 word preview")
@json_option
@team_option
def send(
    to: str,
    text: str | None,
    body_file: Any,
    sender: str,
    summary: str | None,
    as_json: bool,
    team: str,
) -> None:
    """Send TEXT to member TO (or "*" for everyone but the sender).

    \b
    TEXT "-" reads the message from standard input, as --file does from a file:
      swarm send alice "Review schema.sql"
      git diff | swarm send alice - --summary "the diff to review"
      swarm send '*' --file notes.md"""
    if (text is None) == (body_file is None):
        raise click.UsageError("give the message as TEXT, as - (standard input) or with --file")
    if text == "-":
        text = sys.stdin.read()
    elif body_file is not None:
        text = body_file.read()
    assert text is not None
    paths = paths_for(team)
    recipients, skipped = send_text(paths, to, text, sender, summary)
    result: dict[str, Any] = {"sent_to": recipients, "skipped": skipped}
    dead = dead_members(paths, recipients)
    warning = dead_warning(dead)
    if warning:
        result["warning"] = warning
        click.echo(f"swarm: warning: {printable_line(warning)}", err=True)
    emit(result, as_json, lambda _: printable_line(f"sent to {', '.join(recipients)}"))
    if skipped and not as_json:
        names = ", ".join(repr(n) for n in skipped)
        click.echo(printable_line(f"skipped {names}: not a usable member name"), err=True)


def dead_warning(dead: list[str]) -> str | None:
    """What `swarm send` says when a recipient's process is gone: delivered, but unread."""
    if not dead:
        return None
    names = ", ".join(dead)
    its = "its" if len(dead) == 1 else "their"
    restart = " / ".join(f"swarm restart {n}" for n in dead)
    return (
        f"{names} {'is' if len(dead) == 1 else 'are'} dead ({its} process is gone): the message "
        f"waits in {its} inbox until {'it runs' if len(dead) == 1 else 'they run'} again "
        f"({restart})"
    )


def entry_json(entry: InboxEntry) -> dict[str, Any]:
    kind: str
    try:
        message = entry.structured()
        kind = message.type if message is not None else "message"
    except ProtocolsError:
        kind = "invalid"
    return {**entry.to_json_dict(), "type": kind}


@click.command()
@click.argument("name", shell_complete=complete_member)
@click.option("--unread", is_flag=True, help="only unread messages")
@click.option("--mark-read", is_flag=True, help="mark what is shown as read")
@click.option("--follow", "-f", is_flag=True, help="keep waiting for new messages")
@json_option
@team_option
def inbox(name: str, unread: bool, mark_read: bool, follow: bool, as_json: bool, team: str) -> None:
    """Show every message member NAME was sent, oldest first, read or not.

    That includes what its reader deleted: Claude Code 2.1.160 and later keep only unread
    entries in an inbox, and swarm keeps its own record of every message beside it.
    --unread shows only what is waiting in the live inbox."""
    paths = paths_for(team)
    mailbox = lead_mailbox(paths)
    open_store(paths).team_file().load().require(name)
    if follow:
        _follow(paths, mailbox, name, as_json, mark_read)
        return
    entries = mailbox.read_unread(name) if unread else mailbox.peek_all(name)
    _show_entries(entries, as_json)
    if mark_read:
        mailbox.mark_read(name, entries)


def _follow(
    paths: TeamPaths, mailbox: MailboxContract, name: str, as_json: bool, mark_read: bool
) -> None:
    """Print unread messages as they arrive (JSON: one object per line) until interrupted."""
    shown: set[str] = set()
    with open_store(paths).watcher([name]) as watcher:
        while True:
            watcher.clear()
            fresh = [e for e in mailbox.read_unread(name) if e.identity not in shown]
            if fresh:
                _show_entries(fresh, as_json, lines=True)
                shown.update(e.identity for e in fresh)
                if mark_read:
                    mailbox.mark_read(name, fresh)
            watcher.wait(3600)


def _show_entries(entries: list[InboxEntry], as_json: bool, lines: bool = False) -> None:
    rows = [entry_json(e) for e in entries]
    if lines:
        for entry, row in zip(entries, rows, strict=True):
            click.echo(printable_json(row) if as_json else _entry_line(row, entry))
        return
    text = "\n".join(_entry_line(r, e) for r, e in zip(rows, entries, strict=True))
    emit(rows, as_json, lambda _: text or "no messages")


def _entry_line(r: dict[str, Any], entry: InboxEntry) -> str:
    """One entry, escaped; a message's further lines indented (none passes for an entry). A
    permission request shows its tool and real input, not the summary its sender wrote."""
    from swarm.views.message_text import entry_text  # only `inbox` shows messages

    body = printable(entry_text(entry)).replace("\n", "\n    ")
    when, sender = printable_line(str(r["timestamp"])), printable_line(str(r["from"]))
    return f"{when} {'  ' if r.get('read') else '* '}{sender:<12} {body}"
