"""`swarm permissions`, `swarm approve`, `swarm deny`: requests waiting for the lead."""

from __future__ import annotations

import json
from typing import Any

import click

from protocols.printable import printable_json, printable_line
from protocols.values import PermissionMode
from swarm.cli.common import emit, json_option, paths_for, team_option
from swarm.cli.completion import complete_request
from swarm.team import approvals as requests_mod
from swarm.team.request_text import ask_line, content_lines


@click.command()
@click.option(
    "--show",
    "show_id",
    metavar="ID",
    shell_complete=complete_request,
    help="show what approving request ID would do, in full: the diff of a Write or Edit, the "
    "command, the plan, the questions (a unique prefix of the id is enough)",
)
@json_option
@team_option
def permissions(show_id: str | None, as_json: bool, team: str) -> None:
    """List requests waiting for an answer (permission, sandbox, plan approval, questions). A
    request one of a member's sub-agents made names it (the member, then the sub-agent; `agent`
    in --json). With --show ID, one request in full.

    \b
      swarm permissions
      swarm permissions --show perm-1764   # the diff, the command, the plan
    """
    paths = paths_for(team)
    if show_id is not None:
        found = requests_mod.find_pending(paths, show_id)
        lines = content_lines(found, requests_mod.member_cwd(paths, found.teammate))
        head = f"{found.id}  {found.kind}  from {found.asker}  {ask_line(found)}"
        emit(
            {**found.to_json(), "content": lines},
            as_json,
            lambda _: "\n".join([printable_line(head), *lines]),
        )
        return
    pending = [p.to_json() for p in requests_mod.pending_requests(paths)]
    emit(
        pending,
        as_json,
        lambda ps: (
            "\n".join(
                printable_line(
                    f"{p['id']}  {p['kind']:<27} {p['agent'] or p['teammate']:<12} {p['tool']:<12} "
                )
                + printable_json(p["input"])  # in full: what approving lets the teammate do
                for p in ps
            )
            or "no pending requests"
        ),
    )


@click.command()
@click.argument("request_id", shell_complete=complete_request)
@click.option("--feedback", help="a note for the teammate")
@click.option("--input", "updated", help="approve with this tool input instead (JSON object)")
@click.option(
    "--mode",
    type=click.Choice([m for m in PermissionMode.names() if m != PermissionMode.PLAN]),
    default=None,
    help="for a plan: the permission mode the teammate works in once approved "
    "(default: the mode it was started with)",
)
@json_option
@team_option
def approve(
    request_id: str,
    feedback: str | None,
    updated: str | None,
    mode: str | None,
    as_json: bool,
    team: str,
) -> None:
    """Approve a pending request (permission, sandbox host, or plan). REQUEST_ID may be a unique
    prefix or ending of the id; `swarm permissions --show ID` shows what it would do first."""
    new_input = _json_object(updated) if updated else None
    done = requests_mod.answer(
        paths_for(team),
        request_id,
        approve=True,
        text=feedback,
        updated_input=new_input,
        permission_mode=mode,
        by="swarm approve",
    )
    emit(
        _answered(done, True),
        as_json,
        lambda _: f"approved {done.kind} {done.id} from {printable_line(done.teammate)}",
    )


@click.command()
@click.argument("request_id", shell_complete=complete_request)
@click.option("--reason", help="why (sent to the teammate)")
@json_option
@team_option
def deny(request_id: str, reason: str | None, as_json: bool, team: str) -> None:
    """Deny a pending request (REQUEST_ID: the id, or a unique prefix or ending of it)."""
    done = requests_mod.answer(
        paths_for(team), request_id, approve=False, text=reason, by="swarm deny"
    )
    emit(
        _answered(done, False),
        as_json,
        lambda _: f"denied {done.kind} {done.id} from {printable_line(done.teammate)}",
    )


@click.command(name="answer")
@click.argument("request_id", shell_complete=complete_request)
@click.argument("answers", nargs=-1, required=True)
@json_option
@team_option
def answer_cmd(request_id: str, answers: tuple[str, ...], as_json: bool, team: str) -> None:
    """Answer a teammate's questions (AskUserQuestion): one ANSWER per question, in order.
    An answer is an option's number or label (several, comma-separated, where the question
    takes several), or your own words. `swarm permissions` shows the questions and options.

    \b
      swarm answer perm-17...-abc1234 2             # the second option
      swarm answer perm-17...-abc1234 Postgres "1,3"  # two questions
      swarm answer perm-17...-abc1234 "neither: use SQLite"
    """
    done, given = requests_mod.answer_question(
        paths_for(team), request_id, list(answers), by="swarm answer"
    )
    emit(
        {**done.to_json(), "answers": given},
        as_json,
        lambda _: "\n".join(
            [f"answered {done.id} from {printable_line(done.teammate)}:"]
            + [printable_line(f"  {q}: {a}") for q, a in given.items()]
        ),
    )


def _answered(done: requests_mod.Pending, approved: bool) -> dict[str, Any]:
    return {**done.to_json(), "approved": approved}


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--input") from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--input")
    return value
