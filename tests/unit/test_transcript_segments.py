"""A transcript's segments (`teammate.agent.transcript_history`): a compaction starts the live
file anew and moves the finished segment to the history, gzipped; a rotation a kill cut short is
finished or undone; a damaged file resumes from its last good boundary, with a warning."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from teammate.agent.transcript import Transcript, conversation_of
from teammate.agent.transcript_history import (
    history_dir,
    load_conversation,
    recover,
    rotate,
    segments,
)


def said(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def record(transcript: Transcript, message: dict[str, Any]) -> None:
    transcript.record("message", role=message["role"], content=message["content"])


def test_each_boundary_starts_a_segment_and_the_live_file_plays_back(tmp_path: Path) -> None:
    path = tmp_path / "alice.transcript.jsonl"
    transcript = Transcript(path)
    transcript.record("session", resumed=False, pid=1)
    record(transcript, said("one"))
    transcript.boundary([said("summary of one")], how="compact")
    record(transcript, said("two", "assistant"))
    transcript.boundary([said("summary of two")], how="compact")
    record(transcript, said("three", "assistant"))
    assert [s.name for s in segments(path)] == ["0001.jsonl.gz", "0002.jsonl.gz"]
    first = gzip.decompress(segments(path)[0].read_bytes()).decode()
    assert '"one"' in first and '"two"' not in first
    resumed = load_conversation(path)
    assert not resumed.warnings
    assert conversation_of(resumed.events) == [said("summary of two"), said("three", "assistant")]


def test_a_rotation_cut_short_is_finished_or_undone(tmp_path: Path) -> None:
    path = tmp_path / "a.transcript.jsonl"
    new = tmp_path / "a.transcript.jsonl.new"
    path.write_text('{"kind": "session"}\n')
    new.write_text('{"kind": "compact_boundary", "messages": []}\n')
    recover(path)  # killed before the old segment moved: the rotation never happened
    assert not new.exists() and "session" in path.read_text()
    new.write_text('{"kind": "compact_boundary", "messages": []}\n')
    path.unlink()  # killed after the old segment moved: the new one becomes the live file
    recover(path)
    assert "compact_boundary" in path.read_text() and not new.exists()
    Transcript(tmp_path / "b.jsonl").record("note")  # a fresh one recovers as it opens too


def test_a_damaged_line_resumes_from_what_came_before_it_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {"kind": "compact_boundary", "messages": [said("summary")]},
        {"kind": "message", **said("kept", "assistant")},
    ]
    text = "".join(json.dumps(e) + "\n" for e in lines)
    path.write_text(text + '{"kind": "mess\n' + json.dumps({"kind": "message", **said("x")}) + "\n")
    resumed = load_conversation(path)
    assert conversation_of(resumed.events) == [said("summary"), said("kept", "assistant")]
    (warning,) = resumed.warnings
    assert "line 3 is damaged" in warning and "2 later line(s) left out" in warning
    path.write_text(text + '{"kind": "message", "ro')  # a torn last line: a kill mid-write
    assert "cut off" in load_conversation(path).warnings[0]


def test_a_damaged_boundary_resumes_from_the_boundary_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    rotate(
        path, (json.dumps({"kind": "compact_boundary", "messages": [said("old")]}) + "\n").encode()
    )
    with path.open("a") as live:
        live.write(json.dumps({"kind": "message", **said("older work", "assistant")}) + "\n")
    rotate(path, b'{"kind": "compact_boundary", "messages": [{"ro\xff\n')  # damaged
    with path.open("a") as live:
        live.write(json.dumps({"kind": "message", **said("lost", "assistant")}) + "\n")
    resumed = load_conversation(path)
    assert conversation_of(resumed.events) == [said("old"), said("older work", "assistant")]
    assert "boundary before it (0001.jsonl.gz)" in resumed.warnings[0]
    assert history_dir(path).name == "t.history"
