"""`swarm worktree`: the git worktrees teammates work in: list them, see a diff, merge, remove.

NAME is the worktree's name (its slug; by default the teammate's name). Run these in the
repository (or pass --repo).
"""

from __future__ import annotations

from pathlib import Path

import click

from protocols.printable import printable
from swarm.cli.common import emit, json_option
from swarm.errors import SwarmError
from teammate.agent.worktree import (
    Worktree,
    diff,
    flatten_slug,
    list_worktrees,
    merge,
    remove,
    status,
)

repo_option = click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="a directory inside the repository",
)


@click.group()
def worktree() -> None:
    """Teammates' git worktrees (.claude/worktrees/<name>, branch worktree-<name>).

    \b
    swarm spawn alice --worktree -p "..."   # alice works in .claude/worktrees/alice
    swarm worktree list                     # what is there, and what changed
    swarm worktree diff alice               # the commits and changes
    swarm worktree merge alice              # into the current branch
    swarm worktree remove alice [--force]
    """


def _find(repo: Path, name: str) -> Worktree:
    slug = flatten_slug(name)
    found = [w for w in list_worktrees(repo) if w.slug == slug]
    if not found:
        raise SwarmError(f"no worktree named {name!r}; `swarm worktree list` shows them")
    return found[0]


@worktree.command("list")
@repo_option
@json_option
def list_command(repo: Path, as_json: bool) -> None:
    """The repository's teammate worktrees and what changed in each."""
    rows = []
    for tree in list_worktrees(repo):
        state = status(tree)
        rows.append({**tree.to_value(), "changed": state.changed, "summary": state.summary})
    emit(
        rows,
        as_json,
        lambda rs: (
            "\n".join(f"{r['slug']:<20} {r['branch']:<28} {r['summary']}" for r in rs)
            or "no worktrees"
        ),
    )


@worktree.command("diff")
@click.argument("name")
@repo_option
@json_option
def diff_command(name: str, repo: Path, as_json: bool) -> None:
    """The commits and changes in worktree NAME since it was made."""
    tree = _find(repo, name)
    text = diff(tree)
    if as_json:
        emit({**tree.to_value(), "diff": text}, True, str)
        return
    click.echo(printable(text), nl=False)  # teammates wrote the files


@worktree.command("merge")
@click.argument("name")
@repo_option
@json_option
def merge_command(name: str, repo: Path, as_json: bool) -> None:
    """Merge worktree NAME's branch into the current branch (stops cleanly on a conflict)."""
    tree = _find(repo, name)
    said = merge(tree, repo)
    emit({**tree.to_value(), "merged": True, "output": said}, as_json, lambda _: said)


@worktree.command("remove")
@click.argument("name")
@click.option("--force", is_flag=True, help="also when it has uncommitted changes (lost)")
@repo_option
@json_option
def remove_command(name: str, force: bool, repo: Path, as_json: bool) -> None:
    """Remove worktree NAME and its branch (refuses uncommitted changes unless --force)."""
    tree = _find(repo, name)
    remove(tree, force=force)
    emit(
        {**tree.to_value(), "removed": True},
        as_json,
        lambda _: f"removed {tree.path} and branch {tree.branch}",
    )
