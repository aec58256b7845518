"""Generate docs/cli-reference.md from the commands' own ``--help`` text.

    .venv/bin/python docs/cli_reference.py > docs/cli-reference.md

It walks the click group `swarm.cli.main:cli` recursively (one section per command and subcommand,
in the order ``swarm --help`` lists them) and adds ``swarm-teammate``'s argparse help. The width
is fixed, so the output does not depend on the terminal that runs it;
`tests/unit/test_cli_reference.py` checks that the committed file is what this script prints.
"""

from __future__ import annotations

import argparse
import functools
import sys

import click

from swarm.cli.main import cli
from teammate.options import build_parser

WIDTH = 100

HEADER = """# `swarm` command reference

Generated from the commands' own `--help` by `docs/cli_reference.py`; do not edit by hand.
After changing a command, regenerate it:

```text
.venv/bin/python docs/cli_reference.py > docs/cli-reference.md
```

[cli.md](cli.md) is the guided tour. `swarm COMMAND --help` prints the same text.
"""


def _contexts(
    command: click.Command, name: str, parent: click.Context | None = None
) -> list[click.Context]:
    """A context for `command` and, for a group, for each of its subcommands, depth first."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=name, parent=parent, **settings)
    found = [ctx]
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                found += _contexts(sub, sub_name, ctx)
    return found


def _section(title: str, help_text: str) -> str:
    lines = [line.rstrip() for line in help_text.strip("\n").splitlines()]
    return f"## {title}\n\n```text\n" + "\n".join(lines) + "\n```\n"


def _teammate_help() -> str:
    parser = build_parser()
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    return parser.format_help()


def render() -> str:
    """The whole reference, as docs/cli-reference.md holds it."""
    sections = [HEADER]
    for ctx in _contexts(cli, "swarm"):
        sections.append(_section(ctx.command_path, ctx.command.get_help(ctx)))
    sections.append(_section("swarm-teammate", _teammate_help()))
    return "\n".join(sections)


if __name__ == "__main__":
    sys.stdout.write(render())
