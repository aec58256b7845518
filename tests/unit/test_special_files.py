"""A FIFO, a socket or a directory where a teammate reads a file the user arranged (CLAUDE.md,
a skill, settings, prices) or where a tool reads (Read, Grep): refused or skipped
with a message that says what it is, never waited on. Reading a FIFO blocks until something
writes into it: before, one in the project hung the teammate that read it."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from helpers import finishes

from protocols.fs import safefs
from protocols.member.prices import PriceFileError, load_prices, prices_path
from teammate.agent.context import memory_text, read_with_imports
from teammate.config.settings import SettingsError, load_settings
from teammate.config.skills import load_skill
from teammate.tools.base import ToolContext, ToolError
from teammate.tools.files import read
from teammate.tools.search import grep


def test_read_regular_reads_files_and_links_to_them_and_refuses_the_rest(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("hello")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")  # a dotfiles checkout, say
    assert safefs.read_regular(tmp_path / "link.md") == b"hello"
    os.mkfifo(tmp_path / "fifo.md")
    (tmp_path / "to-fifo.md").symlink_to(tmp_path / "fifo.md")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock.md"))
        for name, kind in [
            ("fifo.md", "FIFO"),
            ("to-fifo.md", "FIFO"),
            ("sock.md", "socket"),
            (".", "directory"),
        ]:
            refused = finishes(lambda name=name: safefs.read_regular(tmp_path / name))
            assert isinstance(refused, safefs.NotRegularFile), (name, refused)
            assert str(refused) == f"{tmp_path / name} is a {kind}, not a regular file"
    with pytest.raises(FileNotFoundError):
        safefs.read_regular(tmp_path / "missing.md")


def test_the_read_tool_refuses_a_fifo_and_grep_passes_it_by(ctx: ToolContext) -> None:
    (ctx.cwd / "notes.txt").write_text("needle here\n")
    os.mkfifo(ctx.cwd / "pipe.txt")
    refused = finishes(lambda: read.run(ctx, {"file_path": str(ctx.cwd / "pipe.txt")}))
    assert isinstance(refused, ToolError)
    assert str(refused) == f"Cannot read {ctx.cwd / 'pipe.txt'}: " + (
        f"{ctx.cwd / 'pipe.txt'} is a FIFO, not a regular file"
    )
    found = finishes(lambda: grep.run(ctx, {"pattern": "needle", "output_mode": "content"}))
    assert isinstance(found, str) and "notes.txt:1:needle here" in found, found


def test_context_files_and_skills_that_are_fifos_are_reported_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "CLAUDE.md")
    text = finishes(lambda: read_with_imports(tmp_path / "CLAUDE.md"))
    assert (
        text
        == f"[{tmp_path / 'CLAUDE.md'} could not be read: {tmp_path / 'CLAUDE.md'} is a FIFO, not a regular file]"
    )
    memory = tmp_path / "memory"
    memory.mkdir()
    os.mkfifo(memory / "MEMORY.md")
    assert isinstance(finishes(lambda: memory_text(memory)), str)
    skill = tmp_path / "skills" / "s" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    os.mkfifo(skill)
    assert finishes(lambda: load_skill(skill)) is None


def test_settings_and_price_files_that_are_fifos_fail_with_their_name(
    tmp_path: Path,
) -> None:
    os.mkfifo(tmp_path / "settings.json")
    refused = finishes(lambda: load_settings(tmp_path / "settings.json"))
    assert isinstance(refused, SettingsError)
    assert "is a FIFO, not a regular file" in str(refused)
    prices = prices_path(tmp_path)
    prices.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(prices)
    refused = finishes(lambda: load_prices(tmp_path))
    assert isinstance(refused, PriceFileError) and "is a FIFO" in str(refused)
    prices.unlink()
    prices.write_text(json.dumps({}))
    assert not isinstance(finishes(lambda: load_prices(tmp_path)), BaseException)
