"""One error root: every error a package raises on purpose derives from `protocols.errors.Error`,
and the `swarm` command's one funnel prints any of them as one line, without a traceback."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

from click.testing import CliRunner

import protocols
import swarm
import teammate
from protocols.errors import Error
from swarm.cli.main import main


def test_every_error_class_of_the_three_packages_derives_from_the_root() -> None:
    strays = []
    for package in (protocols, swarm, teammate):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):  # runs its command when imported
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                own = inspect.isclass(value) and value.__module__ == module.__name__
                if own and issubclass(value, Exception) and not issubclass(value, Error):
                    strays.append(f"{module.__name__}.{name}")
    # not errors anyone reports: the markers of a task file being read and of a value the fast
    # JSON writer leaves to json.dumps, and the signals that an approved shutdown ends the work
    # and that TaskStop ends a sub-agent (an `Error` would become a tool's error result)
    assert strays == [
        "protocols.fs.jsonio._NotPlain",
        "protocols.tasks.files._Invalid",
        "protocols.tasks.files._Torn",
        "teammate.agent.model_turns.LoopCancelled",
        "teammate.link.Interrupted",
    ]


def test_a_teammate_package_error_reaches_the_funnel_as_one_line(
    tmp_path: Path, capsys: object
) -> None:
    """`swarm worktree list` outside a git repository: the teammate kit's WorktreeError, no
    longer converted by hand, is printed by the funnel with exit code 1."""
    result = CliRunner().invoke(
        swarm.cli.main.cli, ["worktree", "list", "--repo", str(tmp_path)], standalone_mode=False
    )
    assert isinstance(result.exception, Error)
    code = main(["worktree", "list", "--repo", str(tmp_path)])
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert code == 1 and err.startswith("swarm: error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
