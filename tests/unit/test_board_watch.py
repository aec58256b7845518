"""`teammate.board_watch.BoardWatch`: when an idle teammate looks at the task board."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocols.errors import StoreUnavailable
from protocols.paths import TeamPaths
from protocols.tasks.board import TaskBoard
from protocols.team.file import TeamFile
from teammate.board_watch import BoardWatch


class OutOfReachOnce(TaskBoard):
    """A board whose store is out of reach for its first listing (as a PostgreSQL store whose
    network is down): the edge this test fakes; the board is otherwise a real one."""

    def __init__(self, paths: TeamPaths) -> None:
        super().__init__(paths)
        self.failures = 1

    def list(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise StoreUnavailable("list: the PostgreSQL store did not answer for 30 s")
        return super().list(*args, **kwargs)


class Touched:
    """A watcher that reports one change of the board, then none."""

    degraded = None  # inotify works
    belled = False

    def __init__(self) -> None:
        self.news = True

    def take_touched(self, directory: Path | None) -> bool:
        news, self.news = self.news, False
        return news


def test_a_look_that_failed_is_made_again_at_the_next_step(tmp_path: Path) -> None:
    """The board changed; looking at it failed (its store out of reach), and the news was taken
    by then. The next step looks again (at once, not at the rescan ten minutes later)."""
    paths = TeamPaths(tmp_path, "t")
    TeamFile(paths).create(description="board watch")
    board = OutOfReachOnce(paths)
    board.create("work", "do it")
    watcher = Touched()
    watch = BoardWatch(board, "w1", lambda: watcher, clock=lambda: 1.0)
    with pytest.raises(StoreUnavailable):
        watch.next_task(force=False)
    task = watch.next_task(force=False)
    assert task is not None and task.subject == "work" and task.owner == "w1"
    assert watch.next_task(force=False) is None  # nothing new: no look
