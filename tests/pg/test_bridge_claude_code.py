"""A Claude Code 2.1.330 teammate on a bridged host: the team lives in PostgreSQL, the teammate
(the real program from npm, offline, its model scripted by the local Messages API server) speaks
only files, and `swarm bridge` carries between them. What the team sends it on PostgreSQL
reaches its model; what it answers arrives on PostgreSQL, once; its read marks come back."""

from __future__ import annotations

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


def test_a_claude_code_teammate_on_a_bridged_host_hears_the_store_and_answers(
    conninfo: str, db: Database, tmp_path: Path, config_root: Path, tmux_socket: str
) -> None:
    claude, work, _url = bridged_claude_code(tmp_path, config_root, conninfo)
    env = {k: v for k, v in os.environ.items() if k != "SWARM_STORE"}
    env["SWARM_TEAM"] = "t"
    procs = Processes(work)
    seen: list[str] = []
    rules: list[Rule] = [
        (
            "Say hello",
            lambda _: Turn.tool(
                "SendMessage",
                {"to": "team-lead", "message": "hello across machines", "summary": "hello"},
            ),
        ),
        (
            "Repeat after me:",
            lambda text: Turn.tool(
                "SendMessage",
                {"to": "team-lead", "message": text.split("Repeat after me:", 1)[1].strip()},
            ),
        ),
    ]
    store = PgMailbox(db, "t")

    def lead_got(text: str) -> list[str]:
        return [e.text for e in store.peek_all("team-lead") if e.text == text]

    try:
        argv = [sys.executable, "-m", "swarm", "bridge", "--member", "alice", "--rescan", "1"]
        procs.start(argv, env=env)
        with MessagesAPI(by_agent({"alice": reacting(rules, seen)})) as api:
            spawned = swarm(
                "spawn",
                "alice",
                "-p",
                "Say hello to the lead.",
                "--model",
                MODEL,
                "--teammate-command",
                claude_code.command(claude),
                "--backend",
                "tmux",
                "--permission-mode",
                "acceptEdits",
                "--cwd",
                str(work),
                cwd=work,
                env={
                    "ANTHROPIC_BASE_URL": api.url_for("alice"),
                    "ANTHROPIC_API_KEY": claude_code.API_KEY,
                },
            )
            ok(spawned)
            wait_for(
                lambda: lead_got("hello across machines"), "alice's hello on the store", START_S
            )
            tricky = 'Repeat after me: it\'s "quoted" $(whoami) ünïcode ✓'
            ok(swarm("send", "alice", tricky, cwd=work))
            echo = 'it\'s "quoted" $(whoami) ünïcode ✓'
            wait_for(lambda: lead_got(echo), "alice's echo on the store", START_S)
            wait_for(lambda: not store.read_unread("alice"), "alice's reads on the store", START_S)
    finally:
        procs.close()
    assert seen[:2] == ["Say hello to the lead.", tricky]
    assert len(lead_got("hello across machines")) == len(lead_got(echo)) == 1
    hello = next(e for e in store.peek_all("team-lead") if e.text == "hello across machines")
    assert (hello.from_, hello.msg_id is not None) == ("alice", True)  # Claude Code's own id
    assert [e.text for e in store.peek_all("alice")] == ["Say hello to the lead.", tricky]
