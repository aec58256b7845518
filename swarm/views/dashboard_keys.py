"""What the keys of `swarm watch` do: selecting, answering, undoing, and the typed prompts.

`split_keys` turns what the terminal sent into keys (an arrow's escape sequence is one key, a
lone ESC is Escape). `LineEditor` is one prompt's line: Backspace, Ctrl-U, Ctrl-W, Enter and
Escape edit or end it; every other control or format character is dropped, so nothing typed
can reach the screen raw. `Controls` holds the dashboard's state between frames:

- ``a`` approves the selected request and ``d`` denies it, after asking for a reason (an empty
  one is `DEFAULT_REASON`). Either answer is held for `UNDO_S` seconds first, the note saying
  so; ``u`` in that time takes it back and nothing is written. Quitting (``q``, Ctrl-C) while
  an answer is held writes it: the person gave it, the undo window only catches a slip.
- ``s`` asks for a member's name and checks it against the team (did-you-mean for a typo)
  before it asks for the message; ``*`` sends to everyone.
- Enter opens the selected request in full (`Controls.detail`: the diff of a Write or an Edit,
  the command, the plan); there j/k scroll, ``a``/``d`` answer it, Esc, Enter or ``q`` go back.
- Tab gives j/k, Enter and the member keys (``l`` log, ``t`` attach, ``r`` restart, ``x`` shut
  down) to the members list and back (`swarm.views.member_keys`); ``a``, ``d``, ``u``, ``s``
  and ``q`` mean the same in both.

Nothing here draws: `swarm.views.dashboard` shows `note`, `bottom_line` and the held request.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from protocols.errors import ProtocolsError
from protocols.names import LEAD_NAME, did_you_mean
from protocols.printable import printable_line
from swarm.views.member_keys import Act, MemberKeys
from swarm.views.snapshot import RequestView, TeamView

UNDO_S = 1.0
DEFAULT_REASON = "denied from swarm watch"
TEXT_LIMIT = 4000  # characters a prompt takes
KEYS = "keys: j/k select · Enter show · a/d approve/deny · s send · Tab members · q quit"
KEYS_HELD = "keys: u undo · j/k select · Enter show · a/d approve/deny · s send · q quit"
KEYS_DETAIL = "keys: j/k scroll · space page · a approve · d deny · Esc back"
ENTER = ("\r", "\n")
TAB = "\t"
MEMBER_KEYS = frozenset({"j", "k", "l", "t", "r", "x", *ENTER})  # with the members focused
ARROWS = {"\x1b[A": "k", "\x1b[B": "j", "\x1bOA": "k", "\x1bOB": "j"}
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1bO.|\x1b[^\x1b]|.", re.DOTALL)
_KEEP = frozenset("\u200c\u200d")  # zero-width non-joiner and joiner: emoji, Indic, Persian


def split_keys(typed: str) -> list[str]:
    """`typed` as keys: each escape sequence (an arrow, Alt+x) one key, any other character one."""
    return _SEQUENCE.findall(typed)


@dataclass
class LineEditor:
    """One prompt's line of text."""

    text: str = ""

    def key(self, key: str) -> str | None:
        """Apply `key`; ``"enter"`` or ``"cancel"`` when it ends the prompt, else None."""
        if key in ("\r", "\n"):
            return "enter"
        if key == "\x1b":
            return "cancel"
        if key in ("\x7f", "\b"):
            self.text = self.text[:-1]
        elif key == "\x15":  # Ctrl-U: the whole line
            self.text = ""
        elif key == "\x17":  # Ctrl-W: the last word
            head = self.text.rstrip()
            self.text = head[: head.rfind(" ") + 1]
        elif len(key) == 1 and _typeable(key) and len(self.text) < TEXT_LIMIT:
            self.text += key
        return None


def _cannot_act(action: str, name: str) -> str:
    return f"cannot {action} {name} from here"


def _typeable(char: str) -> bool:
    """Whether `char` may go into a prompt: no control, format, surrogate or unassigned one."""
    return char in _KEEP or not unicodedata.category(char).startswith("C")


@dataclass(frozen=True)
class Held:
    """An answer given but not written yet: written at `due` unless taken back."""

    request: RequestView
    approve: bool
    reason: str | None
    due: float

    @property
    def verb(self) -> str:
        return "approved" if self.approve else "denied"

    def said(self) -> str:
        return printable_line(f"{self.verb} {self.request.id} from {self.request.teammate}")


@dataclass
class Prompt:
    """What is being typed: ``to`` (a name), ``text`` (the message to `to`) or ``reason`` (of
    denying `request`)."""

    kind: str
    editor: LineEditor = field(default_factory=LineEditor)
    to: str = ""
    request: RequestView | None = None


Answer = Callable[[RequestView, bool, str | None], None]
Send = Callable[[str, str], None]


class Controls:
    """The dashboard's keys and what they leave behind (selection, note, prompt, held answer).
    `answer` and `send` write; they may raise `ProtocolsError`, shown as the note."""

    def __init__(
        self,
        answer: Answer,
        send: Send,
        clock: Callable[[], float] = time.monotonic,
        act: Act | None = None,
    ):
        self._answer = answer
        self._send = send
        self._clock = clock
        self.selected = 0
        self.note = ""
        self.prompt: Prompt | None = None
        self.held: Held | None = None
        self.quit = False
        self.detail: str | None = None  # the id of the request shown in full
        self.scroll = 0  # the first line of it shown
        self.page = 10  # lines a page scrolls (the frame sets it)
        self.members = MemberKeys(act or _cannot_act)
        self.focus = "requests"  # or "members": which list j/k and Enter move in

    @property
    def on_members(self) -> bool:
        """Whether the members have the keys (Tab, or a member's log or question is open)."""
        m = self.members
        return self.focus == "members" or m.log_of is not None or m.asking is not None

    # what the frame shows

    def bottom_line(self) -> str:
        """The key line, or the prompt being typed with its keys."""
        if self.prompt is None:
            if self.on_members and self.detail is None:
                return self.members.bottom_line()
            if self.detail is not None:
                return ("keys: u undo · " + KEYS_DETAIL[6:]) if self.held else KEYS_DETAIL
            return KEYS_HELD if self.held else KEYS
        typed = printable_line(self.prompt.editor.text)
        hint = (
            "Enter sends · Esc cancels"
            if self.prompt.kind == "text"
            else "Enter: next · Esc cancels"
        )
        if self.prompt.kind == "to":
            return f"send to: {typed}▏  ({hint}; a name or *)"
        if self.prompt.kind == "text":
            return f"message to {printable_line(self.prompt.to)}: {typed}▏  ({hint})"
        assert self.prompt.request is not None
        return (
            f"deny {printable_line(self.prompt.request.id)}, reason: {typed}▏  "
            f"(Enter: {'the default' if not typed else 'deny'} · Esc cancels)"
        )

    def holding(self) -> dict[str, str]:
        """The request id of the held answer and what is being done to it."""
        if self.held is None:
            return {}
        return {self.held.request.id: "approving…" if self.held.approve else "denying…"}

    def wait_s(self) -> float | None:
        """Seconds until the held answer is due (0 if it is), None when none is held."""
        return None if self.held is None else max(0.0, self.held.due - self._clock())

    # time and leaving

    def tick(self) -> None:
        """Write the held answer if its second is up."""
        if self.held is not None and self._clock() >= self.held.due:
            self._write()

    def finish(self) -> str:
        """On quitting: write a held answer; what the person should read after the screen."""
        if self.held is None:
            return ""
        self._write()
        return self.note

    def _write(self) -> None:
        held, self.held = self.held, None
        assert held is not None
        try:
            self._answer(held.request, held.approve, held.reason)
        except ProtocolsError as exc:  # answered elsewhere first, or gone
            self.note = printable_line(f"not {held.verb}: {exc}")
            return
        self.note = held.said()

    # keys

    def on_key(self, key: str, view: TeamView | None) -> None:
        if self.prompt is not None:
            self._type(key, view)
            return
        key = ARROWS.get(key, key)
        requests = view.requests if view else []
        self.selected = max(0, min(self.selected, len(requests) - 1))
        members = self.members
        if self.detail is not None:
            self._detail_key(key, requests)
        elif members.log_of is not None or members.asking is not None:
            self.note = members.on_key(key, view) or self.note
        elif key == TAB:
            self.focus = "members" if self.focus == "requests" else "requests"
            self.note = ""
            members.current(view)
        elif self.focus == "members" and key in MEMBER_KEYS:
            self.note = members.on_key(key, view)
        elif key in ENTER and requests:
            self.detail, self.scroll, self.note = requests[self.selected].id, 0, ""
        elif key in ENTER:
            self.note = "nothing is waiting for an answer"
        elif key == "q":
            self.quit = True
        elif key in ("j", "k") and requests:
            step = 1 if key == "j" else -1
            self.selected = (self.selected + step) % len(requests)
        elif key == "a" and requests:
            self._hold(requests[self.selected], True, None)
        elif key == "d" and requests:
            self.prompt = Prompt("reason", request=requests[self.selected])
            self.note = ""
        elif key in ("a", "d"):
            self.note = "nothing is waiting for an answer"
        elif key == "u":
            if self.held is None:
                self.note = "nothing to undo"
            else:
                self.note = f"undone: {printable_line(self.held.request.id)} is still waiting"
                self.held = None
        elif key == "s":
            self.prompt = Prompt("to")
            self.note = ""

    def _detail_key(self, key: str, requests: list[RequestView]) -> None:
        """A key while a request is shown in full."""
        shown = next((r for r in requests if r.id == self.detail), None)
        if shown is None or key in (*ENTER, "\x1b", "q"):
            if shown is None:
                self.note = f"{printable_line(self.detail or '')} is no longer waiting"
            self.detail = None
            return
        if key in ("j", "k"):
            self.scroll = max(0, self.scroll + (1 if key == "j" else -1))
        elif key == " ":
            self.scroll += self.page
        elif key == "b":
            self.scroll = max(0, self.scroll - self.page)
        elif key == "a":
            self.detail = None
            self._hold(shown, True, None)
        elif key == "d":
            self.detail = None
            self.prompt = Prompt("reason", request=shown)
            self.note = ""
        elif key == "u" and self.held is not None:
            self.note = f"undone: {printable_line(self.held.request.id)} is still waiting"
            self.held = None

    def _hold(self, request: RequestView, approve: bool, reason: str | None) -> None:
        if self.held is not None and self.held.request.id != request.id:
            self._write()  # one answer is held at a time: the earlier one goes now
        self.held = Held(request, approve, reason, self._clock() + UNDO_S)
        self.note = f"{self.held.said()} — press u to undo ({UNDO_S:g}s)"

    def _type(self, key: str, view: TeamView | None) -> None:
        prompt = self.prompt
        assert prompt is not None
        ended = prompt.editor.key(key)
        if ended == "cancel":
            self.prompt = None
            self.note = "not denied" if prompt.kind == "reason" else "not sent"
        elif ended == "enter":
            text = prompt.editor.text.strip()
            if prompt.kind == "reason":
                assert prompt.request is not None
                self.prompt = None
                self._hold(prompt.request, False, text or DEFAULT_REASON)
            elif prompt.kind == "to":
                self._to(text, view)
            else:
                self._deliver(prompt.to, text)

    def _to(self, name: str, view: TeamView | None) -> None:
        """The name typed: on to the message if the team has that member, else say so."""
        if not name:
            self.prompt, self.note = None, "not sent: no name given"
            return
        names = [m.name for m in view.members] if view else []
        if name != "*" and name not in names:
            others = [n for n in names if n != LEAD_NAME]
            self.note = printable_line(
                f"no member {name!r} in the team{did_you_mean(name, others)} (fix it, or Esc)"
            )
            return
        self.prompt = Prompt("text", to=name)
        self.note = ""

    def _deliver(self, to: str, text: str) -> None:
        self.prompt = None
        if not text:
            self.note = "not sent: the message is empty"
            return
        try:
            self._send(to, text)
        except ProtocolsError as exc:
            self.note = printable_line(f"not sent: {exc}")
            return
        self.note = f"sent to {printable_line(to)}"
