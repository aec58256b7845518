"""docs/cli-reference.md is what docs/cli_reference.py generates from the commands' --help now:
a changed command or option fails here until the reference is regenerated."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from swarm.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs" / "cli_reference.py"
REFERENCE = REPO / "docs" / "cli-reference.md"


def test_cli_reference_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == REFERENCE.read_text(encoding="utf-8"), (
        "docs/cli-reference.md is out of date with the commands' --help; regenerate it with "
        "`.venv/bin/python docs/cli_reference.py > docs/cli-reference.md`"
    )


def test_cli_reference_has_a_section_per_command() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    headings = {line[3:] for line in text.splitlines() if line.startswith("## ")}
    expected = {"swarm", "swarm-teammate"}
    context = click.Context(cli)
    for name in cli.list_commands(context):  # the group loads its commands when asked
        command = cli.get_command(context, name)
        expected.add(f"swarm {name}")
        if isinstance(command, click.Group):
            expected |= {f"swarm {name} {sub}" for sub in command.commands}
    assert headings == expected
