"""`swarm` commands and a teammate on a PostgreSQL team: real `swarm` processes, a real
`python -m teammate` started by `swarm spawn`, a real server (`conftest.pg_server`).

What is checked is what each command prints and what the store holds after it, never a time;
waits are on a condition with a deadline (`swarm wait`, `helpers.wait_for`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DEADLINE_S, wait_for
from pg_cli import ok, swarm

from protocols.pg import Database, PgMailbox, PgTaskBoard, PgTeamFile
from protocols.store.selection import POINTER

pytestmark = pytest.mark.slow


def test_team_create_store_keeps_the_team_in_postgresql_and_a_pointer_without_password(
    url: str, db: Database, home: Path, config_root: Path
) -> None:
    secret_url = url.replace("swarm@", "swarm:hunter2@")  # trust auth: the password is unused
    created = swarm("team", "create", "t", "--store", secret_url, "--json", cwd=home, team=None)
    assert "hunter2" not in created.stdout + created.stderr
    value = json.loads(ok(created))
    assert value["team"] == "t" and value["store"].startswith("postgresql://swarm@/")
    assert PgTeamFile(db, "t").load().member("team-lead") is not None
    team_dir = config_root / "teams" / "t"
    assert not (team_dir / "config.json").exists()  # the roster is in the store only
    pointer = json.loads((team_dir / POINTER).read_text())
    assert pointer == {"store": url}  # the same URL, its password left out
    shown = ok(swarm("team", "show", "--json", cwd=home))  # found again without --store
    assert json.loads(shown)["members"][0]["name"] == "team-lead"
    ok(swarm("team", "delete", cwd=home))
    assert not PgTeamFile(db, "t").exists()
    assert not team_dir.exists()


def test_send_inbox_and_tasks_on_a_postgresql_team(
    pg_team_t: str, db: Database, home: Path
) -> None:
    PgTeamFile(db, "t").add_member("alice", cwd=home)  # a member nobody runs
    ok(swarm("send", "alice", "review schema.sql", "--summary", "a review", cwd=home))
    [entry] = PgMailbox(db, "t").read_unread("alice")
    assert (entry.text, entry.from_, entry.summary) == (
        "review schema.sql",
        "team-lead",
        "a review",
    )
    shown = json.loads(ok(swarm("inbox", "alice", "--json", "--mark-read", cwd=home)))
    assert [m["text"] for m in shown] == ["review schema.sql"]
    assert PgMailbox(db, "t").read_unread("alice") == []

    assert ok(swarm("task", "add", "schema", "--command", "true", cwd=home)).strip() == "1"
    ok(swarm("task", "add", "migrate", "--blocked-by", "1", cwd=home))
    listed = json.loads(ok(swarm("task", "list", "--json", cwd=home)))
    assert [(t["id"], t["status"], t["blockedBy"]) for t in listed] == [
        ("1", "pending", []),
        ("2", "pending", ["1"]),
    ]
    refused = swarm("task", "claim", "2", "--as", "alice", "--json", cwd=home)
    assert refused.returncode == 1 and json.loads(refused.stdout)["reason"] == "blocked"
    claimed = json.loads(ok(swarm("task", "claim", "1", "--as", "alice", "--json", cwd=home)))
    assert claimed["claimed"] is True
    assert PgTaskBoard(db, "t").epoch(1) == 1  # the store's claim, with its fencing epoch
    ok(swarm("task", "update", "1", "--status", "completed", cwd=home))
    shown_task = json.loads(ok(swarm("task", "show", "1", "--json", cwd=home)))
    assert (shown_task["status"], shown_task["owner"]) == ("completed", "alice")

    status = json.loads(ok(swarm("status", "--json", cwd=home)))
    assert [m["name"] for m in status["members"]] == ["team-lead", "alice"]
    assert [t["id"] for t in status["tasks"]["completed"]] == ["1"]
    assert [t["id"] for t in status["tasks"]["pending"]] == ["2"]
    frame = ok(swarm("watch", "--once", cwd=home))
    assert "team t" in frame and "migrate" in frame
    waited = ok(swarm("wait", "--task", "1", "--timeout", str(DEADLINE_S), cwd=home))
    assert waited.startswith("met: #1 completed")


def test_a_shell_teammate_on_a_postgresql_team_claims_completes_and_answers(
    pg_team_t: str, db: Database, home: Path
) -> None:
    ok(swarm("task", "add", "first", "--command", "echo one", cwd=home))
    ok(swarm("task", "add", "second", "--command", "echo two", "--blocked-by", "1", cwd=home))
    spawned = swarm(
        "spawn", "alice", "--backend", "subprocess", "--model", "shell", "--prompt", "go",
        cwd=home,
    )  # fmt: skip
    ok(spawned)
    done = swarm("wait", "--all-tasks", "--timeout", str(DEADLINE_S), cwd=home)
    assert done.stdout.startswith("met: all 2 tasks completed"), (done.stdout, done.stderr)
    board = PgTaskBoard(db, "t")
    assert [(t.id, t.status, t.owner) for t in board.list()] == [
        ("1", "completed", "alice"),
        ("2", "completed", "alice"),
    ]
    events = db.run(
        lambda c: c.execute(
            "SELECT task_id, event, agent, epoch FROM task_events WHERE team = 't' ORDER BY seq"
        ).fetchall()
    )
    claims = [(task, agent, epoch) for task, event, agent, epoch in events if event == "claimed"]
    assert [(task, agent) for task, agent, _ in claims] == [(1, "alice"), (2, "alice")]
    done = [(task, epoch) for task, event, _, epoch in events if event == "completed"]
    assert done == [(task, epoch) for task, _, epoch in claims]  # each under its claim's epoch
    ok(swarm("send", "alice", "ping", cwd=home))

    def answered() -> bool:
        return any("Received: 'ping'" in e.text for e in PgMailbox(db, "t").peek_all("team-lead"))

    wait_for(answered, "alice's answer to ping")
    assert lease_of(db, "alice") is not None  # it holds a lease while it runs
    outcome = json.loads(ok(swarm("shutdown", "alice", "--json", cwd=home)))
    assert outcome["outcome"] == "approved", outcome


def lease_of(db: Database, name: str) -> object:
    from protocols.pg import Leases

    return Leases(db, "t").expires_at(name)


def test_swarm_store_finds_a_team_on_a_config_root_that_never_saw_it(
    pg_team_t: str, db: Database, home: Path, tmp_path: Path
) -> None:
    ok(swarm("task", "add", "made on the first host", cwd=home))
    other = tmp_path / "other-host"
    other.mkdir()
    elsewhere = {"CLAUDE_CONFIG_DIR": str(other), "HOME": str(tmp_path / "other-home")}
    missing = swarm("task", "list", cwd=home, env=elsewhere)
    assert missing.returncode == 1 and "not found" in missing.stderr
    found = ok(swarm("task", "list", cwd=home, env={**elsewhere, "SWARM_STORE": pg_team_t}))
    assert found.strip() == "#1 [pending] made on the first host"
    ok(
        swarm(
            "send", "team-lead", "from afar", cwd=home, env={**elsewhere, "SWARM_STORE": pg_team_t}
        )
    )
    assert [e.text for e in PgMailbox(db, "t").peek_all("team-lead")] == ["from afar"]
    given = ok(swarm("--store", pg_team_t, "team", "show", "--json", cwd=home, env=elsewhere))
    assert json.loads(given)["name"] == "t"
    assert not (other / "teams" / "t").exists()  # reading left nothing behind


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("mysql://swarm:hunter2@db/swarm", "has scheme 'mysql'"),
        ("db.example:5432/swarm", "PostgreSQL URL"),
        ("postgresql://swarm:hunter2@db.example", "names no database"),
        ("postgresql://swarm:hunter2@db.example:99999/swarm", "port"),
        ("postgresql://swarm:hunter2@db.example/swarm?colour=blue", "refused by libpq"),
    ],
)
def test_a_bad_store_url_is_a_clear_error_without_its_password(
    store: str, says: str, home: Path, config_root: Path
) -> None:
    for args, env in (
        (["team", "create", "t", "--store", store], {}),
        (["task", "list"], {"SWARM_STORE": store}),
    ):
        result = swarm(*args, cwd=home, env=env)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("swarm: error: "), result.stderr
        assert says in result.stderr and "postgresql://" in result.stderr
        assert "Traceback" not in result.stderr and "hunter2" not in result.stderr
    assert not (config_root / "teams" / "t").exists()


def test_swarm_up_with_store_brings_a_team_file_up_on_postgresql(
    url: str, db: Database, home: Path, config_root: Path
) -> None:
    (home / "team.yaml").write_text(
        "team: t\n"
        f"store: '{url}'\n"
        "members:\n"
        "  - {name: cal, prompt: Work the board.}\n"
        "tasks:\n"
        "  - {subject: note the run, command: 'echo run >> runs.txt'}\n"
    )
    ok(swarm("up", "team.yaml", "--backend", "subprocess", cwd=home, team=None))
    try:
        done = swarm("wait", "--all-tasks", "--timeout", str(DEADLINE_S), cwd=home)
        assert done.stdout.startswith("met: all 1 tasks completed"), (done.stdout, done.stderr)
        assert [m.name for m in PgTeamFile(db, "t").load().members] == ["team-lead", "cal"]
        assert (home / "runs.txt").read_text() == "run\n"
    finally:
        ok(swarm("down", "t", cwd=home, team=None))
    assert not PgTeamFile(db, "t").exists()
