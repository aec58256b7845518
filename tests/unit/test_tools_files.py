"""The Read, Write and Edit tools on real files: Claude Code's names, fields, formats and errors."""

from __future__ import annotations

import os
import re
import stat

import pytest

from teammate.tools.base import ToolContext, ToolError
from teammate.tools.files import clip, edit, read, write

TRICKY = "héllo «wörld» 🐍\n\"double\" 'single' `tick` $(rm -rf /) ${HOME} \\n \\ \n\ttab\r\nend"


def numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))


def test_names_kinds_and_fields_are_claude_codes() -> None:
    assert (read.name, read.kind, read.read_only) == ("Read", "read", True)
    assert (write.name, write.kind) == ("Write", "edit")
    assert (edit.name, edit.kind) == ("Edit", "edit")
    read_fields = set(read.schema()["input_schema"]["properties"])
    assert read_fields == {"file_path", "offset", "limit", "pages", "allow_large"}
    assert read.schema()["input_schema"]["required"] == ["file_path"]
    assert write.schema()["input_schema"]["required"] == ["file_path", "content"]
    edit_schema = edit.schema()["input_schema"]
    assert set(edit_schema["properties"]) == {
        "file_path",
        "old_string",
        "new_string",
        "replace_all",
    }
    assert edit_schema["required"] == ["file_path", "old_string", "new_string"]


# --- Read ---


def test_read_is_cat_n(ctx: ToolContext) -> None:
    lines = [f"line {n}" for n in range(1, 11)]
    path = ctx.cwd / "a.txt"
    path.write_text("\n".join(lines) + "\n")
    out = read.run(ctx, {"file_path": str(path)})
    assert out == numbered(lines)
    assert out.splitlines()[0] == "     1\tline 1"


def test_read_offset_and_limit(ctx: ToolContext) -> None:
    path = ctx.cwd / "a.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 11)))
    out = read.run(ctx, {"file_path": str(path), "offset": 3, "limit": 2})
    assert out == numbered(["line 3", "line 4"], start=3)
    assert read.run(ctx, {"file_path": str(path), "offset": 10}) == numbered(["line 10"], 10)


def test_read_defaults_to_2000_lines_and_cuts_long_lines(ctx: ToolContext) -> None:
    path = ctx.cwd / "long.txt"
    path.write_text("x" * 2500 + "\n" + "".join(f"{n}\n" for n in range(2, 2600)))
    out = read.run(ctx, {"file_path": str(path)}).split("\n")
    assert len(out) == 2002  # 2000 lines, a blank line, the marker
    assert out[0] == "     1\t" + "x" * 2000
    assert out[1999] == "  2000\t2000"
    assert out[-1] == (
        "[599 more lines not shown (the file has 2,599 lines). Read with offset=2001 to see "
        "more. 1 line was longer than 2,000 characters and cut (500 bytes left out): use Grep, "
        "or Bash with cut -c, to see them whole.]"
    )


def test_read_resolves_a_relative_path_against_cwd(ctx: ToolContext) -> None:
    (ctx.cwd / "sub").mkdir()
    (ctx.cwd / "sub" / "f.txt").write_text("hi\n")
    assert read.run(ctx, {"file_path": "sub/f.txt"}) == "     1\thi"


def test_read_keeps_unicode_and_drops_crlf_ends(ctx: ToolContext) -> None:
    path = ctx.cwd / "u.txt"
    path.write_bytes("ünï 🐍\r\nsecond\r\n".encode())
    assert read.run(ctx, {"file_path": str(path)}) == numbered(["ünï 🐍", "second"])


def test_read_errors_and_notes(ctx: ToolContext) -> None:
    missing = ctx.cwd / "nope.txt"
    with pytest.raises(ToolError, match=f"^File does not exist: {re.escape(str(missing))}$"):
        read.run(ctx, {"file_path": str(missing)})
    with pytest.raises(ToolError, match=r"is a directory.*Glob.*ls"):
        read.run(ctx, {"file_path": str(ctx.cwd)})
    binary = ctx.cwd / "b.bin"
    binary.write_bytes(b"\x7fELF\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        read.run(ctx, {"file_path": str(binary)})
    empty = ctx.cwd / "empty.txt"
    empty.write_text("")
    assert "exists but its contents are empty" in read.run(ctx, {"file_path": str(empty)})
    short = ctx.cwd / "short.txt"
    short.write_text("a\nb\nc\n")
    assert "The file has 3 lines." in read.run(ctx, {"file_path": str(short), "offset": 4})


def test_read_validates_its_input(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="file_path"):
        read.run(ctx, {})
    with pytest.raises(ToolError, match="limit"):
        read.run(ctx, {"file_path": "x", "limit": 0})
    with pytest.raises(ToolError, match="bogus"):
        read.run(ctx, {"file_path": "x", "bogus": 1})


# --- Write ---


def test_write_creates_then_updates(ctx: ToolContext) -> None:
    path = ctx.cwd / "new" / "deep" / "f.txt"
    assert write.run(ctx, {"file_path": str(path), "content": "one"}) == (
        f"File created successfully at: {path}"
    )
    assert path.read_text() == "one"
    assert write.run(ctx, {"file_path": str(path), "content": "two"}) == (
        f"The file {path} has been updated successfully."
    )
    assert path.read_text() == "two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.txt"]  # no temporary files left


def test_write_round_trips_content_byte_for_byte(ctx: ToolContext) -> None:
    path = ctx.cwd / "tricky.txt"
    write.run(ctx, {"file_path": str(path), "content": TRICKY})
    assert path.read_bytes() == TRICKY.encode()


def test_write_keeps_mode_and_writes_through_a_symlink(ctx: ToolContext) -> None:
    target = ctx.cwd / "script.sh"
    target.write_text("old")
    target.chmod(0o750)
    link = ctx.cwd / "link.sh"
    link.symlink_to(target)
    write.run(ctx, {"file_path": str(link), "content": "new"})
    assert link.is_symlink()
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_write_refuses_a_directory(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="directory"):
        write.run(ctx, {"file_path": str(ctx.cwd), "content": "x"})


# --- Edit ---


def test_edit_replaces_a_unique_string(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.py"
    path.write_text("def a():\n    return 1\n\ndef b():\n    return 2\n")
    out = edit.run(
        ctx, {"file_path": str(path), "old_string": "return 2", "new_string": "return 3"}
    )
    assert out == f"The file {path} has been updated successfully."
    assert path.read_text() == "def a():\n    return 1\n\ndef b():\n    return 3\n"


def test_edit_round_trips_tricky_strings(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.txt"
    path.write_text("before MARK after\n")
    edit.run(ctx, {"file_path": str(path), "old_string": "MARK", "new_string": TRICKY})
    assert path.read_bytes() == f"before {TRICKY} after\n".encode()
    edit.run(ctx, {"file_path": str(path), "old_string": TRICKY, "new_string": r"\1 $& \g<0>"})
    assert path.read_text() == "before \\1 $& \\g<0> after\n"


def test_edit_refuses_an_ambiguous_match_and_leaves_the_file(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.txt"
    path.write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError) as caught:
        edit.run(ctx, {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"})
    assert str(caught.value) == (
        "Found 3 matches of the string to replace, but replace_all is false. To replace all "
        "occurrences, set replace_all to true. To replace only one occurrence, please provide "
        "more context to uniquely identify the instance.\nString: x = 1"
    )
    assert path.read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_refuses_a_missing_string_and_leaves_the_file(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.txt"
    path.write_text("alpha\n")
    with pytest.raises(ToolError) as caught:
        edit.run(ctx, {"file_path": str(path), "old_string": "beta", "new_string": "gamma"})
    assert str(caught.value) == "String to replace not found in file.\nString: beta"
    assert path.read_text() == "alpha\n"


def test_edit_replace_all(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.txt"
    path.write_text("foo bar foo baz foo\n")
    edit.run(
        ctx,
        {"file_path": str(path), "old_string": "foo", "new_string": "qux", "replace_all": True},
    )
    assert path.read_text() == "qux bar qux baz qux\n"


def test_edit_other_refusals(ctx: ToolContext) -> None:
    path = ctx.cwd / "f.txt"
    path.write_text("same\n")
    with pytest.raises(ToolError, match=r"^No changes to make: old_string and new_string are"):
        edit.run(ctx, {"file_path": str(path), "old_string": "same", "new_string": "same"})
    missing = ctx.cwd / "missing.txt"
    with pytest.raises(ToolError, match=f"^File does not exist: {re.escape(str(missing))}$"):
        edit.run(ctx, {"file_path": str(missing), "old_string": "a", "new_string": "b"})
    with pytest.raises(ToolError, match="already exists"):
        edit.run(ctx, {"file_path": str(path), "old_string": "", "new_string": "b"})
    assert path.read_text() == "same\n"
    with pytest.raises(ToolError, match="new_string"):
        edit.run(ctx, {"file_path": str(path), "old_string": "same"})


def test_edit_with_an_empty_old_string_creates_a_missing_file(ctx: ToolContext) -> None:
    path = ctx.cwd / "made" / "here.txt"
    out = edit.run(ctx, {"file_path": str(path), "old_string": "", "new_string": "hello\n"})
    assert out == f"The file {path} has been updated successfully."
    assert path.read_text() == "hello\n"


def test_edit_keeps_the_mode(ctx: ToolContext) -> None:
    path = ctx.cwd / "run.sh"
    path.write_text("echo a\n")
    path.chmod(0o755)
    edit.run(ctx, {"file_path": str(path), "old_string": "a", "new_string": "b"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert path.read_text() == "echo b\n"
    assert sorted(os.listdir(ctx.cwd)) == ["run.sh"]


def test_edit_matches_newlines_in_a_crlf_file(ctx: ToolContext) -> None:
    path = ctx.cwd / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit.run(ctx, {"file_path": str(path), "old_string": "one\ntwo", "new_string": "1\n2"})
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_keeps_bytes_that_are_not_utf8(ctx: ToolContext) -> None:
    path = ctx.cwd / "latin1.txt"
    path.write_bytes(b"caf\xe9 = 1\n")
    edit.run(ctx, {"file_path": str(path), "old_string": "= 1", "new_string": "= 2"})
    assert path.read_bytes() == b"caf\xe9 = 2\n"


def test_clip_keeps_head_and_tail() -> None:
    assert clip("short", 10) == "short"
    text = "a" * 50 + "b" * 50
    clipped = clip(text, 20)
    assert clipped == "a" * 10 + "\n... [80 characters truncated] ...\n" + "b" * 10
