"""`protocols.store.selection`: which store a team lives in, the URL checks, and that a file team never
loads the PostgreSQL driver."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from protocols.errors import StoreUnavailable
from protocols.inbox.mailbox import Mailbox
from protocols.paths import TeamPaths
from protocols.store.selection import (
    POINTER,
    BadStoreUrl,
    FileStore,
    check_url,
    handed_store,
    locate,
    open_store,
    read_pointer,
    redacted,
    write_pointer,
)
from protocols.team.file import TeamFile

URL = "postgresql://swarm:hunter2@db.example:5432/swarm?sslmode=require"


def test_check_url_takes_postgresql_urls() -> None:
    assert check_url(URL) == URL
    assert check_url("postgres:///swarm?host=/run/pg") == "postgres:///swarm?host=/run/pg"
    assert check_url("postgresql://h/?dbname=swarm") == "postgresql://h/?dbname=swarm"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("", "is empty"),
        ("mysql://u:hunter2@h/db", "has scheme 'mysql'"),
        ("swarm", "has no scheme"),
        ("postgresql://u:hunter2@h", "names no database"),
        ("postgresql://u:hunter2@h:0/db", "port 0 is out of range"),
        ("postgresql://u:hunter2@h:port/db", "cannot be read as a URL"),
        ("postgresql://u:hunter2@h/db#x", "#fragment"),
    ],
)
def test_check_url_names_what_is_wrong_and_never_the_password(url: str, says: str) -> None:
    with pytest.raises(BadStoreUrl) as caught:
        check_url(url)
    assert says in str(caught.value) and "postgresql://" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_redacted_drops_the_password_and_keeps_the_rest_as_written() -> None:
    assert redacted(URL) == "postgresql://swarm@db.example:5432/swarm?sslmode=require"
    assert redacted("postgresql:///db?host=%2Frun&password=x") == (
        "postgresql:///db?host=%2Frun&password=***"
    )
    assert redacted("postgresql://h/db") == "postgresql://h/db"


def test_a_team_is_on_files_unless_a_store_is_named(config_root: Path) -> None:
    paths = locate("t", env={})
    assert paths.store is None and paths.root == config_root.resolve()
    assert isinstance(open_store(paths), FileStore)


def test_locate_prefers_the_given_url_then_the_environment_then_the_pointer(
    config_root: Path,
) -> None:
    env_url = "postgresql://env@h/db"
    pointed = locate("t", url="postgresql://given:pw@h/db")
    write_pointer(pointed)
    assert json.loads((config_root / "teams" / "t" / POINTER).read_text()) == {
        "store": "postgresql://given@h/db"
    }
    assert read_pointer(config_root, "t") == "postgresql://given@h/db"
    assert locate("t", url="postgresql://x@h/db", env={"SWARM_STORE": env_url}).store == (
        "postgresql://x@h/db"
    )
    assert locate("t", env={"SWARM_STORE": env_url}).store == env_url
    assert locate("t", env={}).store == "postgresql://given@h/db"
    assert locate("other", env={}).store is None
    with pytest.raises(BadStoreUrl, match=r"\$SWARM_STORE"):
        locate("t", env={"SWARM_STORE": "redis://h"})


def test_a_broken_pointer_is_an_error_not_a_silent_file_team(config_root: Path) -> None:
    target = config_root / "teams" / "t" / POINTER
    target.parent.mkdir(parents=True)
    target.write_text('{"store": 7}')
    with pytest.raises(BadStoreUrl, match="names no store"):
        locate("t", env={})


def test_the_store_url_is_never_in_the_paths_repr() -> None:
    assert "hunter2" not in repr(locate("t", url=URL))


def test_a_file_team_never_imports_the_postgresql_store(config_root: Path) -> None:
    code = (
        "import sys\n"
        "from protocols.store.selection import locate, open_store\n"
        "store = open_store(locate('t'))\n"
        "store.team_file(); store.mailbox(); store.task_board()\n"
        # the URL rules (protocols.pg.url) are plain Python, asked of every store given
        "light = {'protocols.pg', 'protocols.pg.url'}\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('psycopg', 'protocols.pg')) and m not in light))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


class _StoreDown(FileStore):
    """A file store whose mailbox cannot be reached: what a test hands the code."""

    def mailbox(self, signer: object = None, on_read: object = None) -> Any:
        raise StoreUnavailable("the test's store is down")


def test_a_handed_store_is_the_one_the_code_opens_until_the_block_ends(
    paths: TeamPaths, team: TeamFile
) -> None:
    from swarm.team.waiting import unread_message

    with handed_store(paths, _StoreDown(paths)) as handed:
        assert open_store(paths) is handed
        assert open_store(TeamPaths(paths.root, "other")) is not handed  # only that team
        with pytest.raises(StoreUnavailable, match="the test's store is down"):
            unread_message(paths, "alice")
    assert type(open_store(paths)) is FileStore
    Mailbox(paths).send("alice", "hi", sender="bob")
    outcome = unread_message(paths, "alice")()
    assert outcome is not None and [e.text for e in outcome.messages] == ["hi"]
