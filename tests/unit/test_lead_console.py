"""The `swarm lead` console's own rules, without processes: colours only when NO_COLOR is not
set, and a huge message cut with a note of what was left out (the typed commands run against
real processes in tests/processes/test_lead.py)."""

from __future__ import annotations

from typing import Any

import pytest

from swarm.lead.console import SHOWN_LINES, Console, shortened


def said(monkeypatch: pytest.MonkeyPatch, no_color: str | None) -> str:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    written: list[str] = []
    leader: Any = object()  # `say` never touches the leader
    Console(leader, None, out=written.append).say("alice", "hi", "blue")
    (line,) = written
    return line


def test_names_are_coloured_unless_no_color_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b[" in said(monkeypatch, None)
    assert "\x1b[" in said(monkeypatch, "")  # set but empty: no-color.org says colours stay
    assert "\x1b[" not in said(monkeypatch, "1")
    assert said(monkeypatch, "1").endswith("alice: hi")


def test_a_long_message_is_cut_and_says_how_much_is_left_out() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    shown = shortened(text)
    assert shown.splitlines()[:SHOWN_LINES] == text.splitlines()[:SHOWN_LINES]
    assert "line 30" not in shown
    assert shown.endswith("more characters, 70 more lines (`swarm inbox` shows it whole)")
    one_line = "x" * 10_000
    assert shortened(one_line).startswith("x" * 4000 + "\n\u2026 6,000 more characters, 0 more")
    assert shortened("short\nmessage") == "short\nmessage"
