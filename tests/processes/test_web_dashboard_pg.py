"""`swarm web --store URL` on a PostgreSQL team: a shell teammate's request comes over the event
stream (woken by the store's LISTEN) and an approval from the page lets it go on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Processes, wait_for
from pg_cli import ok, swarm, url_of
from web_server import EventReader, WebServer


@pytest.fixture
def pg_team(conninfo: str, workdir: Path, config_root: Path) -> Iterator[str]:
    url = url_of(conninfo)
    ok(swarm("team", "create", "t", "--store", url, cwd=workdir, team=None))
    yield url
    swarm("team", "delete", "t", "--force", cwd=workdir, team=None)


def test_approving_a_postgresql_teammate_from_the_page(
    pg_team: str, workdir: Path, procs: Processes
) -> None:
    (workdir / "build").mkdir()
    ok(swarm("task", "add", "dangerous", "--command", "rm -rf build", cwd=workdir))
    web = WebServer(procs, "--store", pg_team)
    events = EventReader(web)
    wait_for(lambda: events.states, "the first state")
    assert events.states[-1]["store"] == "postgresql"
    spawned = swarm(
        "spawn", "alice", "--backend", "subprocess", "--model", "shell", "--prompt", "go",
        cwd=workdir,
    )  # fmt: skip
    ok(spawned)
    (request,) = wait_for(events.requests, "alice's request in the event stream")
    assert request["content"] == ["$ rm -rf build"]
    assert web.post(request["id"], "approve").status_code == 200
    wait_for(
        lambda: [t["subject"] for t in events.states[-1]["tasks"]["completed"]] == ["dangerous"],
        "task 1 completed on the page",
    )
    assert not (workdir / "build").exists()
