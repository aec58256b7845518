"""The dashboard's layout and keys without a terminal: columns to a width, sections to a height
(every size from tiny to huge), the prompts' line editor, and the undo window on a fake clock."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from dashboard_team import COMPLETED, NAMES, build
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console, Group

from swarm.views.dashboard import ONCE_WIDTH, once_width
from swarm.views.dashboard_frame import frame
from swarm.views.dashboard_keys import DEFAULT_REASON, Controls, LineEditor, split_keys
from swarm.views.dashboard_pages import detail_body, detail_frame
from swarm.views.layout import Column, Section, allot, cell, clip, fit_columns
from swarm.views.snapshot import RequestView, TeamView, snapshot


def lines_of(view: TeamView, width: int, height: int | None, **kwargs: object) -> list[str]:
    console = Console(record=True, width=width, color_system=None, file=io.StringIO())
    console.print(frame(view, width, height, **kwargs))  # type: ignore[arg-type]
    return console.export_text().splitlines()


def render_lines(group: Group, width: int) -> list[str]:
    console = Console(record=True, width=width, color_system=None, file=io.StringIO())
    console.print(group)
    return console.export_text().splitlines()


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> TeamView:
    root = tmp_path_factory.mktemp("busy")
    return snapshot(build(root, requests=("alice", "bob", "dmitri")))


def test_clip_and_cell_count_terminal_cells() -> None:
    assert clip("hello", 5) == "hello" and clip("hello!", 5) == "hell…"
    assert cell_len(clip("漢字漢字", 5)) == 5 and clip("漢字漢字", 5).endswith("…")
    assert cell("7", 3, right=True) == "  7" and cell("漢字漢字", 4) == "漢 …"
    assert clip("anything", 0) == ""


def test_columns_drop_lowest_priority_first_and_never_go_below_their_minimum() -> None:
    columns = [
        Column("name", 0, 6, cap=10),
        Column("text", 1, 12, weight=1, comfort=30),
        Column("cost", 2, 1000, right=True),
    ]
    rows = [["name", "text", "cost"], ["a-long-member-name", "x" * 80, "$0.1234"]]
    wide = fit_columns(columns, rows, 200)
    assert wide == [18, 80, 7]
    narrow = fit_columns(columns, rows, 40)
    assert narrow[2] == 0 and narrow[1] >= 12 and sum(narrow) + 2 <= 40
    tiny = fit_columns(columns, rows, 20)
    assert tiny[2] == 0 and tiny[1] >= 12 and tiny[0] >= 6


def test_allot_gives_floors_in_order_then_wants_by_priority() -> None:
    sections = [Section("keys", 1, 1, 0), Section("a", 2, 10, 1), Section("b", 1, 10, 0)]
    assert allot(sections, 8) == {"keys": 1, "a": 2, "b": 5}
    assert allot(sections, 2) == {"keys": 1, "a": 1, "b": 0}
    assert allot(sections, 100) == {"keys": 1, "a": 10, "b": 10}


@given(width=st.integers(min_value=30, max_value=260), height=st.integers(5, 90))
def test_every_frame_fits_its_size_and_keeps_the_requests_and_keys(
    busy: TeamView, width: int, height: int
) -> None:
    lines = lines_of(busy, width, height)
    assert len(lines) <= height
    assert all(cell_len(line) <= width for line in lines)
    assert lines[-1].startswith("keys:")
    assert any(line.startswith("waiting for you (3)") for line in lines)
    assert any(line.startswith(">") for line in lines)  # the selected request


@pytest.mark.parametrize(("width", "height"), [(80, 24), (120, 40), (200, 60)])
def test_the_usual_sizes_show_every_member_and_a_useful_task(
    busy: TeamView, width: int, height: int
) -> None:
    lines = lines_of(busy, width, height)
    for name in NAMES:
        assert any(line.startswith(name[:10]) and "working" in line for line in lines), name
    alice = next(line for line in lines if line.startswith("alice "))
    assert "#38 task 38" in alice
    assert any(f"{COMPLETED} completed" in line for line in lines)


def test_a_frame_printed_once_lists_everything_but_old_completed_tasks(busy: TeamView) -> None:
    lines = lines_of(busy, 120, None, bottom="")
    text = "\n".join(lines)
    assert not re.search(r"… \d+ more", text)  # no list cut short
    assert "✓ 27 more completed" in text and "#37 task 37" in text and "#60 task 60" in text
    assert not any(line.startswith("keys:") for line in lines)


def test_once_width_is_the_option_the_terminal_columns_or_120() -> None:
    assert once_width(90, False, {"COLUMNS": "70"}) == 90
    assert once_width(None, False, {"COLUMNS": "70"}) == 70
    assert once_width(None, False, {"COLUMNS": "junk"}) == ONCE_WIDTH
    assert once_width(None, False, {}) == ONCE_WIDTH == 120


def test_the_line_editor_keeps_text_and_drops_control_characters() -> None:
    editor = LineEditor()
    for key in split_keys("héllo\x07 \x1b[31m$(x)\u202e 👍\x7f!"):
        assert editor.key(key) is None
    assert editor.text == "héllo $(x) !"  # the escape sequence is one key, dropped
    assert editor.key("\x17") is None and editor.text == "héllo $(x) "
    assert editor.key("\x17") is None and editor.text == "héllo "
    assert editor.key("\x15") is None and editor.text == ""
    assert editor.key("\x1b") == "cancel" and editor.key("\n") == "enter"
    assert split_keys("\x1b[A\x1bOBq\x1b") == ["\x1b[A", "\x1bOB", "q", "\x1b"]


class Fake:
    """A clock moved by hand, and a record of what Controls wrote."""

    def __init__(self) -> None:
        self.now = 100.0
        self.answers: list[tuple[str, bool, str | None]] = []
        self.sent: list[tuple[str, str]] = []

    def controls(self) -> Controls:
        return Controls(
            lambda r, ok, why: self.answers.append((r.id, ok, why)),
            lambda to, text: self.sent.append((to, text)),
            clock=lambda: self.now,
        )


def press(controls: Controls, view: TeamView, typed: str) -> None:
    for key in split_keys(typed):
        controls.on_key(key, view)


def test_an_answer_waits_a_second_and_u_takes_it_back(busy: TeamView) -> None:
    fake = Fake()
    controls = fake.controls()
    first = busy.requests[0].id
    press(controls, busy, "a")
    assert "press u to undo (1s)" in controls.note and controls.holding() == {first: "approving…"}
    fake.now += 0.5
    controls.tick()
    press(controls, busy, "u")
    fake.now += 5
    controls.tick()
    assert fake.answers == [] and controls.note.startswith(f"undone: {first}")

    press(controls, busy, "a")
    fake.now += 0.99
    controls.tick()
    assert fake.answers == []
    fake.now += 0.02
    controls.tick()
    controls.tick()
    assert fake.answers == [(first, True, None)] and controls.note.startswith("approved")


def test_quitting_inside_the_second_writes_the_answer(busy: TeamView) -> None:
    fake = Fake()
    controls = fake.controls()
    press(controls, busy, "jdnot now\nq")
    assert controls.quit and fake.answers == []
    said = controls.finish()
    assert fake.answers == [(busy.requests[1].id, False, "not now")] and said.startswith("denied")


def test_deny_with_an_empty_reason_and_escape(busy: TeamView) -> None:
    fake = Fake()
    controls = fake.controls()
    press(controls, busy, "dabc\x1b")
    assert controls.prompt is None and controls.note == "not denied"
    press(controls, busy, "d\n")
    fake.now += 2
    controls.tick()
    assert fake.answers == [(busy.requests[0].id, False, DEFAULT_REASON)]


def test_send_checks_the_name_before_the_text(busy: TeamView) -> None:
    fake = Fake()
    controls = fake.controls()
    press(controls, busy, "sbbo\n")
    assert "did you mean 'bob'?" in controls.note and controls.prompt is not None
    assert controls.bottom_line().startswith("send to: bbo")
    press(controls, busy, "\x7f\x7f\x7fbob\nhi $(whoami)\n")
    press(controls, busy, "s*\nall of you\n")
    assert fake.sent == [("bob", "hi $(whoami)"), ("*", "all of you")]
    assert controls.note == "sent to *"


def test_a_request_answered_elsewhere_is_said_not_raised(busy: TeamView) -> None:
    from protocols.errors import ProtocolsError

    def taken(request: RequestView, approve: bool, reason: str | None) -> None:
        raise ProtocolsError(f"{request.id} was answered already")

    controls = Controls(taken, lambda to, text: None, clock=lambda: 0.0)
    press(controls, busy, "aq")
    assert controls.finish().startswith("not approved:")


def test_the_busy_team_is_built(tmp_path: Path) -> None:
    view = snapshot(build(tmp_path / "root"))
    assert len(view.requests) == 1 and len(view.tasks["completed"]) == COMPLETED


def test_enter_shows_a_request_in_full_and_its_keys_act_on_it(busy: TeamView) -> None:
    fake = Fake()
    controls = fake.controls()
    press(controls, busy, "j\n")
    second = busy.requests[1]
    assert controls.detail == second.id and "Esc back" in controls.bottom_line()
    press(controls, busy, "jj k")  # scroll down two, up one, a page
    assert controls.scroll == 1 + controls.page
    press(controls, busy, "\x1b")
    assert controls.detail is None and controls.selected == 1
    press(controls, busy, "\na")  # approve from the detail view: held, back to the team
    assert controls.detail is None and controls.holding() == {second.id: "approving…"}
    press(controls, busy, "\ndlater\n")
    fake.now += 2
    controls.tick()
    assert fake.answers == [(second.id, False, "later")]


def test_a_request_answered_while_shown_goes_back_to_the_team(busy: TeamView) -> None:
    controls = Fake().controls()
    press(controls, busy, "\n")
    gone = busy._replace(requests=busy.requests[1:])
    press(controls, gone, "j")
    assert controls.detail is None and "no longer waiting" in controls.note


def test_the_detail_frame_fits_its_height_and_says_where_it_is(busy: TeamView) -> None:
    content = [f"+line {n}" for n in range(100)]
    group = detail_frame(busy.requests[0], content, 80, 24, scroll=10, bottom="keys")
    text = render_lines(group, 80)
    assert len(text) == 24 and text[1].strip() == "lines 11-31 of 100"
    assert text[2].strip() == "+line 10" and text[-1].strip() == "keys"
    assert detail_body(24, "", "keys") == 21


def test_a_tall_screen_fills_with_older_messages_then_completed_tasks(tmp_path: Path) -> None:
    """At 200x80 the view's 40 messages and every completed task are listed, not 8 and 10;
    printed once (no height) the frame keeps its 8 and its fold, as `--once` always did."""
    from protocols.inbox.mailbox import Mailbox

    paths = build(tmp_path / "root")
    for i in range(40):
        Mailbox(paths).send("team-lead", f"note {i:02d}", sender="bob")
    view = snapshot(paths, messages=80)
    tall = "\n".join(lines_of(view, 200, 80))
    assert all(f"note {i:02d}" in tall for i in range(15, 40)), tall
    once = "\n".join(lines_of(snapshot(paths), 200, None, bottom=""))
    assert "note 31" not in once and "note 32" in once and "✓ 27 more completed" in once
    fewer = view._replace(messages=view.messages[-3:])  # room left over: the completed tasks
    roomy = "\n".join(lines_of(fewer, 200, 90))
    assert "more completed" not in roomy and "#1 task 1:" in roomy, roomy


class Acts:
    """What the member keys asked the dashboard to do."""

    def __init__(self) -> None:
        self.done: list[tuple[str, str]] = []

    def __call__(self, action: str, name: str) -> str:
        self.done.append((action, name))
        return f"{action} {name}: on it"


def test_tab_gives_the_keys_to_the_members_and_back(busy: TeamView) -> None:
    acts = Acts()
    controls = Controls(lambda *a: None, lambda to, text: None, clock=lambda: 0.0, act=acts)
    press(controls, busy, "\t")
    assert controls.on_members and controls.bottom_line().startswith("keys for alice: l log")
    press(controls, busy, "k")  # from the first member up: the last one, never the lead
    assert controls.members.selected == NAMES[-1]
    press(controls, busy, "jj")
    assert controls.members.selected == "bob"
    press(controls, busy, "l")
    assert controls.members.log_of == "bob" and "Esc back" in controls.bottom_line()
    press(controls, busy, "kkj")  # scrolled up one line from the end
    assert controls.members.scroll == 1
    press(controls, busy, "q")  # q leaves the log, not the dashboard
    assert controls.members.log_of is None and not controls.quit
    press(controls, busy, "\n")  # Enter opens the log too
    assert controls.members.log_of == "bob"
    press(controls, busy, "\x1b")

    # r and x ask first; anything but y says no and does nothing
    press(controls, busy, "r")
    assert controls.bottom_line().startswith("restart bob (") and acts.done == []
    press(controls, busy, "q")
    assert controls.note == "not restarted" and not controls.quit and acts.done == []
    press(controls, busy, "xn")
    assert controls.note == "not shut down" and acts.done == []
    press(controls, busy, "ry")
    press(controls, busy, "xy")
    press(controls, busy, "t")
    assert acts.done == [("restart", "bob"), ("shut down", "bob"), ("attach", "bob")]
    assert controls.note == "attach bob: on it"

    # a, d, u and s still answer and send; Tab gives j/k back to the requests
    press(controls, busy, "a")
    assert controls.holding() == {busy.requests[0].id: "approving…"}
    press(controls, busy, "u\tj")
    assert not controls.on_members and controls.selected == 1 and controls.members.selected == "bob"
    assert controls.bottom_line().startswith("keys: j/k select")


def test_the_member_keys_follow_the_member_by_name(busy: TeamView) -> None:
    acts = Acts()
    controls = Controls(lambda *a: None, lambda to, text: None, clock=lambda: 0.0, act=acts)
    press(controls, busy, "\tjj")
    assert controls.members.selected == "carol-the-reviewer-with-a-long-name"
    fewer = busy._replace(members=[m for m in busy.members if m.name != "alice"])
    press(controls, fewer, "r")
    press(controls, fewer, "y")
    assert acts.done == [("restart", "carol-the-reviewer-with-a-long-name")]
    gone = busy._replace(members=[m for m in busy.members if m.name in ("team-lead", "bob")])
    press(controls, gone, "x")  # carol left: the first member is selected, and named
    assert controls.bottom_line().startswith("shut down bob (")
    press(controls, gone, "y")
    lead_only = busy._replace(members=busy.members[:1])
    press(controls, lead_only, "l")
    assert controls.note == "the team has no members to act on" and controls.members.log_of is None


def test_the_selected_member_is_highlighted_and_the_request_is_not(busy: TeamView) -> None:
    console = Console(record=True, width=120, color_system="standard", file=io.StringIO())
    console.print(frame(busy, 120, 40, member="bob"))
    text = console.export_text(styles=True)
    bob = next(line for line in text.splitlines() if "bob " in line and "working" in line)
    request = next(line for line in text.splitlines() if "perm-" in line and ">" in line)
    assert "\x1b[7m" in bob and "\x1b[7m" not in request
    plain = Console(record=True, width=120, color_system="standard", file=io.StringIO())
    plain.print(frame(busy, 120, 40))
    lines = plain.export_text(styles=True).splitlines()
    assert "\x1b[7m" in next(line for line in lines if "perm-" in line and ">" in line)
    assert not any("\x1b[7m" in line for line in lines if "bob " in line)
