"""A Claude Code 2.1.330 teammate on a bridged host asks for permission, and a lead on another
machine answers it. Claude Code 2.1.330 (and 2.1.88 already) writes no ``permissions/pending/``
file: a teammate's ask is a ``permission_request`` entry in the lead's inbox, the answer a
``permission_response`` in the teammate's, so the bridge carries both as the messages they are.
Here the real program (offline, its model scripted) runs under one config root with the bridge;
the lead's `swarm permissions` and `swarm approve` run under another (their own ``HOME`` and
``CLAUDE_CONFIG_DIR``): the request arrives there once, the answer comes back, the tool runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import claude_code
import pytest
from claude_code import MODEL, Rule, reacting
from helpers import Processes, wait_for
from messages_api import MessagesAPI, Turn, by_agent
from pg_cli import bridged_claude_code, ok, swarm

from protocols.pg import Database, PgMailbox

pytestmark = [pytest.mark.slow, pytest.mark.interop]
START_S = 60.0  # Claude Code's first start in a fresh config root takes a few seconds


def test_a_bridged_claude_code_teammates_permission_request_is_answered_by_a_remote_lead(
    conninfo: str, db: Database, tmp_path: Path, config_root: Path, tmux_socket: str
) -> None:
    claude, work, store_url = bridged_claude_code(tmp_path, config_root, conninfo)
    made = work / "made-by-alice.txt"
    lead_root, lead_home = tmp_path / "lead-root", tmp_path / "lead-home"
    lead_root.mkdir()
    lead_home.mkdir()
    lead_env = {"CLAUDE_CONFIG_DIR": str(lead_root), "HOME": str(lead_home)}

    def lead(*args: str) -> str:
        return ok(swarm(*args, "--store", store_url, cwd=lead_home, env=lead_env))

    env = {k: v for k, v in os.environ.items() if k != "SWARM_STORE"}
    env["SWARM_TEAM"] = "t"
    procs = Processes(work)
    rules: list[Rule] = [
        (
            "Write the file",
            lambda _: [
                Turn.tool("Write", {"file_path": str(made), "content": "approved elsewhere\n"}),
                Turn.tool("SendMessage", {"to": "team-lead", "message": "file written"}),
            ],
        ),
    ]
    store = PgMailbox(db, "t")

    def asks() -> list[dict[str, object]]:
        found = json.loads(lead("permissions", "--json"))
        return [p for p in found if p.get("kind") == "permission_request"]

    try:
        argv = [sys.executable, "-m", "swarm", "bridge", "--member", "alice", "--rescan", "1"]
        procs.start(argv, env=env)
        with MessagesAPI(by_agent({"alice": reacting(rules)})) as api:
            ok(
                swarm(
                    "spawn", "alice", "-p", "Write the file, please.", "--model", MODEL,
                    "--teammate-command", claude_code.command(claude), "--backend", "tmux",
                    "--permission-mode", "default", "--cwd", str(work), cwd=work,
                    env={
                        "ANTHROPIC_BASE_URL": api.url_for("alice"),
                        "ANTHROPIC_API_KEY": claude_code.API_KEY,
                        # the lead answering lives elsewhere, with a key this host lacks
                        "SWARM_LEAD_SIGNATURES": "off",
                    },
                )
            )  # fmt: skip
            wait_for(asks, "alice's permission request at the lead's", START_S)
            [ask] = asks()
            assert not made.exists()
            lead("approve", str(ask["id"]))
            wait_for(made.exists, "the file alice was allowed to write", START_S)
            wait_for(
                lambda: any(e.text == "file written" for e in store.peek_all("team-lead")),
                "alice's word on the store",
                START_S,
            )
    finally:
        procs.close()
    assert made.read_text() == "approved elsewhere\n"
    requests = [e for e in store.peek_all("team-lead") if "permission_request" in e.text]
    assert len(requests) == 1  # carried once
    answers = [e for e in store.peek_all("alice") if "permission_response" in e.text]
    assert len(answers) == 1
    assert json.loads(answers[0].text)["request_id"] == ask["id"]
    assert not asks()  # answered: nothing waits any more
