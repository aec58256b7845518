"""`swarm web --store URL` in a real headless Chromium, on a PostgreSQL team whose teammates run
on two "machines" (config roots of their own, `machines`): alice on the lead's machine a, bob on
machine b through its `swarm host serve` agent. A page served from a third machine c, which holds
no team files and no lead key, shows both requests and says why it cannot answer them (the
teammates take only answers signed with a's key): nothing is written. The page served from a
shows them too, and clicking Approve on each lets each go on, on its own machine."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from chromium import NEEDS_CHROMIUM, Chromium
from helpers import Processes, wait_for
from machines import machine, serve, stop
from pg_cli import url_of
from web_server import WebServer

from protocols.pg import Database, PgMailbox
from protocols.pg.hosts import Hosts

pytestmark = [
    pytest.mark.slow,
    NEEDS_CHROMIUM,
]
REQUESTS = "Array.from(document.querySelectorAll('.request .head')).map(h => h.textContent)"


def test_approving_teammates_on_two_hosts_from_a_third(
    tmp_path: Path, conninfo: str, db: Database, procs: Processes, browser: Chromium
) -> None:
    url = url_of(conninfo)
    a, b, c = (machine(tmp_path, name, url) for name in ("a", "b", "c"))
    a.swarm("team", "create", "t")
    host = serve(b, "b")
    try:
        wait_for(lambda: Hosts(db, "t").alive().get("b"), "host b to register")
        builds = {name: tmp_path / f"build-{name}" for name in ("alice", "bob")}
        for name, build in builds.items():
            build.mkdir()
            command = f"rm -rf {shlex.quote(str(build))}"
            a.swarm("task", "add", f"clean for {name}", "--command", command, "--for", name)
        spawn = ("--backend", "subprocess", "--model", "shell", "--prompt", "work the board")
        a.swarm("spawn", "alice", *spawn)
        a.swarm("spawn", "bob", "--host", "b", *spawn)
        # machine c holds no team files and no lead key: it sees both, and says it cannot answer
        seen = WebServer(procs, "--store", url, env=c.env)
        shown = wait_for(lambda: len(seen.state()["requests"]) == 2 and seen.state(), "both")
        for request in shown["requests"]:
            assert "this machine holds no lead key for team 't'" in request["cannot_answer"]
            refused = seen.post(request["id"], "approve")
            assert refused.status_code == 403 and "answer from that machine" in refused.text
            cli = c.swarm("approve", request["id"], check=False)  # as `swarm approve` there
            assert cli.returncode == 1 and "answer from that machine" in cli.stderr, cli.stderr
            assert "Traceback" not in cli.stderr
        for name in builds:  # nothing written for either teammate
            assert not [e for e in PgMailbox(db, "t").peek_all(name) if "response" in e.text]
        assert not list(c.root.glob("teams/*")), "the viewer's machine holds no team files"
        # the lead's machine a answers from the page
        web = WebServer(procs, "--store", url, env=a.env)
        browser.open(web.url)

        def asking() -> list[str]:
            return sorted(browser.js(REQUESTS) or [])

        heads = wait_for(lambda: len(asking()) == 2 and asking(), "both requests on the page")
        assert [h.split(" asks: ")[0] for h in heads] == ["alice", "bob"]
        browser.js("document.querySelector('.request button.approve').click()")
        wait_for(lambda: len(asking()) == 1, "the answered request to leave the page")
        browser.js("document.querySelector('.request button.approve').click()")
        wait_for(lambda: not asking(), "both requests answered")
        wait_for(lambda: not any(p.exists() for p in builds.values()), "both to go on")
    finally:
        a.swarm("team", "delete", "t", "--force", check=False)
        stop(host)
