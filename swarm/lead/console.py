"""`swarm lead`'s terminal session: what arrives in the lead's inbox, shown as it arrives, and
what the person types: a message for the lead agent, or a command.

One loop wakes on the inbox (inotify) or on a typed line (a reader thread wakes it), so nothing
waits for a poll. Requests for approval are shown with the teammate, the tool and its real
input in full, the teammate's own description apart (`swarm.team.request_text`), and stay listed
(``/pending``, ``swarm permissions``) until someone answers them. Everything is printed through
`out` or `say`, which show control characters escaped (`protocols.printable`): a teammate's text
cannot rewrite the screen, and its continuation lines are indented so none passes for a line of
its own. Each message is stamped with the time it was sent (the inbox entry's; its date too when
not today); those that were waiting when the console started come first, under a line saying
they are earlier ones. ``/status`` is the team fitted to the terminal's width, as `swarm watch
--once` draws it. With another `swarm lead` leading the team (`swarm.lead.viewer`), the console
only watches: `read_only` says why, and the commands that would change the team are refused.
"""

from __future__ import annotations

import io
import json
import os
import queue
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime

import click

from protocols.clock import ms_from_iso
from protocols.errors import Error, ProtocolsError
from protocols.printable import printable, printable_line
from swarm.lead.agent import LeadAgent
from swarm.lead.inbox import REAP_EVERY_S, Leader, LeadEvent, agent_entries
from swarm.team.actions import add_task, send_shutdown_request, task_lines
from swarm.team.approvals import answer_question, find_pending, member_cwd
from swarm.team.compaction import ask_compaction
from swarm.team.request_text import ask_line, content_lines, details
from swarm.team.sending import send_text
from swarm.views.snapshot import snapshot

HELP = """Type a message for the lead agent, or a command:
  /pending                          requests waiting for you
  /show ID                          a request in full: the diff, the command, the plan
  /approve [ID] [--mode M] [--input JSON]   approve (default: the oldest waiting); y does too
  /deny [ID] [REASON]               deny, with a reason for the teammate; n REASON does too
  /send NAME|* TEXT                 message a teammate, or everyone
  /task SUBJECT [--command CMD] [--blocked-by ID,..] [--owner NAME]
                                    add a task to the board (--command: a shell worker runs it)
  /spawn NAME [--model M] [--agent-type T] [--backend B] PROMPT
                                    start a teammate (default: a shell worker); PROMPT is its
                                    first message
  /tasks                            the task board
  /status                           the team (as `swarm watch --once`, this wide)
  /shutdown NAME                    ask a teammate to stop (the shutdown protocol)
  /answer ID ANSWER...              answer a teammate's questions, one ANSWER per question
  /compact [INSTRUCTIONS]           compact the lead agent's conversation into a summary
  /compact @NAME [INSTRUCTIONS]     ask teammate NAME to compact its conversation
  /SKILL [ARGS]                     run a skill (.claude/skills/SKILL/SKILL.md) with the agent
  /help                             this text
  /quit                             leave (teammates keep running; swarm down TEAM stops them)"""

COLORS = {"purple": "magenta", "orange": "yellow", "pink": "magenta"}
BASIC = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
CLICK_COLORS = frozenset(BASIC) | {f"bright_{c}" for c in BASIC}  # click.style raises on others
INDENT = "    "  # a message's continuation lines: no teammate text passes for a line of its own
SHOWN_LINES = 30  # a longer message is cut here on the console (`swarm inbox` shows it whole)
SHOWN_CHARS = 4000
TASK_OPTIONS = ("--command", "--blocked-by", "--owner")
SPAWN_OPTIONS = ("--model", "--agent-type", "--backend")
SPAWN_USAGE = "usage: /spawn NAME [--model M] [--agent-type T] [--backend B] PROMPT"
TASK_USAGE = "usage: /task SUBJECT [--command CMD] [--blocked-by ID,ID] [--owner NAME]"
READ_ONLY = frozenset({"help", "pending", "show", "tasks", "status", "quit", "exit"})
ANSWER_HINT = "    answer: y (approve) | n REASON (deny) | /approve ID --input JSON"
WATCH_HINT = "    the leading console answers it (or `swarm approve ID` / `swarm deny ID`)"


def _options(
    words: list[str], names: tuple[str, ...], usage: str, text_after_words: bool = False
) -> tuple[dict[str, str], list[str]]:
    """The ``--name VALUE`` options among `words` (by name without the dashes) and the other
    words. An unknown ``--x`` is an error, except, with `text_after_words`, once the free text
    has begun (a prompt may mention ``--verbose``)."""
    options: dict[str, str] = {}
    free: list[str] = []
    words = list(words)
    while words:
        word = words.pop(0)
        if word in names and not (text_after_words and free):
            if not words:
                raise ValueError(f"{word} needs a value; {usage}")
            options[word[2:]] = words.pop(0)
        elif word.startswith("--") and not (text_after_words and free):
            raise ValueError(f"unknown option {word!r}; {usage}")
        else:
            free.append(word)
    return options, free


def colour_allowed() -> bool:
    """Colours unless the person asked for none (https://no-color.org: NO_COLOR set, not
    empty)."""
    return not os.environ.get("NO_COLOR")


def stamp(timestamp: str | None, today: datetime | None = None) -> str:
    """When a message was sent, in local time: ``14:02:11``, or ``2025-03-01 14:02:11`` when
    not `today` (now); the time now when it says no time."""
    ms = ms_from_iso(timestamp) if timestamp else None
    now = today or datetime.now()
    when = now if ms is None else datetime.fromtimestamp(ms / 1000)
    return when.strftime("%H:%M:%S" if when.date() == now.date() else "%Y-%m-%d %H:%M:%S")


def shortened(text: str, lines: int = SHOWN_LINES, chars: int = SHOWN_CHARS) -> str:
    """`text`, or its start with a note of how much was left out when it is long: a teammate's
    10 MB message must not bury the console (the whole of it stays in the inbox's record)."""
    kept = text[:chars]
    cut_lines = kept.split("\n")
    kept = "\n".join(cut_lines[:lines])
    if len(kept) == len(text):
        return text
    more_lines = text.count("\n") - kept.count("\n")
    left_out = f"{len(text) - len(kept):,} more characters, {more_lines:,} more lines"
    return f"{kept}\n\u2026 {left_out} (`swarm inbox` shows it whole)"


class Console:
    def __init__(
        self,
        leader: Leader,
        agent: LeadAgent | None,
        off_reason: str = "",
        out: Callable[[str], None] = print,
        read_only: str = "",
    ) -> None:
        self.leader = leader
        self.agent = agent
        self.off_reason = off_reason
        self.read_only = read_only  # why this console only watches ("": it leads)
        self.write = out  # the terminal: only `out` and `say` write to it, escaped
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.running = True

    def out(self, text: str) -> None:
        """Print `text` for the person, every control character shown escaped."""
        self.write(printable(text))

    def say(
        self, who: str, text: str, color: str | None = None, timestamp: str | None = None
    ) -> None:
        """`text` from `who`, stamped with `timestamp` (when it was sent; else now)."""
        who, fg = printable_line(who), COLORS.get(color or "", color)
        coloured = fg in CLICK_COLORS and colour_allowed()
        name = click.style(who, fg=fg, bold=True) if coloured else who
        body = printable(shortened(text)).replace("\n", "\n" + INDENT)
        self.write(f"[{stamp(timestamp)}] {name}: {body}")

    def dim(self, text: str) -> None:
        """A line about the lines around it (escaped; dim unless NO_COLOR)."""
        text = printable(text)
        self.write(click.style(text, dim=True) if colour_allowed() else text)

    def run(self, lines: Iterable[str]) -> int:
        """Run until /quit or the end of `lines` (stdin); returns the exit code."""
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()
        team = self.leader.paths.team
        if self.read_only:
            self.out(
                f"watching team {team!r}, read-only: {self.read_only}. This console shows what "
                "reaches the lead; it marks nothing read and answers nothing (`swarm watch` "
                "shows the whole team)"
            )
        else:
            self.out(f"leading team {team!r}. {HELP.splitlines()[0]} (/help for the list)")
            if self.agent is None:
                self.out(f"the lead agent is off: {self.off_reason}")
        try:
            self._arrivals(earlier=True)
            while self.running:
                self.leader.wait(REAP_EVERY_S)
                while self.running and not self.lines.empty():
                    self.handle(self.lines.get())
                self._arrivals()
        finally:
            if self.agent is not None:
                self.agent.stop()
        return 0

    def _arrivals(self, earlier: bool = False) -> None:
        """Show what arrived (`earlier`: what was there before the console started, under a
        line saying so); a lead inbox or team file that cannot be read right now (held too
        long, being rewritten, a full disk) is reported and tried again, never fatal."""
        try:
            events = self.leader.events()
            if earlier and events:
                self.dim(f"-- earlier: {len(events)} from before this console started --")
            self.show(events)
            if earlier and events:
                self.dim("-- from now on, as they arrive --")
        except (ProtocolsError, OSError) as exc:
            self.out(f"cannot read the team's files right now: {exc}; trying again")
            time.sleep(1.0)  # back off before the next pass, not a wait for a condition

    def _read(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.lines.put(line.rstrip("\n"))
            self.leader.wake()
        self.lines.put(None)
        self.leader.wake()

    def show(self, events: list[LeadEvent]) -> None:
        for event in events:
            sent = event.entry.timestamp if event.entry is not None else None
            self.say(event.member, event.text, event.color, sent)
            if event.kind == "request":
                self.out(WATCH_HINT if self.read_only else ANSWER_HINT)
        entries = agent_entries(events)
        if entries and self.agent is not None:
            self.agent.hand_over(entries)

    # typed lines

    def handle(self, line: str | None) -> None:
        if line is None:
            self.running = False
            return
        text = line.strip()
        if not text:
            return
        try:
            if self.read_only and text[1:].partition(" ")[0] not in READ_ONLY:
                raise ValueError(
                    f"read-only ({self.read_only}): here /pending, /show, /tasks, /status, "
                    "/help and /quit work; `swarm approve ID` answers from any terminal"
                )
            if text.startswith("/"):
                self.command(text)
            elif text in ("y", "yes") or text.startswith(("n ", "no ")) or text in ("n", "no"):
                approve = text in ("y", "yes")
                reason = text.partition(" ")[2].strip() or None
                self.answer(None, approve, reason)
            elif self.agent is not None:
                self.agent.tell(text)
            else:
                self.out(f"the lead agent is off ({self.off_reason}); /help lists the commands")
        except (Error, ValueError, OSError) as exc:
            self.out(f"error: {exc}")

    def command(self, text: str) -> None:
        name, _, rest = text[1:].partition(" ")
        rest = rest.strip()
        if name in ("quit", "exit"):
            self.out(
                "teammates keep running; `swarm down TEAM` or `swarm shutdown NAME` stops them"
            )
            self.running = False
        elif name == "help":
            self.out(HELP)
        elif name == "pending":
            waiting = self.leader.pending()
            for p in waiting:
                self.out(f"  {printable_line(p.id)}  {printable_line(p.asker)}: {ask_line(p)}")
                for line in details(p):
                    self.out(f"  {INDENT}{line}")
            self.out(f"{len(waiting)} waiting")
        elif name == "approve":
            self._approve(shlex.split(rest))
        elif name == "deny":
            request_id, _, reason = rest.partition(" ")
            if request_id and not request_id.startswith(("perm-", "sandbox-", "plan_approval-")):
                request_id, reason = "", rest
            self.answer(request_id or None, False, reason.strip() or None)
        elif name == "send":
            to, _, message = rest.partition(" ")
            if not to or not message.strip():
                raise ValueError("usage: /send NAME|* TEXT")
            recipients, _ = send_text(self.leader.paths, to, message, summary=message[:60])
            self.out(printable_line(f"sent to {', '.join(recipients)}"))
        elif name == "task":
            self._task(rest)
        elif name == "spawn":
            self._spawn(rest)
        elif name == "tasks":
            self.out("\n".join(task_lines(self.leader.paths)) or "No tasks found")
        elif name == "status":
            self._status()
        elif name == "show":
            if not rest:
                raise ValueError("usage: /show ID (a unique prefix of a request's id is enough)")
            found = find_pending(self.leader.paths, rest)
            self.out(
                f"  {printable_line(found.id)}  {printable_line(found.asker)}: {ask_line(found)}"
            )
            for line in content_lines(found, member_cwd(self.leader.paths, found.teammate)):
                self.out(f"  {INDENT}{line}")
        elif name == "answer":
            words = shlex.split(rest)
            if len(words) < 2:
                raise ValueError("usage: /answer ID ANSWER... (one answer per question)")
            _, given = answer_question(self.leader.paths, words[0], words[1:], by="swarm lead")
            self.out(printable_line(f"answered {words[0]}: {given}"))
        elif name == "compact":
            self._compact(rest)
        elif name == "shutdown":
            if not rest:
                raise ValueError("usage: /shutdown NAME")
            request_id = send_shutdown_request(self.leader.paths, rest, "asked from swarm lead")
            self.out(f"asked {rest} to shut down ({request_id}); its answer will show here")
        elif self.agent is not None and (said := self.agent.invoke_skill(name, rest)):
            self.out(printable_line(said))
        else:
            raise ValueError(f"unknown command /{name}; /help lists them (and /SKILL runs a skill)")

    def _compact(self, rest: str) -> None:
        """``/compact [INSTRUCTIONS]``: the lead agent; ``/compact @NAME [INSTRUCTIONS]``: a
        teammate (as `swarm compact` does, without waiting: its status shows it)."""
        if rest.startswith("@"):
            name, _, instructions = rest[1:].partition(" ")
            ask_compaction(self.leader.paths, name, instructions)
            self.out(printable_line(f"asked {name} to compact its conversation"))
        elif self.agent is not None:
            self.out(self.agent.compact(rest))
        else:
            self.out(f"the lead agent is off ({self.off_reason}); /compact @NAME for a teammate")

    def _task(self, rest: str) -> None:
        """``/task SUBJECT`` (taken as typed) or, with options, a shell-quoted line."""
        if not rest:
            raise ValueError(TASK_USAGE)
        options: dict[str, str] = {}
        subject = rest
        if " --" in f" {rest}":
            options, words = _options(shlex.split(rest), TASK_OPTIONS, TASK_USAGE)
            subject = " ".join(words)
            if not subject:
                raise ValueError(f"the task needs a subject; {TASK_USAGE}")
        blocked = [i.strip().lstrip("#") for i in options.get("blocked-by", "").split(",")]
        task = add_task(
            self.leader.paths,
            subject,
            command=options.get("command"),
            blocked_by=[i for i in blocked if i],
            owner=options.get("owner"),
        )
        self.out(printable_line(f"task #{task['id']} created: {task['subject']}"))

    def _spawn(self, rest: str) -> None:
        """``/spawn NAME [--model M] [--agent-type T] [--backend B] PROMPT``."""
        from swarm.team.lifecycle import spawn_member  # loads the backends: only when asked
        from teammate.options import MemberSpec

        words = shlex.split(rest)
        if not words or words[0].startswith("--"):
            raise ValueError(SPAWN_USAGE)
        member_name = words.pop(0)
        given, prompt = _options(words, SPAWN_OPTIONS, SPAWN_USAGE, text_after_words=True)
        options = {"model": "shell", "agent-type": "general-purpose", "backend": "auto", **given}
        if not prompt:
            raise ValueError(f"give {member_name} its first message; {SPAWN_USAGE}")
        spec = MemberSpec(
            model=options["model"], agent_type=options["agent-type"], backend=options["backend"]
        )
        member, spawned = spawn_member(self.leader.paths, member_name, " ".join(prompt), spec)
        where = f"pane {spawned.pane_id}" if spawned.pane_id else "a subprocess"
        self.out(printable_line(f"spawned {member.name} ({spec.model}) in {where}"))

    def _approve(self, args: list[str]) -> None:
        request_id = args.pop(0) if args and not args[0].startswith("--") else None
        mode, updated = None, None
        while args:
            flag = args.pop(0)
            if flag == "--mode" and args:
                mode = args.pop(0)
            elif flag == "--input" and args:
                updated = json.loads(args.pop(0))
                if not isinstance(updated, dict):
                    raise ValueError("--input must be a JSON object")
            else:
                raise ValueError(
                    f"unexpected {flag!r}; usage: /approve [ID] [--mode M] [--input JSON]"
                )
        self.answer(request_id, True, None, updated, mode)

    def answer(
        self,
        request_id: str | None,
        approve: bool,
        text: str | None,
        updated: dict | None = None,
        mode: str | None = None,
    ) -> None:
        if request_id is None:
            waiting = self.leader.pending()
            if not waiting:
                raise ValueError("no request is waiting")
            request_id = waiting[0].id
        done = self.leader.answer(request_id, approve, text, updated, mode)
        said = "approved" if approve else "denied"
        self.out(
            f"{said} {done.kind} {printable_line(done.id)} from {printable_line(done.teammate)}"
        )

    def _status(self) -> None:
        """The team as `swarm watch --once` draws it, as wide as the terminal."""
        from rich.console import Console as Screen  # loads only when asked

        from swarm.views.dashboard import once_width
        from swarm.views.dashboard_frame import frame

        width = once_width(None, sys.stdout.isatty(), dict(os.environ))
        screen = Screen(width=width, color_system=None, file=io.StringIO(), record=True)
        screen.print(frame(snapshot(self.leader.paths), width, None, bottom=""))
        self.out(screen.export_text().rstrip("\n"))
