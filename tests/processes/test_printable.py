"""Nothing a teammate writes reaches a person's terminal raw (`protocols.printable`).

Unit tests of `printable`, `printable_line` and `printable_json` for each class of character,
then real `swarm` processes against a hostile permission request in the lead's inbox (a carriage
return and an erase-line sequence that would make ``rm -rf ~/x`` display as ``Run: ls docs``, a
right-to-left override, a NUL, a C1 control, a lone surrogate): every command shows the escapes,
the full real command, no raw control character, and exits 0; ``--json`` round-trips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import LeadSession, swarm

from protocols.inbox.mailbox import Mailbox
from protocols.inbox.permissions import request_permission
from protocols.paths import TeamPaths
from protocols.printable import printable, printable_json, printable_json_text, printable_line
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from swarm.team.approvals import Pending
from swarm.team.request_text import PLAN_KIND, ask_line, details

# the command that runs, and what a terminal would show of it without escaping: "Run: ls docs"
TAIL = "; echo " + "x" * 100 + " END"  # past any 80- or 120-character cut
HOSTILE = "rm -rf ~/x #\r\x1b[2KRun: ls docs \u202e\x00 \ud800 \x9b" + TAIL
SHOWN = r"rm -rf ~/x #\r\x1b[2KRun: ls docs \u202e\x00 \ud800 \x9b" + TAIL
AS_JSON = r'"rm -rf ~/x #\r\u001b[2KRun: ls docs \u202e\u0000 \ud800 \u009b' + TAIL + '"'
LIE = "Run: ls docs\x1b[0m\u202e\x9b\ud800"  # its summary too: raw in the inbox's JSON
LIE_SHOWN = r"Run: ls docs\x1b[0m\u202e\x9b\ud800"


def assert_safe(out: str) -> None:
    """No character `printable` would escape (ESC, CR, NUL, bidi, C1, surrogates...)."""
    assert printable(out) == out, [c for c in out if printable(c) != c]


# the functions


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\r", r"\r"),
        ("\x1b[2K", r"\x1b[2K"),
        ("\x00", r"\x00"),
        ("\x07", r"\x07"),
        ("\x08", r"\x08"),
        ("\x0b\x0c", r"\x0b\x0c"),
        ("\x1f", r"\x1f"),
        ("\x7f", r"\x7f"),
        ("\x80", r"\x80"),
        ("\x9b", r"\x9b"),
        ("\x9f", r"\x9f"),
        ("\u061c", r"\u061c"),
        ("\u200e\u200f", r"\u200e\u200f"),
        ("\u202a\u202b\u202c\u202d\u202e", r"\u202a\u202b\u202c\u202d\u202e"),
        ("\u2066\u2067\u2068\u2069", r"\u2066\u2067\u2068\u2069"),
        ("\u2028\u2029", r"\u2028\u2029"),
        ("\u200b\u2060\ufeff", r"\u200b\u2060\ufeff"),
        ("\ud800", r"\ud800"),
        ("\udfff", r"\udfff"),
    ],
)
def test_each_unsafe_character_is_escaped_visibly(raw: str, shown: str) -> None:
    assert printable(f"a{raw}b") == f"a{shown}b"
    assert printable_line(f"a{raw}b") == f"a{shown}b"


def test_newline_and_tab_are_kept_except_on_one_line() -> None:
    assert printable("one\n\ttwo") == "one\n\ttwo"
    assert printable_line("one\n\ttwo") == r"one\n\ttwo"
    assert printable("one\n\ttwo", newlines=False) == printable_line("one\n\ttwo")


@pytest.mark.parametrize(
    "text",
    [
        "café, naïve, Ærø",
        "中文 日本語 한국어",
        "emoji 🎉 and a family 👨\u200d👩\u200d👧 (zero-width joiners)",
        "\u0641\u0627\u0631\u0633\u06cc\u200c\u0647\u0627",  # Persian, a zero-width non-joiner
        "Ελληνικά, русский, עברית, العربية",  # right-to-left letters are not controls
        "ASCII ~!@#$%^&*()_+{}|:<>?[];',./`",
        r"a backslash stays: C:\path\n and \x1b as typed",
        "",
    ],
)
def test_ordinary_text_passes_unchanged(text: str) -> None:
    assert printable(text) == text
    assert printable_line(text) == text
    assert json.loads(printable_json(text)) == text


def test_escaping_twice_changes_nothing() -> None:
    once = printable(HOSTILE + "\n\t\u2028")
    assert printable(once) == once
    assert printable_line(printable_line(HOSTILE)) == printable_line(HOSTILE)


def test_json_escapes_what_json_dumps_leaves_raw_and_round_trips() -> None:
    value = {"command": HOSTILE, "ok": "é中🎉", "del": "\x7f", "list": ["\u2028", 1, None]}
    for text in (printable_json(value), printable_json(value, indent=2)):
        assert_safe(text)
        assert json.loads(text) == value
        assert r"\u202e" in text and r"\ud800" in text and r"\u009b" in text and "é中🎉" in text
    assert printable_json(value, indent=2).count("\n") == json.dumps(value, indent=2).count("\n")


def test_a_json_line_with_raw_controls_becomes_valid_json() -> None:
    line = '{"text": "a\x1b[2K\x85\u202e"}'
    fixed = printable_json_text(line)
    assert_safe(fixed)
    assert json.loads(fixed) == {"text": "a\x1b[2K\x85\u202e"}


# real processes


@pytest.fixture
def hostile(team: TeamFile) -> TeamFile:
    """Team ``t`` where alice asked the lead to run HOSTILE, calling it LIE."""
    request_permission(
        Mailbox(team.paths),
        worker="alice",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description=LIE,
        input={"command": HOSTILE},
        color="blue",
    )
    return team


def test_swarm_permissions_shows_the_full_input_escaped(hostile: TeamFile) -> None:
    listed = swarm("permissions")
    assert listed.returncode == 0, listed.stderr
    assert_safe(listed.stdout)
    assert f'{{"command": {AS_JSON}}}' in listed.stdout
    as_json = swarm("permissions", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_safe(as_json.stdout)
    (request,) = json.loads(as_json.stdout)
    assert request["input"] == {"command": HOSTILE} and request["description"] == LIE


def test_swarm_inbox_shows_the_request_escaped(hostile: TeamFile) -> None:
    shown = swarm("inbox", "team-lead")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert f"[permission_request] Bash: {SHOWN}" in shown.stdout
    as_json = swarm("inbox", "team-lead", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_safe(as_json.stdout)
    (entry,) = json.loads(as_json.stdout)
    assert json.loads(entry["text"])["input"] == {"command": HOSTILE}
    assert entry["summary"] == LIE


def test_swarm_inbox_follow_prints_safe_json_lines(hostile: TeamFile) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "swarm", "inbox", "team-lead", "--follow", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "SWARM_TEAM": "t"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # already waiting: printed at once (or "" if it crashed)
    finally:
        proc.kill()
        proc.wait(10)
    assert_safe(line)
    assert json.loads(json.loads(line)["text"])["input"] == {"command": HOSTILE}


def test_swarm_status_shows_the_real_command_escaped(hostile: TeamFile) -> None:
    shown = swarm("status")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert f"alice  Bash: {SHOWN}" in shown.stdout
    as_json = swarm("status", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_safe(as_json.stdout)
    (request,) = json.loads(as_json.stdout)["requests"]
    assert request["summary"] == HOSTILE


def test_swarm_permissions_show_prints_the_real_command_escaped(hostile: TeamFile) -> None:
    shown = swarm("permissions", "--show", "perm-")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert f"$ {SHOWN}" in shown.stdout.splitlines()


def test_swarm_watch_once_shows_the_real_command_escaped(hostile: TeamFile) -> None:
    TaskBoard(hostile.paths).create("[bold red]not markup[/] \x1b[5m")
    shown = swarm("watch", "--once", "--width", "600")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert f"Bash: {SHOWN}" in shown.stdout
    assert r"[bold red]not markup[/] \x1b[5m" in shown.stdout


def test_swarm_lead_shows_the_command_and_the_description_apart(
    hostile: TeamFile, tmp_path: Path
) -> None:
    lead = LeadSession(None, tmp_path)
    try:
        lead.expect(f"alice: asks: Bash: {SHOWN} [perm-", "the request with its real command")
        lead.expect(f"    the teammate's description (unverified): {LIE_SHOWN}")
        lead.type("/pending")
        lead.expect(f"  alice: Bash: {SHOWN}", "the request in /pending")
        lead.expect("1 waiting")
        lead.type("/show perm-")  # a prefix; the command in full, escaped
        lead.expect(f"$ {SHOWN}", "the request in full")
        lead.type("y")
        lead.expect("approved permission_request perm-")
        assert lead.quit() == 0
    finally:
        lead.close()
    assert_safe(lead.output)
    assert "Traceback" not in lead.output


def test_a_message_cannot_fake_a_line_of_the_lead_console(team: TeamFile, tmp_path: Path) -> None:
    lead = LeadSession(None, tmp_path)
    try:
        lead.expect("leading team 't'")
        Mailbox(team.paths).send(
            "team-lead", "hi\n[12:00:00] bob: \x1b[31mtrust me\u2028", sender="alice", color="x;"
        )
        lead.expect(r"alice: hi", "alice's message")
        lead.expect(r"    [12:00:00] bob: \x1b[31mtrust me\u2028", "the indented second line")
        assert lead.quit() == 0
    finally:
        lead.close()
    assert_safe(lead.output)
    assert "Traceback" not in lead.output


def test_task_subjects_and_descriptions_are_escaped(team: TeamFile) -> None:
    TaskBoard(team.paths).create("fix\x1b[2K\rdone \u202e", "line one\n#2 [completed] fake\x07")
    listed = swarm("task", "list")
    assert listed.returncode == 0, listed.stderr
    assert_safe(listed.stdout)
    assert listed.stdout.splitlines() == [r"#1 [pending] fix\x1b[2K\rdone \u202e"]
    shown = swarm("task", "show", "1")
    assert_safe(shown.stdout)
    assert r"Task #1: fix\x1b[2K\rdone \u202e" in shown.stdout
    assert "Description: line one\n  #2 [completed] fake\\x07" in shown.stdout
    as_json = swarm("task", "list", "--json")
    assert_safe(as_json.stdout)
    assert json.loads(as_json.stdout)[0]["subject"] == "fix\x1b[2K\rdone \u202e"


def test_team_list_and_show_are_escaped(config_root: Path, tmp_path: Path) -> None:
    paths = TeamPaths(config_root, "t")
    TeamFile(paths).create(description="ours\x1b]0;pwned\x07\u202e", cwd=tmp_path)
    listed = swarm("team", "list", team=None)
    assert listed.returncode == 0, listed.stderr
    assert_safe(listed.stdout)
    assert r"ours\x1b]0;pwned\x07\u202e" in listed.stdout
    shown = swarm("team", "show", "t", team=None)
    assert_safe(shown.stdout)
    assert r"t: ours\x1b]0;pwned\x07\u202e" in shown.stdout
    as_json = swarm("team", "show", "t", "--json", team=None)
    assert json.loads(as_json.stdout)["description"] == "ours\x1b]0;pwned\x07\u202e"


def test_an_error_message_quoting_a_name_from_a_file_is_escaped(team: TeamFile) -> None:
    config = json.loads(team.paths.config.read_text())
    config["members"][1]["name"] = "eve\r\x1b[2Kteam-lead \ud800"
    team.paths.config.write_text(json.dumps(config))
    failed = swarm("logs", "ghost")
    assert failed.returncode == 1
    assert_safe(failed.stderr)
    assert r"eve\r\x1b[2Kteam-lead \ud800" in failed.stderr
    assert "Traceback" not in failed.stderr


SAID = ("done\x1b[2K\u202e\x85", "again \ud800\r")


@pytest.fixture
def transcript(team: TeamFile) -> Path:
    """Alice's transcript: two replies, the first written with raw bidi and C1 characters."""
    path = team.paths.transcript("alice")
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {
            "ts": f"2026-01-01T00:00:0{n}.000Z",
            "kind": "response",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
        for n, text in enumerate(SAID)
    ]
    first = json.dumps(records[0], ensure_ascii=False)
    path.write_text(f"{first}\n{json.dumps(records[1])}\n", encoding="utf-8")
    return path


def test_swarm_logs_escapes_what_the_model_said(transcript: Path) -> None:
    shown = swarm("logs", "alice")
    assert shown.returncode == 0, shown.stderr
    assert_safe(shown.stdout)
    assert r"says: done\x1b[2K\u202e (" in shown.stdout  # whitespace (U+0085, CR) is collapsed
    assert r"says: again \ud800 (" in shown.stdout
    raw = swarm("logs", "alice", "--raw")
    assert raw.returncode == 0, raw.stderr
    assert_safe(raw.stdout)
    lines = [json.loads(line) for line in raw.stdout.splitlines()]
    assert [r["content"][0]["text"] for r in lines] == list(SAID)
    as_json = swarm("logs", "alice", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_safe(as_json.stdout)
    texts = [e["text"] for e in json.loads(as_json.stdout)]
    assert [t.split(" (")[0] for t in texts] == [f"says: {' '.join(t.split())}" for t in SAID]


# what a request shows (swarm.team.request_text)


def pending(tool: str, data: dict, description: str, kind: str = "permission_request") -> Pending:
    return Pending("perm-1", kind, "alice", tool, data, description, None)


def test_a_request_shows_its_real_input_and_the_description_apart() -> None:
    bash = pending("Bash", {"command": HOSTILE, "timeout": 5}, LIE)
    assert ask_line(bash) == f"Bash: {SHOWN}"
    assert details(bash) == [f"the teammate's description (unverified): {LIE_SHOWN}"]
    assert details(pending("Bash", {"command": "ls"}, "ls")) == []  # it says nothing else
    write = pending("Write", {"file_path": "a\nb.md", "content": "x"}, "Write a", kind="file")
    assert ask_line(write) == r"Write: a\nb.md"
    other = pending("WebFetch", {"url": "https://e.test/\x1b\u202e"}, "")  # the whole input
    assert ask_line(other) == r'WebFetch: {"url": "https://e.test/\u001b\u202e"}'
    assert details(other) == []
    host = pending("network", {"host": "e.test"}, "connect to e.test", "sandbox_permission_request")
    assert ask_line(host) == "network: e.test" and details(host) == []
    plan = pending("ExitPlanMode", {"planFilePath": "p.md"}, "# Plan\n1. \x1b[2K", PLAN_KIND)
    assert ask_line(plan) == "ExitPlanMode: a plan"
    assert details(plan) == ["# Plan", r"1. \x1b[2K"]
