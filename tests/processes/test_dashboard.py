"""`swarm watch` in a real terminal: a tmux pane on its own server, read with capture-pane.

A scripted Claude teammate asks to write a file; the dashboard shows the members, the board and
the request; Enter shows it in full (the diff), and pressing `a` there approves it and the teammate goes on. A busy team
(`dashboard_team`) fits panes of 80x24, 120x40 and 200x60, resized while it runs; the keys
check a name before a message, ask a reason for a denial, and hold an answer a second for
``u``. `--once` into a pipe is 120 columns wide, or $COLUMNS, or --width."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dashboard_team import COMPLETED, NAMES, build
from helpers import new_session, screen, swarm, tmux, wait_for
from rich.cells import cell_len

from protocols.inbox.mailbox import Mailbox
from protocols.messages.models import PermissionResponse
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile

KEY_NAMES = {"Enter", "Escape", "BSpace", "Up", "Down", "Tab"}  # tmux key names, else typed as text
pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")


def on_screen(socket: str) -> str:
    return screen(socket, "watch")


def row(shown: str, *words: str) -> str:
    """The first line of the screen holding every one of `words`."""
    return next((line for line in shown.splitlines() if all(w in line for w in words)), "")


def keys(socket: str, *typed: str) -> None:
    for key in typed:
        literal = [] if key in KEY_NAMES else ["-l"]
        subprocess.run(
            ["tmux", "-L", socket, "send-keys", "-t", "watch", *literal, key], check=True
        )


def test_the_dashboard_shows_the_team_and_approves_a_request(
    tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    TaskBoard(paths).create("polish the docs", "later")
    TeamFile(paths).add_member("bob", cwd=work)  # a member with no process: only its inbox
    script = tmp_path / "turns.yaml"
    script.write_text(
        '- tool: Write\n  input: {file_path: notes.md, content: "# notes\\n"}\n'
        "- tool: SendMessage\n  input: {to: team-lead, message: notes.md written, summary: done}\n"
        "- text: Done.\n"
    )
    spawned = swarm(
        "spawn",
        "alice",
        "-p",
        "Write notes.md",
        "--script",
        str(script),
        "--backend",
        "subprocess",
        "--cwd",
        str(work),
    )
    assert spawned.returncode == 0, spawned.stderr
    try:
        command = shlex.join([sys.executable, "-m", "swarm", "watch", "--team", "t"])
        env = f"CLAUDE_CONFIG_DIR={shlex.quote(str(config_root))} COLUMNS=160 LINES=60"
        new_session(tmux_socket, "watch", f"env {env} {command}", (160, 60))
        # one capture holding the whole frame (one taken during a redraw may hold only part)
        # (the request's own row too: the member's row can show the request a redraw before)
        whole = ("alice", "Write", "team t", "polish the docs", "waiting for you")
        shown = wait_for(
            lambda: (
                (text := on_screen(tmux_socket))
                and all(w in text for w in whole)
                and row(text, "perm-", "alice")
                and text
            ),
            "the request on screen",
            timeout=30,
        )
        assert "team t" in shown and "polish the docs" in shown and "waiting for you" in shown
        alice_row = row(shown, "alice ")
        assert "waiting for approval" in alice_row and "Write notes.md" in alice_row, alice_row
        request_row = row(shown, "perm-", "alice")
        assert request_row.startswith("> ") and "Write" in request_row, request_row
        assert not (work / "notes.md").exists()
        # Enter: the request in full (what the Write would create), Esc back, Enter again, a
        keys(tmux_socket, "Enter")
        detail = wait_for(
            lambda: "+# notes" in (text := on_screen(tmux_socket)) and text,
            "the request in full",
            timeout=30,
        )
        assert "--- /dev/null" in detail and "Esc back" in detail, detail
        keys(tmux_socket, "Escape")
        wait_for(lambda: "+# notes" not in on_screen(tmux_socket), "back to the team")
        keys(tmux_socket, "Enter")
        wait_for(lambda: "+# notes" in on_screen(tmux_socket), "the request in full again")
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "watch", "a"], check=True)
        wait_for(lambda: (work / "notes.md").exists(), "the approved write", timeout=30)
        # each wait checks one captured screen whole: tmux may capture a half-drawn frame
        wait_for(
            lambda: (
                "notes.md written" in (shown := on_screen(tmux_socket))
                and "approved perm-" in shown
            ),
            "alice's message on screen, and the approval",
            timeout=30,
        )
        wait_for(
            lambda: (
                "idle" in row(shown := on_screen(tmux_socket), "alice ")
                and "nothing is waiting" in shown
            ),
            "alice idle, nothing waiting",
            timeout=30,
        )

        # s: a message typed in the dashboard reaches bob's inbox (unicode and shell characters kept)
        keys(tmux_socket, "s", "bob", "Enter", "héllo $(whoami) 'quoted'", "Enter")
        wait_for(lambda: "sent to bob" in on_screen(tmux_socket), "the message sent", timeout=30)
        (entry,) = Mailbox(paths).read_unread("bob")
        assert (entry.from_, entry.text) == ("team-lead", "héllo $(whoami) 'quoted'")
        subprocess.run(["tmux", "-L", tmux_socket, "send-keys", "-t", "watch", "q"], check=True)
        assert swarm("shutdown", "alice").returncode == 0
    finally:  # a failed check must not leave alice running
        swarm("shutdown", "alice", "--force", "--wait", "5")


def start_watch(socket: str, config_root: Path, size: tuple[int, int]) -> None:
    """`swarm watch` for team t in a new tmux session of `size` (no $COLUMNS or $LINES: the
    dashboard asks the terminal)."""
    command = shlex.join([sys.executable, "-m", "swarm", "watch", "--team", "t"])
    root = shlex.quote(str(config_root))
    new_session(
        socket, "watch", f"env -u COLUMNS -u LINES CLAUDE_CONFIG_DIR={root} {command}", size
    )


def responses(paths: TeamPaths, name: str) -> list[PermissionResponse]:
    """The permission answers in `name`'s inbox."""
    answers = [e.structured() for e in Mailbox(paths).read_all(name)]
    return [a for a in answers if isinstance(a, PermissionResponse)]


def fits(shown: str, width: int, height: int) -> bool:
    """Whether `shown` is one whole frame of the busy team laid out for `width` x `height`."""
    lines = shown.rstrip("\n").splitlines()
    return (
        bool(lines)
        and lines[0].startswith("team t")
        and lines[-1].startswith("keys:")
        and len(lines) <= height
        and all(cell_len(line) <= width for line in lines)
        and "waiting for you (1)" in shown
        # the request's own row, selected (a capture taken while a frame is half drawn may hold
        # the new frame's top over the old frame's bottom, and the request's row in neither)
        and "alice" in row(shown, "> ", "perm-")
        and all(row(shown, name[:10]) for name in NAMES)
        # the members' columns of this width (a frame drawn before a resize has others)
        and (width >= 120) == ("cost" in row(shown, "member "))
        and (width >= 200) == ("tokens in (cached) / out" in shown)
    )


def test_the_dashboard_fits_each_terminal_size_and_follows_a_resize(
    tmux_socket: str, config_root: Path
) -> None:
    paths = build(config_root)
    start_watch(tmux_socket, config_root, (80, 24))
    for width, height in ((80, 24), (120, 40), (200, 60), (80, 24)):
        tmux(tmux_socket, "resize-window", "-t", "watch", "-x", str(width), "-y", str(height))
        shown = wait_for(
            lambda w=width, h=height: (
                (text := on_screen(tmux_socket)) and fits(text, w, h) and text
            ),
            f"a whole frame laid out for {width}x{height}",
        )
        for name in NAMES:  # every member, its state on the same line: no row wrapped
            assert "working" in row(shown, name[:10]), (name, shown)
        # the task column keeps a useful prefix of the task (never one or two characters)
        assert "#38 task" in row(shown, "alice "), shown
        # what a teammate wrote is shown escaped: no raw escape reached the terminal
        assert "\\x1b" in shown or width == 80
        assert f"{COMPLETED} completed" in shown  # folded into one line, or counted in the title
        if height <= 40:  # completed tasks fold into one line when the screen is short
            assert f"✓ {COMPLETED} completed" in shown, shown
            assert "more pending" in shown, shown
    keys(tmux_socket, "q")
    wait_for(lambda: not tmux(tmux_socket, "list-sessions"), "the dashboard to quit")
    assert not responses(paths, "alice")


def test_the_keys_check_names_ask_reasons_and_undo(tmux_socket: str, config_root: Path) -> None:
    paths = build(config_root, requests=("alice", "bob", "dmitri"))
    start_watch(tmux_socket, config_root, (80, 24))
    wait_for(lambda: "waiting for you (3)" in on_screen(tmux_socket), "the three requests")

    # s: a misspelt name is caught before the message is asked for; nothing is sent
    keys(tmux_socket, "s", "bbo", "Enter")
    wait_for(
        lambda: (
            "did you mean 'bob'?" in (shown := on_screen(tmux_socket)) and "send to: bbo" in shown
        ),
        "the name checked",
    )
    keys(tmux_socket, "Escape")
    wait_for(lambda: "not sent" in on_screen(tmux_socket), "the message dropped")
    assert not Mailbox(paths).read_unread("bob")

    # a, then u within the second: nothing is written, the request still waits
    keys(tmux_socket, "au")
    # (one captured screen checked whole: tmux may be captured while a frame is half drawn)
    wait_for(
        lambda: (
            "undone: perm-" in (shown := on_screen(tmux_socket)) and "waiting for you (3)" in shown
        ),
        "the approval undone, the request still waiting",
    )
    assert not responses(paths, "alice")

    # d asks for a reason (typed with a backspace and shell characters), which the deny carries
    keys(tmux_socket, "d", "too riskyy", "BSpace", " $(rm -rf ~)", "Enter")
    wait_for(lambda: responses(paths, "alice"), "the denial written")  # a second later
    (denied,) = responses(paths, "alice")
    assert not denied.approved and denied.error and "too risky $(rm -rf ~)" in denied.error

    # a, then waiting: written once, when the second is up
    wait_for(lambda: "waiting for you (2)" in on_screen(tmux_socket), "alice's request gone")
    keys(tmux_socket, "a")
    wait_for(lambda: "approved perm-" in on_screen(tmux_socket), "the approval")
    wait_for(
        lambda: (
            "waiting for you (1)" in (shown := on_screen(tmux_socket))
            and "approved perm-" in shown
            and "press u" not in shown
        ),
        "bob's request gone and the undo offer with it",
    )
    (approved,) = responses(paths, "bob")
    assert approved.approved

    # q inside the undo window writes the held answer rather than losing it
    keys(tmux_socket, "aq")
    wait_for(lambda: not tmux(tmux_socket, "list-sessions"), "the dashboard to quit")
    (approved,) = responses(paths, "dmitri")
    assert approved.approved


def once(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    """`swarm watch --once ARGS` with its output into a pipe, $COLUMNS set or not."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "swarm", "watch", "--team", "t", "--once", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "columns", "width"),
    [((), None, 120), ((), "100", 100), ((), "junk", 120), (("--width", "200"), "90", 200)],
)
def test_once_into_a_pipe_has_a_sane_width(
    config_root: Path, args: tuple[str, ...], columns: str | None, width: int
) -> None:
    build(config_root)
    shown = once(*args, columns=columns)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= width
    assert max(cell_len(line) for line in lines) > width - 10  # it used the width it had
    assert all(row(shown.stdout, name[:10]) for name in NAMES)
    assert "\x1b" not in shown.stdout and "keys:" not in shown.stdout


def test_once_refuses_a_width_it_cannot_draw(config_root: Path) -> None:
    build(config_root)
    shown = once("--width", "5")
    assert shown.returncode != 0 and not shown.stdout
    assert "'--width': 5 is not in the range 30<=x<=1000" in shown.stderr, shown.stderr


def test_watch_refuses_an_output_that_is_not_a_terminal(config_root: Path) -> None:
    """Into a pipe the live screen would print nothing for ever: it says what to use instead."""
    build(config_root)
    result = swarm("watch")  # a process, its stdout a pipe
    assert result.returncode == 1 and not result.stdout
    assert "output is not a terminal" in result.stderr and "swarm watch --once" in result.stderr
    assert "swarm status --json" in result.stderr and "Traceback" not in result.stderr


def test_q_quits_at_once_and_a_tall_screen_shows_more_messages(
    tmux_socket: str, config_root: Path
) -> None:
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).create(description="a quiet team", cwd=config_root)
    TeamFile(paths).add_member("bob", cwd=config_root)
    TaskBoard(paths).create("write the notes", "")
    for i in range(30):
        Mailbox(paths).send("team-lead", f"note {i:02d} from bob", sender="bob")
    start_watch(tmux_socket, config_root, (200, 50))
    shown = wait_for(
        lambda: "keys:" in (text := on_screen(tmux_socket)) and "note 29" in text and text,
        "a whole frame at 200x50",
    )
    listed = [line for line in shown.splitlines() if "from bob" in line]
    assert len(listed) == 30, shown  # the room is used, not 8 lines and then blank
    started = time.monotonic()
    keys(tmux_socket, "q")
    wait_for(lambda: not tmux(tmux_socket, "list-sessions"), "the dashboard to quit", 10)
    print(f"quit latency: {time.monotonic() - started:.3f} s")  # the figure, not asserted


def test_the_member_keys_show_its_log_restart_and_shut_it_down(
    tmux_socket: str, config_root: Path, tmp_path: Path
) -> None:
    """Tab to the members: l shows bea's log, r restarts her (after y), x shuts her down."""
    work = tmp_path / "work"
    work.mkdir()
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    paths = TeamPaths(config_root, "t")
    spawned = swarm(
        "spawn", "bea", "-p", "say hello", "--backend", "subprocess", "--cwd", str(work)
    )
    assert spawned.returncode == 0, spawned.stderr
    team = TeamFile(paths)
    first_pid = team.load().require("bea").model_extra.get("pid")
    try:
        start_watch(tmux_socket, config_root, (120, 30))
        wait_for(lambda: "bea " in on_screen(tmux_socket), "bea on screen")
        keys(tmux_socket, "Tab")
        wait_for(lambda: "keys for bea: l log" in on_screen(tmux_socket), "the member keys")
        keys(tmux_socket, "l")
        log = wait_for(
            lambda: "bea · its log" in (text := on_screen(tmux_socket)) and text, "bea's log"
        )
        assert "say hello" in log or "no model calls" in log, log
        keys(tmux_socket, "Escape")  # (alone: ESC and a key read together are Alt+key)
        wait_for(lambda: "keys for bea" in on_screen(tmux_socket), "back to the team")
        keys(tmux_socket, "r")
        wait_for(lambda: "restart bea (" in on_screen(tmux_socket), "the question")
        keys(tmux_socket, "n")
        wait_for(lambda: "not restarted" in on_screen(tmux_socket), "no restart")
        assert team.load().require("bea").model_extra.get("pid") == first_pid
        keys(tmux_socket, "r", "y")
        wait_for(lambda: "restarted bea (pid" in on_screen(tmux_socket), "bea restarted", 60)
        again = team.load().require("bea").model_extra.get("pid")
        assert again and again != first_pid
        keys(tmux_socket, "x", "y")
        wait_for(lambda: "bea shut down and was removed" in on_screen(tmux_socket), "shut down", 60)
        assert team.load().member("bea") is None
        keys(tmux_socket, "q")
        wait_for(lambda: not tmux(tmux_socket, "list-sessions"), "the dashboard to quit")
    finally:
        swarm("shutdown", "bea", "--force", "--wait", "5")


def test_t_attaches_to_a_members_pane_and_comes_back(tmux_socket: str, config_root: Path) -> None:
    """`t` gives the terminal to tmux on the member's own server (nested: the dashboard runs in
    tmux too); detaching brings the dashboard back, its keys working."""
    paths = build(config_root)
    members = f"{tmux_socket}-members"
    try:
        new_session(members, "tam", "sh -c 'echo HELLO FROM TAM; exec cat'", (100, 20))
        pane, pid = tmux(members, "display", "-p", "-t", "tam", "#{pane_id} #{pane_pid}").split()
        TeamFile(paths).add_member(
            "tam",
            cwd=config_root,
            backend_type="tmux",
            tmux_pane_id=pane,
            tmuxSocket=members,
            pid=int(pid),
        )
        start_watch(tmux_socket, config_root, (120, 40))
        wait_for(lambda: "tam " in on_screen(tmux_socket), "tam on screen")
        keys(tmux_socket, "Tab", "k")  # the last member
        wait_for(lambda: "keys for tam:" in on_screen(tmux_socket), "tam selected")
        keys(tmux_socket, "t")
        wait_for(lambda: "HELLO FROM TAM" in on_screen(tmux_socket), "tam's pane, attached")
        tmux(members, "detach-client", "-s", "tam")
        wait_for(lambda: "back from tam's pane" in on_screen(tmux_socket), "the dashboard back")
        keys(tmux_socket, "Tab", "q")
        wait_for(lambda: not tmux(tmux_socket, "list-sessions"), "the dashboard to quit")
    finally:
        subprocess.run(["tmux", "-L", members, "kill-server"], capture_output=True, check=False)
