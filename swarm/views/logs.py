"""What one member did, as readable lines: `swarm logs NAME`.

`ActivityLog` merges, by time, the member's transcript (``agents/<name>.transcript.jsonl``: tool
calls and results, what the model said, errors, trims, tokens per reply) with its messages in
(its inbox and archive) and out (other members' inboxes). A member that never called a model (a
shell worker) has no transcript: then its messages and process log are shown instead.
`RawTranscript` and `ProcessLog` give the transcript's JSON lines and the subprocess output log.
`SubAgentLog` (and `RawTranscript` given an agent id) is one sub-agent's sidechain transcript,
``agents/<name>.subagents/<agentId>.jsonl``, in the same lines; `find_subagent` finds it by id,
or by the name the member's status file maps to one. Transcripts and logs hold model and tool
output: `LogEvent.line` escapes what it prints.

Each source is incremental: `poll()` returns only what is new since the last call, so
`follow` can wake on file changes (`InboxWatcher`, with its periodic rescan) and print the rest.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from protocols.clock import ms_from_iso
from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.inbox.entry import InboxEntry
from protocols.names import did_you_mean
from protocols.paths import TeamPaths
from protocols.store.selection import open_store
from protocols.watch.wakeup import InboxWatcher
from swarm.errors import SwarmError
from swarm.views.log_lines import (
    INPUT_CHARS,
    RECORD_LINES,
    LogEvent,
    cut,
    first_line,
    message_text,
    one_line,
    plural,
    summarize_input,
    token_note,
)
from teammate.agent.transcript_history import read_segment, segments

ARCHIVE_SUFFIX = ".archive.jsonl"
SIDECHAIN_SUFFIX = ".jsonl"  # a sub-agent's transcript; its output file is <agentId>.output


class FileTail:
    """The complete lines appended to a file since the last `read` (a torn last line waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def read(self) -> list[str]:
        try:
            fd = safefs.open_path(self.path, os.O_RDONLY)  # a planted link is refused
        except FileNotFoundError:
            return []
        with os.fdopen(fd, "rb") as handle:
            if handle.seek(0, 2) < self.offset:
                self.offset = 0  # truncated or replaced: start again
            handle.seek(self.offset)
            data = handle.read()
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        # "\n" only: splitlines would also cut a JSON line at a raw U+2028 or U+0085 in a string
        text = data[:end].decode("utf-8", "replace")
        return [line.removesuffix("\r") for line in text.split("\n")]


class TranscriptTail(FileTail):
    """A transcript's lines, its history's first (`teammate.agent.transcript_history`: each
    compaction moved a finished segment there): the first read gives every segment, and a
    later one, after a compaction, the rest of the segment that was live, then the new one."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.segments_read: int | None = None

    def read(self) -> list[str]:
        lines: list[str] = []
        history = segments(self.path)
        if self.segments_read is None:
            lines = [line for segment in history for line in _segment_lines(segment)]
        elif len(history) > self.segments_read:  # rotated since the last read
            lines = _segment_lines(history[self.segments_read], skip=self.offset)
            lines += [
                line
                for segment in history[self.segments_read + 1 :]
                for line in _segment_lines(segment)
            ]
            self.offset = 0
        self.segments_read = len(history)
        return lines + super().read()


def _segment_lines(segment: Path, skip: int = 0) -> list[str]:
    try:
        data = read_segment(segment)[skip:]
    except (OSError, EOFError, ValueError):  # a segment gone or damaged: the rest still shows
        return []
    return [line for line in data.decode("utf-8", "replace").split("\n") if line]


def log_path(paths: TeamPaths, name: str) -> Path:
    """Where a subprocess teammate's output goes (see `swarm.team.lifecycle.spawn_member`)."""
    return paths.log(name)


def subagent_ids(paths: TeamPaths, name: str) -> list[str]:
    """The ids of the sub-agents of member `name` that have a transcript, by when they last
    wrote to it."""
    try:
        found = safefs.entries(paths.subagents_dir(name))
    except (FileNotFoundError, NotADirectoryError):
        return []
    transcripts = [
        (st.st_mtime_ns, entry[: -len(SIDECHAIN_SUFFIX)])
        for entry, st in found
        if entry.endswith(SIDECHAIN_SUFFIX) and len(entry) > len(SIDECHAIN_SUFFIX)
    ]
    return [agent_id for _, agent_id in sorted(transcripts)]


def find_subagent(paths: TeamPaths, name: str, key: str) -> str:
    """The id of member `name`'s sub-agent `key` (an agent id with a transcript, or the name
    it was given, as the member's status file maps it). Raises `SwarmError` listing the ids
    known for `name`."""
    known = subagent_ids(paths, name)
    if key in known:
        return key
    status = open_store(paths).read_status(name)
    entries = status.subagents if status is not None else []
    named = [e.agentId for e in entries if e.name == key and e.agentId in known]
    if named:
        return named[-1]
    names = {e.agentId: e.name for e in entries if e.name}
    listed = ", ".join(f"{i} ({names[i]})" if i in names else i for i in known)
    has = f"its sub-agents: {listed}" if known else "it has run no sub-agents with a transcript"
    raise SwarmError(f"{name} has no sub-agent {key!r} in team {paths.team!r}; {has}")


class RawTranscript:
    """The transcript's JSON lines, as they are (of sub-agent `agent_id`, if given)."""

    def __init__(self, paths: TeamPaths, name: str, agent_id: str | None = None) -> None:
        self.tail: FileTail
        if agent_id is not None:
            self.tail = TranscriptTail(paths.subagent_transcript(name, agent_id))
            return
        self.tail = TranscriptTail(paths.transcript(name))
        if not self.tail.path.exists():
            raise SwarmError(
                f"{name} has no transcript in team {paths.team!r} (it has made no model calls); "
                f"try `swarm logs {name}` or `swarm logs {name} --process`"
            )

    def poll(self) -> list[LogEvent]:
        return [LogEvent("", "raw", line) for line in self.tail.read()]


class ProcessLog(RawTranscript):
    """The subprocess teammate's output log, ``teams/<team>/logs/<name>.log``."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.tail = FileTail(log_path(paths, name))
        if self.tail.path.exists():
            return
        config = open_store(paths).team_file().load()
        member = config.member(name)
        if member is not None and member.tmuxPaneId not in ("", "in-process"):
            socket = (member.model_extra or {}).get("tmuxSocket")
            where = f"tmux pane {member.tmuxPaneId}"
            where += f" on socket {socket} (tmux -L {socket} attach)" if socket else ""
            raise SwarmError(f"{name} has no process log: it runs in {where}")
        known = "" if member is not None else f"; members: {', '.join(config.member_names())}"
        raise SwarmError(f"no process log for {name} in team {paths.team!r}{known}")


class ActivityLog:
    """The member's transcript and messages merged by time (see the module docstring)."""

    def __init__(self, paths: TeamPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.mailbox = open_store(paths).mailbox()
        self.transcript = TranscriptTail(paths.transcript(name))
        self.tool_names: dict[str, str] = {}
        self.seen: set[str] = set()
        self.inbox_signature: tuple[Any, ...] | None = None
        self.note: str | None = None
        self.process: FileTail | None = None
        if safefs.exists(self.transcript.path) and safefs.stat_of(self.transcript.path).st_size:
            return
        log = log_path(paths, name)
        config = open_store(paths).team_file().load()
        if config.member(name) is None and not safefs.exists(log):
            raise SwarmError(
                f"no transcript or log for {name} in team {paths.team!r}"
                f"{did_you_mean(name, config.member_names())}; "
                f"members: {', '.join(config.member_names())}"
            )
        self.note = f"{name} has made no model calls (no transcript): showing its messages"
        if safefs.exists(log):
            self.process = FileTail(log)
            self.note += f", then its process log {log}"

    def poll(self) -> list[LogEvent]:
        events = [e for line in self.transcript.read() for e in self._from_transcript(line)]
        events += self._messages()
        events.sort(key=lambda e: ms_from_iso(e.ts) or math.inf)  # stable: ties keep file order
        if self.process is not None:
            events += [LogEvent("", "log", f"{'log':<8}  {s}") for s in self.process.read()]
        return events

    def _from_transcript(self, line: str) -> list[LogEvent]:
        try:
            record = json.loads(line)
        except ValueError:
            return []
        return self._from_record(record) if isinstance(record, dict) else []

    def _from_record(self, record: dict[str, Any]) -> list[LogEvent]:
        ts, kind = str(record.get("ts", "")), record.get("kind")
        if not isinstance(kind, str):
            return []
        if kind in ("tool_call", "tool_result", "tool_crash"):
            return [self._tool_event(ts, kind, record)]
        if kind == "response":
            return self._response(ts, record)
        line = RECORD_LINES.get(kind)
        # requests, messages, and kinds this version does not know: nothing
        return [LogEvent(ts, kind, line(record))] if line is not None else []

    def _tool_event(self, ts: str, kind: str, record: dict[str, Any]) -> LogEvent:
        """A tool call, its result or its crash (each result named by its call)."""
        use_id = record.get("id")
        if kind == "tool_call":
            name = str(record.get("name") or "?")
            self.tool_names[str(use_id)] = name
            summary = summarize_input(name, record.get("input"))
            return LogEvent(ts, kind, f"→ {name}: {summary}", {"tool": name, "id": use_id})
        name = self.tool_names.get(str(use_id), "tool")
        if kind == "tool_result":
            error = bool(record.get("is_error"))
            text = f"← {name} {'✗' if error else 'ok'}: {first_line(str(record.get('content')))}"
            return LogEvent(ts, kind, text, {"tool": name, "id": use_id, "is_error": error})
        last = (str(record.get("traceback") or "").strip().splitlines() or ["?"])[-1]
        return LogEvent(ts, kind, f"✗ {name} crashed: {cut(last, INPUT_CHARS)}")

    def _response(self, ts: str, record: dict[str, Any]) -> list[LogEvent]:
        blocks = [b for b in record.get("content") or [] if isinstance(b, dict)]
        said = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        said = [text for text in said if text.strip()]
        usage = record.get("usage") or {}
        note = token_note(usage)
        stop = record.get("stop_reason")
        if stop not in (None, "end_turn", "tool_use"):
            note += f" [stopped: {stop}]"
        # the count (its calls are in the tool_call records), or the calls of an older record
        uses = record.get("tool_uses")
        if not isinstance(uses, int):
            uses = sum(1 for b in blocks if b.get("type") == "tool_use")
        if not said:
            reply = plural(uses, "tool call") if uses else "empty reply"
            return [LogEvent(ts, "usage", f"model: {reply} {note}", {"usage": usage})]
        events = [LogEvent(ts, "says", f"says: {one_line(text)}") for text in said[:-1]]
        last = LogEvent(ts, "says", f"says: {one_line(said[-1])} {note}", {"usage": usage})
        return [*events, last]

    def _owners(self) -> set[str] | None:
        """Whose inboxes to read: those with a file; None when no inbox changed since."""
        try:
            found = sorted(safefs.entries(self.paths.inboxes))
        except FileNotFoundError:
            return None
        signature = tuple((name, st.st_size, st.st_mtime_ns) for name, st in found)
        if signature == self.inbox_signature:
            return None
        self.inbox_signature = signature
        names = [name for name, _ in found]
        owners = {n[: -len(".json")] for n in names if n.endswith(".json")}
        return owners | {n[: -len(ARCHIVE_SUFFIX)] for n in names if n.endswith(ARCHIVE_SUFFIX)}

    def _messages(self) -> list[LogEvent]:
        """New messages to the member (its inbox) and from it (everyone else's inbox)."""
        owners = self._owners()
        if owners is None:
            return []
        outgoing: dict[tuple[str, str], list[str]] = {}
        events = []
        for owner in sorted(owners):
            try:
                entries = self.mailbox.peek_all(owner)
            except ProtocolsError:
                continue
            for entry in entries:
                if owner == self.name and f"in:{entry.identity}" not in self.seen:
                    self.seen.add(f"in:{entry.identity}")
                    text = f"in  from {entry.from_}: {message_text(entry)}"
                    events.append(LogEvent(entry.timestamp, "in", text, {"from": entry.from_}))
                elif owner != self.name and entry.from_ == self.name:
                    recipients = outgoing.setdefault((entry.timestamp, entry.text), [])
                    if owner not in recipients:
                        recipients.append(owner)
        for (ts, text), recipients in outgoing.items():
            key = f"out:{ts}:{text}"
            if key in self.seen:
                continue
            self.seen.add(key)
            entry = InboxEntry.model_validate({"from": self.name, "text": text, "timestamp": ts})
            line = f"out to {', '.join(recipients)}: {message_text(entry)}"
            events.append(LogEvent(ts, "out", line, {"to": recipients}))
        return events


class SubAgentLog(ActivityLog):
    """One sub-agent's sidechain transcript, in the lines of a member's (it has no inbox and
    no process of its own)."""

    def __init__(self, paths: TeamPaths, name: str, agent_id: str) -> None:
        self.paths = paths
        self.name = name
        self.agent_id = agent_id
        self.transcript = TranscriptTail(paths.subagent_transcript(name, agent_id))
        self.tool_names = {}
        self.note = None
        self.process = None

    def poll(self) -> list[LogEvent]:
        return [e for line in self.transcript.read() for e in self._from_transcript(line)]


def follow(
    paths: TeamPaths,
    name: str,
    poll: Callable[[], list[LogEvent]],
    show: Callable[[LogEvent], None],
    agent_id: str | None = None,
) -> None:
    """Show what `poll` finds each time the transcript, log or an inbox changes (and at every
    rescan), until interrupted (Ctrl-C ends it quietly); of sub-agent `agent_id`: its
    transcript."""
    watched: tuple[Path, ...] = (paths.transcript(name), log_path(paths, name))
    directories: tuple[Path, ...] = (paths.inboxes,)
    if agent_id is not None:
        watched, directories = (paths.subagent_transcript(name, agent_id),), ()
    show_on_wakes(InboxWatcher(*watched, directories=directories), poll, show)


def show_on_wakes(
    watching: Any, poll: Callable[[], list[LogEvent]], show: Callable[[LogEvent], None]
) -> None:
    """With `watching` (a watcher to enter: an `InboxWatcher`, a store's team watcher), show
    what `poll` finds at each wake-up, until interrupted (Ctrl-C ends it quietly)."""
    try:
        with watching as watcher:
            while True:
                watcher.clear()
                for event in poll():
                    show(event)
                watcher.wait(3600)
    except KeyboardInterrupt:
        return
