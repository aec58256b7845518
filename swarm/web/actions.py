"""What the page changes besides answering requests: a message sent, a task added, a member
stopped; each by the library call its command uses, after the input is checked in full.

- ``POST /api/send`` ``{"to": NAME or "*", "text": ..., "summary"?}``: `swarm send`'s
  `swarm.team.sending.send_text`, from the lead.
- ``POST /api/tasks`` ``{"subject": ..., "description"?, "blockedBy"?: ["3", ...]}``:
  `swarm task add`'s `swarm.team.actions.add_task`.
- ``POST /api/members/NAME/stop`` ``{"reason"?}``: `swarm stop` for one member
  (`swarm.team.lifecycle.request_shutdown` with ``keep``: asked to shut down, stopped anyway
  after `STOP_WAIT_S` s, kept in the team, stopped, with its tasks; ``swarm start`` brings it
  back). The wait runs on a thread of its own: the answer (202) comes at once.

Every field is checked before anything is written (`BadInput`, a 400 naming the field, what is
wrong and what is allowed): unknown fields, text that is not text, empty, too long, or with
control characters (a newline and a tab are allowed where several lines are), a recipient or
member that is not one, a blocker that is not a task. So a refused change writes nothing.
"""

from __future__ import annotations

import logging
import threading
import unicodedata
from typing import Any

from protocols.errors import Error
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from swarm.team.actions import add_task
from swarm.team.sending import dead_members, send_text
from swarm.web.responses import BadInput

MAX_TEXT = 100_000  # a message's or a description's characters
MAX_LINE = 500  # a subject's, a summary's or a reason's
STOP_WAIT_S = 10.0  # as `swarm stop`: how long a member has to answer before it is stopped
STOP_REASON = "stopped from swarm web; `swarm start` starts it again"
log = logging.getLogger(__name__)


def fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise BadInput(f"unknown field {unknown[0]!r}; the fields are: {', '.join(allowed)}")


def text_field(
    body: dict[str, Any], key: str, *, required: bool, lines: bool, most: int
) -> str | None:
    """Field `key` of `body`: text, not empty when `required`, at most `most` characters, with
    no control character (but a newline or a tab when `lines`)."""
    value = body.get(key)
    if value is None or value == "":
        if required:
            raise BadInput(f"{key!r} is empty: give it as text")
        return None
    if not isinstance(value, str):
        raise BadInput(f"{key!r} must be text, not {type(value).__name__}")
    if not value.strip():
        raise BadInput(f"{key!r} is only blanks: give it as text")
    if len(value) > most:
        raise BadInput(f"{key!r} is {len(value):,} characters long; at most {most:,} are allowed")
    allowed = "\n\t" if lines else ""
    for char in value:
        if char not in allowed and unicodedata.category(char) == "Cc":
            what = "a newline or a tab" if lines else "no control characters (one line)"
            raise BadInput(
                f"{key!r} holds the control character U+{ord(char):04X}; allowed: {what}"
                + ("" if not lines else ", no other control characters")
            )
    return value


def send_message(paths: TeamPaths, body: dict[str, Any]) -> dict[str, Any]:
    """`swarm send TO TEXT` from the lead; who it went to, and who of them is dead."""
    fields(body, ("to", "text", "summary"))
    to = text_field(body, "to", required=True, lines=False, most=MAX_LINE)
    text = text_field(body, "text", required=True, lines=True, most=MAX_TEXT)
    summary = text_field(body, "summary", required=False, lines=False, most=MAX_LINE)
    assert to is not None and text is not None
    names = [n for n in open_store(paths).team_file().member_names() if n != LEAD_NAME]
    if to != "*" and to not in names:
        raise BadInput(
            f"'to': {to!r} is not a teammate of team {paths.team!r}; "
            f"allowed: '*' (everyone) or one of: {', '.join(names) or 'nobody yet'}"
        )
    recipients, skipped = send_text(paths, to, text, LEAD_NAME, summary)
    return {"sent_to": recipients, "skipped": skipped, "dead": dead_members(paths, recipients)}


def new_task(paths: TeamPaths, body: dict[str, Any]) -> dict[str, Any]:
    """`swarm task add SUBJECT -d DESCRIPTION --blocked-by ID...`; the task as written."""
    fields(body, ("subject", "description", "blockedBy"))
    subject = text_field(body, "subject", required=True, lines=False, most=MAX_LINE)
    description = text_field(body, "description", required=False, lines=True, most=MAX_TEXT)
    assert subject is not None
    blockers = _blockers(paths, body.get("blockedBy"))
    created = add_task(paths, subject, description or "", blocked_by=blockers)
    return {"id": str(created["id"]), "subject": created["subject"], "blockedBy": blockers}


def _blockers(paths: TeamPaths, given: Any) -> list[str]:
    """Task ids: a list of them, or one text of ids separated by commas or blanks; each must
    be a task on the board."""
    if given is None or given == "":
        return []
    if isinstance(given, str):
        given = given.replace(",", " ").split()
    if not isinstance(given, list) or not all(isinstance(g, str | int) for g in given):
        raise BadInput('\'blockedBy\' must be a list of task ids, like ["3", "7"]')
    ids = [str(g).strip().removeprefix("#") for g in given]
    board = open_store(paths).task_board()
    for task_id in ids:
        if not task_id.isascii() or not task_id.isdigit():
            raise BadInput(f"'blockedBy': {task_id!r} is not a task id; allowed: numbers like 3")
        if board.get(task_id) is None:
            raise BadInput(f"'blockedBy': there is no task #{task_id} on the board")
    return list(dict.fromkeys(ids))


class Stops:
    """Members being stopped from the page: each on a thread of its own, one at a time."""

    def __init__(self, wait_s: float = STOP_WAIT_S) -> None:
        self.wait_s = wait_s
        self._going: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def stop(self, paths: TeamPaths, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Start stopping member `name` (`swarm stop`, for one); what the page is told."""
        fields(body, ("reason",))
        reason = text_field(body, "reason", required=False, lines=False, most=MAX_LINE)
        names = [n for n in open_store(paths).team_file().member_names() if n != LEAD_NAME]
        if name not in names:
            raise BadInput(
                f"{name!r} is not a teammate of team {paths.team!r}; "
                f"allowed: one of {', '.join(names) or 'nobody yet'} (the lead is not stopped here)"
            )
        key = (paths.team, name)
        with self._lock:
            if key in self._going:
                return {"stopping": name, "already": True, "wait_s": self.wait_s}
            self._going.add(key)
        thread = threading.Thread(
            target=self._stop, args=(paths, name, reason), name=f"web-stop-{name}", daemon=True
        )
        thread.start()
        return {"stopping": name, "already": False, "wait_s": self.wait_s}

    def _stop(self, paths: TeamPaths, name: str, reason: str | None) -> None:
        from swarm.team.lifecycle import request_shutdown  # loads the spawn machinery

        try:
            request_shutdown(paths, name, reason or STOP_REASON, self.wait_s, True, keep=True)
        except (Error, OSError):  # a thread of its own: logged; the page shows the member's state
            log.exception("stopping %s of team %s", name, paths.team)
        finally:
            with self._lock:
                self._going.discard((paths.team, name))
