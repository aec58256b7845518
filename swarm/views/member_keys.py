"""The members' side of `swarm watch`'s keys: Tab moves the keys between the requests waiting
and the members; j/k then select a member (the lead is not one to act on), and on the selected
one:

- ``l`` (or Enter) shows its recent log lines (`MemberKeys.log_of`; what `swarm logs NAME`
  shows), where j/k and space/b scroll and Esc, Enter or ``q`` go back;
- ``t`` attaches to its tmux pane (as `swarm attach NAME`);
- ``r`` restarts it and ``x`` shuts it down (the shutdown protocol), each only after ``y`` to a
  question naming it (any other key says no).

The selection is kept by name, so a member that joins or leaves does not move it to another.
What the keys do is `act(action, name)`'s (the dashboard: it may run for a while, in the
background); it returns the note to show. Nothing here draws or writes a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocols.names import LEAD_NAME
from protocols.printable import printable_line
from swarm.views.snapshot import TeamView

ATTACH, RESTART, SHUTDOWN = "attach", "restart", "shut down"
ASK = {  # any key but y is a no
    RESTART: "restart {name} (stopped, then started again as it was spawned)? y/n",
    SHUTDOWN: "shut down {name} (asked to stop; its tasks go back to the board)? y/n",
}
NOT_DONE = {RESTART: "not restarted", SHUTDOWN: "not shut down"}
KEYS_LOG = "keys: j/k scroll · space/b page · Esc back"
ENTER = ("\r", "\n")

Act = Callable[[str, str], str]  # (action, member name) -> the note to show


def member_names(view: TeamView | None) -> list[str]:
    """The members a key can act on, in the order the dashboard lists them."""
    return [m.name for m in view.members if m.name != LEAD_NAME] if view else []


@dataclass
class MemberKeys:
    """The selected member, its log view and the question asked about it."""

    act: Act
    selected: str | None = None  # the selected member's name
    log_of: str | None = None  # the member whose log is shown
    scroll: int = 0  # lines up from the log's end (0: its end, following new lines)
    page: int = 10  # lines a page scrolls (the frame sets it)
    asking: str | None = None  # RESTART or SHUTDOWN, waiting for y about `selected`

    def current(self, view: TeamView | None) -> str | None:
        """The selected member, kept while it is in the team, else the first (None: none)."""
        names = member_names(view)
        if self.selected not in names:
            self.selected = names[0] if names else None
        return self.selected

    def bottom_line(self) -> str:
        if self.asking is not None:
            question = ASK[self.asking].format(name=self.selected or "")
            return printable_line(question)
        if self.log_of is not None:
            return KEYS_LOG
        name = printable_line(self.selected or "nobody")
        return f"keys for {name}: l log · t attach · r restart · x shut down · Tab back · q quit"

    def on_key(self, key: str, view: TeamView | None) -> str:
        """Act on `key` (the members have the keys); the note to show ("" for none)."""
        if self.asking is not None:
            action, self.asking = self.asking, None
            name = self.current(view)
            if key not in ("y", "Y") or name is None:
                return NOT_DONE[action]
            return self.act(action, name)
        if self.log_of is not None:
            return self._log_key(key)
        name = self.current(view)
        names = member_names(view)
        if key in ("j", "k") and names and name is not None:
            step = 1 if key == "j" else -1
            self.selected = names[(names.index(name) + step) % len(names)]
        elif key in ("l", "t", "r", "x", *ENTER) and name is None:
            return "the team has no members to act on"
        elif key in ("l", *ENTER):
            self.log_of, self.scroll = name, 0
        elif key == "t" and name is not None:
            return self.act(ATTACH, name)
        elif key in ("r", "x"):
            self.asking = RESTART if key == "r" else SHUTDOWN
        return ""

    def _log_key(self, key: str) -> str:
        if key in (*ENTER, "\x1b", "q"):
            self.log_of = None
        elif key == "k":
            self.scroll += 1
        elif key == "j":
            self.scroll = max(0, self.scroll - 1)
        elif key == "b":
            self.scroll += self.page
        elif key == " ":
            self.scroll = max(0, self.scroll - self.page)
        return ""
