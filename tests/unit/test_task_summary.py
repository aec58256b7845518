"""The board's summary on disk (`protocols.tasks.summary`), which a new ``swarm status`` reads
instead of parsing every task file: it never answers from a stale picture (a file rewritten in
place with the same size and mtime, added, removed), is rebuilt when it is corrupt, a link or
cannot be written, never changes what ``swarm status`` prints, and concurrent writers leave a
whole one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import swarm

from protocols.paths import TeamPaths
from protocols.records.plain import Plain
from protocols.tasks import summary as task_summary
from protocols.tasks.board import TaskBoard
from protocols.tasks.model import Task
from protocols.tasks.task import TASK_FILE
from protocols.team.file import TeamFile
from swarm.views.snapshot import clear_cache, snapshot, to_json
from swarm.views.table import render

AHEAD_NS = 10 * 1_000_000_000  # a look dated this far ahead trusts files written just now
NOW_MS = 1_800_000_000_000


@pytest.fixture
def board(team: TeamFile) -> TaskBoard:
    board = TaskBoard(team.paths)
    board.create("build", "make it")
    board.create("test", metadata={"_internal": True})
    board.create("ship", blocked_by=["1"])
    board.claim("1", "alice")
    board.create("flaky")
    board.fail("4", "it broke", by="bob")
    return board


class Looks:
    """`task_summary.rows` of a board, counting the files it had to parse."""

    def __init__(self, board: TaskBoard) -> None:
        self.board = board
        self.parsed: list[str] = []

    def read_task(self, name: str, dir_fd: int) -> Task | Plain | task_summary.Invalid | None:
        self.parsed.append(name)
        return self.board.read_task(name, dir_fd)

    def invalid_again(self, name: str, reason: str) -> None:
        self.board.invalid_again(name, reason)

    def __call__(self, ahead_ns: int = AHEAD_NS) -> list[task_summary.TaskRow]:
        self.parsed = []
        paths = self.board.paths
        clock: Callable[[], int] = lambda: time.time_ns() + ahead_ns  # noqa: E731
        return task_summary.rows(paths.tasks_dir, paths.task_summary, self, clock)


def same_as_the_files(rows: list[task_summary.TaskRow], board: TaskBoard) -> None:
    tasks = board.list(include_internal=True)
    assert [r.to_json_dict() for r in rows] == [t.to_json_dict() for t in tasks]
    for row, task in zip(rows, tasks, strict=True):
        assert (row.id, row.status, row.subject, row.owner) == (
            task.id,
            task.status,
            task.subject,
            task.owner,
        )
        assert (row.blockedBy, row.failed, row.failure, row.internal, row.unfinished) == (
            task.blockedBy,
            task.failed,
            task.failure,
            task.internal,
            task.unfinished,
        )


def write_in_place(path: Path, task: dict[str, object], keep_mtime: bool = True) -> None:
    """Rewrite a task file as Claude Code does (truncate and write, same inode), keeping its
    mtime as a rewrite within one tick of the clock would."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(json.dumps(task, indent=2).encode())
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_rows_are_the_tasks_and_a_second_look_parses_nothing(board: TaskBoard) -> None:
    look = Looks(board)
    same_as_the_files(look(), board)
    assert len(look.parsed) == 4
    summary = board.paths.task_summary
    written = summary.stat()
    same_as_the_files(look(), board)
    assert look.parsed == []
    assert summary.stat().st_mtime_ns == written.st_mtime_ns  # nothing changed: not written
    assert [r.id for r in board.rows()] == ["1", "3", "4"]  # internal ones only when asked


def test_the_summary_is_out_of_claude_codes_sight(board: TaskBoard, paths: TeamPaths) -> None:
    Looks(board)()
    summary = paths.task_summary
    assert summary.is_file() and not summary.is_relative_to(paths.tasks_dir)
    assert summary.is_relative_to(paths.root / "swarm")
    assert not TASK_FILE.match(summary.name)
    assert not list(paths.tasks_dir.glob("*summary*"))


def test_files_changed_just_before_the_look_are_parsed_again(board: TaskBoard) -> None:
    look = Looks(board)
    look(ahead_ns=0)  # taken now: every file was written within the racy window
    written = board.paths.task_summary.stat()
    look(ahead_ns=0)
    assert len(look.parsed) == 4
    # they hold what their rows say, and a summary written now would not trust them either
    assert board.paths.task_summary.stat().st_ino == written.st_ino
    look()  # once they are old enough, a look trusts them from then on
    look()
    assert look.parsed == []


def test_a_same_size_rewrite_with_the_same_stat_is_seen_if_racy(
    board: TaskBoard, paths: TeamPaths
) -> None:
    """The case inode, size and times cannot tell: a rewrite within the same tick of the
    clock. The summary is made to hold the file's new stat with the old content, taken moments
    after the rewrite; the file is parsed again all the same (git's racy-index rule), and the
    directory, changed moments before too, is not taken for unchanged."""
    look = Looks(board)
    look()
    path = paths.task("1")
    task = json.loads(path.read_text())
    write_in_place(path, {**task, "subject": "BUILD"})  # same size, same mtime
    st = path.stat()
    here = os.stat(paths.tasks_dir)
    directory, times = (here.st_dev, here.st_ino), (here.st_mtime_ns, here.st_ctime_ns)
    stale = task_summary.load(paths.task_summary, directory)
    keys = [
        (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if task_id == "1" else key
        for task_id, key in zip(stale.ids, stale.keys, strict=True)
    ]
    task_summary.save(
        paths.task_summary, directory, times, True, st.st_ctime_ns + 1, stale.all_rows, keys
    )
    found = look(ahead_ns=0)
    assert "1.json" in look.parsed
    assert found[0].subject == "BUILD"
    same_as_the_files(found, board)


def under_its_lock(path: Path, task: dict[str, object]) -> None:
    """Rewrite a task file in place as Claude Code does: under its lock, the directory
    ``<N>.json.lock`` made beside it and removed after the write (spec section 6)."""
    lock = path.with_name(path.name + ".lock")
    lock.mkdir()
    try:
        write_in_place(path, task)
    finally:
        lock.rmdir()


def test_a_same_size_rewrite_keeping_the_mtime_is_seen(board: TaskBoard, paths: TeamPaths) -> None:
    look = Looks(board)
    look()
    look()
    assert look.parsed == []
    path = paths.task("3")
    task = json.loads(path.read_text())
    under_its_lock(path, {**task, "subject": "SHIP"})
    assert len(path.read_bytes()) == path.stat().st_size
    found = look()
    assert look.parsed == ["3.json"]
    assert [r.subject for r in found if r.id == "3"] == ["SHIP"]
    same_as_the_files(found, board)


def test_a_busy_board_is_not_written_again_for_a_few_changed_files(
    board: TaskBoard, paths: TeamPaths
) -> None:
    """A board that never settles (here a file dated in the future: it is always "just
    changed") is summarised again only once more than one row in `SAVE_SHARE` changed since:
    before that, a look reads the few changed files again rather than write the whole summary,
    and answers the same."""
    for i in range(200):
        board.create(f"task {i}")
    future = time.time_ns() + AHEAD_NS + 600 * 1_000_000_000
    os.utime(paths.task("2"), ns=(future, future))
    look = Looks(board)
    look()
    written = paths.task_summary.stat().st_ino
    board.update("7", subject="changed")
    same_as_the_files(look(), board)
    assert sorted(look.parsed) == ["2.json", "7.json"]
    assert paths.task_summary.stat().st_ino == written  # 1 row of 204: not written
    same_as_the_files(look(), board)
    assert sorted(look.parsed) == ["2.json", "7.json"]  # read again: the summary did not change
    board.update("8", subject="changed too")
    board.delete("9")
    same_as_the_files(look(), board)
    assert sorted(look.parsed) == ["2.json", "7.json", "8.json"]
    assert paths.task_summary.stat().st_ino != written  # 3 rows of 204 > 1 in 100: written
    same_as_the_files(look(), board)
    assert look.parsed == ["2.json"]  # the one always "just changed"


def test_a_settled_board_is_read_from_the_summary_alone(board: TaskBoard, paths: TeamPaths) -> None:
    """While the task directory is as the summary found it, nothing in it is looked at: a file
    rewritten in place *without the lock* (by hand) is not seen until the directory changes, as
    the module says; then it is."""
    look = Looks(board)
    look()
    path = paths.task("3")
    task = json.loads(path.read_text())
    write_in_place(path, {**task, "subject": "SHIP"}, keep_mtime=False)
    assert [r.subject for r in look() if r.id == "3"] == ["ship"]  # the summary, trusted whole
    assert look.parsed == []
    os.utime(paths.tasks_dir)  # `touch tasks/t`: any change of the directory
    assert [r.subject for r in look() if r.id == "3"] == ["SHIP"]
    assert look.parsed == ["3.json"]


def test_a_summary_taken_while_files_were_changing_is_not_trusted_whole(
    board: TaskBoard, paths: TeamPaths
) -> None:
    look = Looks(board)
    look(ahead_ns=0)  # taken now: the files are not settled yet
    path = paths.task("3")
    task = json.loads(path.read_text())
    write_in_place(path, {**task, "subject": "SHIP"}, keep_mtime=False)  # no lock, by hand
    assert [r.subject for r in look() if r.id == "3"] == ["SHIP"]


def test_added_and_removed_files_are_seen(board: TaskBoard, paths: TeamPaths) -> None:
    look = Looks(board)
    look()
    board.create("docs")
    board.delete("3")
    found = look()
    assert look.parsed == ["1.json", "5.json"]  # the new file, and 1 (delete rewrote it)
    assert [r.id for r in found] == ["1", "2", "4", "5"]
    same_as_the_files(found, board)
    paths.task("5").unlink()
    found = look()
    assert look.parsed == []
    assert [r.id for r in found] == ["1", "2", "4"]


def test_an_invalid_file_is_skipped_and_no_change(
    board: TaskBoard, paths: TeamPaths, caplog: pytest.LogCaptureFixture
) -> None:
    look = Looks(board)
    paths.task("9").write_text('{"id": "8", "subject": "wrong id"}')
    found = look()
    assert [r.id for r in found] == ["1", "2", "3", "4"]
    written = paths.task_summary.stat().st_mtime_ns
    caplog.clear()
    look()
    assert look.parsed == []  # unchanged: its reason is kept (no model loaded for it again)
    assert "skipping invalid task file" in caplog.text and "9.json" in caplog.text
    assert paths.task_summary.stat().st_mtime_ns == written
    os.utime(paths.tasks_dir)  # the directory changed: every file is stat'ed, 9 is unchanged
    caplog.clear()
    look()
    assert look.parsed == [] and "9.json: 1 validation error for Task" in caplog.text


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not json at all",
        b'{"format": "swarm-task-summary", "version": 1}\n[]\n',
        b'{"format": "other", "version": 1}\n',
    ],
)
def test_a_corrupt_summary_is_rebuilt(board: TaskBoard, paths: TeamPaths, damage: bytes) -> None:
    look = Looks(board)
    look()
    paths.task_summary.write_bytes(damage)
    same_as_the_files(look(), board)
    assert len(look.parsed) == 4
    look()
    assert look.parsed == []


def test_a_flipped_byte_is_caught_by_the_checksum(board: TaskBoard, paths: TeamPaths) -> None:
    look = Looks(board)
    look()
    data = bytearray(paths.task_summary.read_bytes())
    at = data.index(b'"test"')
    data[at + 1 : at + 5] = b"TEST"
    paths.task_summary.write_bytes(bytes(data))
    found = look()
    assert len(look.parsed) == 4
    assert [r.subject for r in found][1] == "test"


@pytest.mark.parametrize(
    "column, value",
    [(0, "../x"), (0, "1\n2"), (0, "3"), (1, "done"), (2, 42), (3, 7), (4, [1]), (6, 0)],
)
def test_columns_of_the_wrong_types_are_not_used(
    board: TaskBoard, paths: TeamPaths, column: int, value: object
) -> None:
    look = Looks(board)
    look()
    here = os.stat(paths.tasks_dir)
    directory, times = (here.st_dev, here.st_ino), (here.st_mtime_ns, here.st_ctime_ns)
    summary = task_summary.load(paths.task_summary, directory)
    rows = [
        row._replace(full=row.line(), **{row._fields[column]: value}) if at == 0 else row
        for at, row in enumerate(summary.all_rows)
    ]
    task_summary.save(
        paths.task_summary, directory, times, True, summary.taken_ns, rows, summary.keys
    )
    same_as_the_files(look(), board)
    assert len(look.parsed) == 4  # the whole summary is refused


def test_a_summary_of_another_directory_is_not_used(board: TaskBoard, paths: TeamPaths) -> None:
    look = Looks(board)
    look()
    saved = paths.task_summary.read_bytes()
    paths.tasks_dir.rename(paths.tasks_dir.with_name("old"))
    TaskBoard(paths).create("fresh")
    paths.task_summary.write_bytes(saved)
    found = look()
    assert [r.subject for r in found] == ["fresh"]


def test_a_linked_summary_is_neither_read_nor_followed(
    board: TaskBoard, paths: TeamPaths, tmp_path: Path
) -> None:
    look = Looks(board)
    look()
    elsewhere = tmp_path / "elsewhere"
    original = paths.task_summary.read_bytes()
    elsewhere.write_bytes(original)
    paths.task_summary.unlink()
    paths.task_summary.symlink_to(elsewhere)
    same_as_the_files(look(), board)
    assert len(look.parsed) == 4  # not read through the link
    assert not paths.task_summary.is_symlink()  # replaced by a summary of its own
    assert elsewhere.read_bytes() == original


@pytest.mark.parametrize("blocker", ["file", "link"])
def test_a_summary_that_cannot_be_written_is_not_fatal(
    board: TaskBoard, paths: TeamPaths, tmp_path: Path, blocker: str
) -> None:
    directory = paths.task_summary.parent
    directory.parent.mkdir(parents=True, exist_ok=True)
    if blocker == "file":
        directory.write_text("in the way")
    else:
        (tmp_path / "target").mkdir()
        directory.symlink_to(tmp_path / "target")
    look = Looks(board)
    same_as_the_files(look(), board)
    same_as_the_files(look(), board)
    assert len(look.parsed) == 4
    assert not (tmp_path / "target").exists() or not list((tmp_path / "target").iterdir())


def test_a_read_only_summary_directory_is_not_fatal(board: TaskBoard, paths: TeamPaths) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    look = Looks(board)
    look()
    directory = paths.task_summary.parent
    board.create("more")
    directory.chmod(0o500)
    try:
        same_as_the_files(look(), board)
    finally:
        directory.chmod(0o755)


def test_snapshot_is_the_same_with_and_without_the_summary(
    board: TaskBoard, paths: TeamPaths
) -> None:
    def both() -> tuple[str, object]:
        clear_cache()
        view = snapshot(paths, now_ms=NOW_MS, once=True)
        return render(view), to_json(view)

    clear_cache()
    by_index = snapshot(paths, now_ms=NOW_MS)
    first = both()  # no summary yet: every file parsed
    assert paths.task_summary.exists()
    assert both() == first == (render(by_index), to_json(by_index))
    assert "#4 [failed] flaky" in first[0] and "#2" not in first[0]


def test_swarm_status_prints_the_same_with_and_without_the_summary(
    board: TaskBoard, paths: TeamPaths
) -> None:
    env = {"SWARM_CLI_PROCESS": "1"}
    without = swarm("status", env=env), swarm("status", "--json", env=env)
    assert paths.task_summary.exists()
    with_it = swarm("status", env=env), swarm("status", "--json", env=env)
    for a, b in zip(without, with_it, strict=True):
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert without[0].stdout == with_it[0].stdout
    assert json.loads(without[1].stdout)["tasks"] == json.loads(with_it[1].stdout)["tasks"]
    report = json.loads(with_it[1].stdout)
    tasks = {t.id: t.to_json_dict() for t in board.list()}
    assert report["tasks"]["in_progress"] == [{**tasks["1"], "state": "in_progress"}]
    failed = {**tasks["4"], "state": "failed", "failure": "it broke", "outputTail": []}
    assert report["failed"] == [failed]


def test_concurrent_writers_leave_a_whole_summary(board: TaskBoard, paths: TeamPaths) -> None:
    for n in range(40):
        board.create(f"more {n}")
    script = (
        "import sys\n"
        "from protocols.paths import TeamPaths\n"
        "from protocols.tasks.board import TaskBoard\n"
        "from pathlib import Path\n"
        "board = TaskBoard(TeamPaths(Path(sys.argv[1]), 't'))\n"
        "for _ in range(5):\n"
        "    board.paths.task_summary.unlink(missing_ok=True)\n"
        "    assert len(board.rows(include_internal=True)) == 44\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(paths.root)]) for _ in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    here = os.stat(paths.tasks_dir)
    summary = task_summary.load(paths.task_summary, (here.st_dev, here.st_ino))
    assert len(summary.ids) == 44
    assert not [p for p in paths.task_summary.parent.iterdir() if p != paths.task_summary]
