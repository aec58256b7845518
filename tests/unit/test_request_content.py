"""What a request's detail view shows (`swarm.team.request_text.content_lines`): the diff a
Write or an Edit would make to the file as it is now, a Bash command, a plan, the input as JSON
otherwise; every line escaped, long content cut with a count, a FIFO never opened to block."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarm.team.approvals import Pending
from swarm.team.request_text import content_lines


def request(tool: str, tool_input: dict[str, Any], kind: str = "permission_request") -> Pending:
    return Pending("perm-1", kind, "alice", tool, tool_input, "", None)


def test_a_write_of_a_new_file_is_all_added(tmp_path: Path) -> None:
    lines = content_lines(request("Write", {"file_path": "new.md", "content": "a\nb\n"}), tmp_path)
    assert lines[:2] == ["--- /dev/null", f"+++ {tmp_path / 'new.md'}"]
    assert lines[-2:] == ["+a", "+b"]


def test_a_write_over_a_file_and_an_edit_are_diffs_of_it(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\ny = 1\nz = 1\n")
    wrote = content_lines(request("Write", {"file_path": "f.py", "content": "x = 1\n"}), tmp_path)
    assert "-y = 1" in wrote and "-z = 1" in wrote and " x = 1" in wrote
    edit = {"file_path": str(tmp_path / "f.py"), "old_string": "= 1", "new_string": "= 2"}
    once = content_lines(request("Edit", edit), None)
    assert "+x = 2" in once and "+y = 2" not in once
    every = content_lines(request("Edit", {**edit, "replace_all": True}), None)
    assert {"+x = 2", "+y = 2", "+z = 2"} <= set(every)


def test_an_edit_whose_text_is_gone_says_so(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\n")
    edit = {"file_path": "f.py", "old_string": "nope", "new_string": "yes"}
    lines = content_lines(request("Edit", edit), tmp_path)
    assert "it is not in the file now" in lines[0] and lines[1:] == ["- nope", "+ yes"]


def test_a_fifo_at_the_path_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # opened for a blocking read, it would hang the view
    lines = content_lines(request("Write", {"file_path": "pipe", "content": "hi\n"}), tmp_path)
    assert "is not a regular file" in lines[0] and lines[-1] == "+hi"


def test_commands_plans_and_other_input_and_escaping() -> None:
    bash = content_lines(request("Bash", {"command": "echo \x1b[31m$(id)\nls"}))
    assert bash == ["$ echo \\x1b[31m$(id)", "$ ls"]
    plan = Pending("plan-1", "plan_approval_request", "bob", "", {}, "# Plan\n1. do it", None)
    assert content_lines(plan) == ["# Plan", "1. do it"]
    other = content_lines(request("WebFetch", {"url": "https://example.com"}))
    assert other == ["{", '  "url": "https://example.com"', "}"]


def test_long_content_is_cut_with_a_count() -> None:
    lines = content_lines(request("Bash", {"command": "\n".join(["x"] * 50)}), most=10)
    assert len(lines) == 11 and lines[-1] == "... 40 more lines"
