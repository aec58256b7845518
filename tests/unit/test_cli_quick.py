"""``swarm status`` answered without click (`swarm.cli.quick`) is exactly the click command: the
same standard output, standard error and exit code for every form the quick path takes and for
the ones it must hand on (errors, help, options it does not know), on a busy team whose files
hold control characters; and the quick path takes only the plain forms."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dashboard_team import build

from swarm.cli.quick import status_form

ENV = {"SWARM_TEAM": "t"}
AGO = re.compile(r"\b\d+(?:\.\d+)?[smh] ago\b")


@pytest.mark.parametrize(
    ("args", "environ", "form"),
    [
        (["status"], ENV, ("t", False)),
        (["status", "--json"], ENV, ("t", True)),
        (["status", "--team", "x"], {}, ("x", False)),
        (["status", "-t", "x", "--json"], ENV, ("x", True)),
        (["status", "--json", "--team=x y"], {}, ("x y", True)),
        (["status"], {}, None),  # no team: click says so
        (["status"], {"SWARM_TEAM": ""}, None),
        (["status", "--team="], ENV, None),
        (["status", "--team"], ENV, None),
        (["status", "--team", "--json"], ENV, None),  # an option where the value goes
        (["status", "-tx"], ENV, None),
        (["status", "--json", "--json"], ENV, None),
        (["status", "-t", "a", "--team", "b"], ENV, None),
        (["status", "--help"], ENV, None),
        (["status", "--store", "postgresql://h/db"], ENV, None),
        (["status", "extra"], ENV, None),
        (["status", "--", "--json"], ENV, None),
        (["--debug", "status"], ENV, None),
        (["send", "alice", "hi"], ENV, None),
        ([], ENV, None),
        (["status"], {**ENV, "_SWARM_COMPLETE": "bash_complete"}, None),  # shell completion
    ],
)
def test_only_the_plain_forms_are_answered_quickly(
    args: list[str], environ: dict[str, str], form: tuple[str, bool] | None
) -> None:
    assert status_form(args, environ) == form


def run(entry: str, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`swarm ARGV` through `swarm.cli.<entry>.main`: (exit code, stdout, stderr), the ages left
    out (seconds since: two runs on a loaded machine may be seconds apart)."""
    program = f"import sys\nfrom swarm.cli.{entry} import main\nsys.exit(main({argv!r}))\n"
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    return done.returncode, _ageless_text(argv, done.returncode, done.stdout), done.stderr


def _ageless_text(argv: list[str], code: int, out: str) -> str:
    """`out` of ``swarm ARGV`` without its ages: in JSON every ``*age_s``, in the text every
    ``12s ago`` (`swarm.views.table.ago`)."""
    if code != 0:
        return out
    if "--json" in argv:
        return json.dumps(_ageless(json.loads(out)))
    return AGO.sub("? ago", out)


def _ageless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: None if k.endswith("age_s") else _ageless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ageless(v) for v in value]
    return value


FORMS = [
    ["status"],
    ["status", "--json"],
    ["status", "--team", "t"],
    ["status", "-t", "t", "--json"],
    ["status", "--team=t"],
    ["status", "--team", "nope"],  # no such team
    ["status", "--team", "../x"],  # not a name
    ["status", "--team", "t\x1b[2J"],
    ["status", "--team="],
    ["status", "--bogus"],
    ["status", "--help"],
]


@pytest.mark.parametrize("argv", FORMS, ids=lambda argv: " ".join(argv))
def test_the_quick_path_prints_what_the_click_command_prints(
    argv: list[str], config_root: Path
) -> None:
    build(config_root)
    env = {**os.environ, **ENV}
    clicked = run("main", argv, env)
    assert run("quick", argv, env) == clicked
    if argv[-1] not in ("--help",) and "nope" not in argv:
        assert clicked[1] or clicked[2]


def test_a_team_without_one_on_the_command_line_or_in_the_environment(config_root: Path) -> None:
    build(config_root)
    env = {k: v for k, v in os.environ.items() if k != "SWARM_TEAM"}
    quick = run("quick", ["status"], env)
    assert quick == run("main", ["status"], env)
    assert quick[0] == 2 and "no team given" in quick[2]


def test_a_look_that_fails_is_reported_by_the_click_command(config_root: Path) -> None:
    """A FIFO where config.json belongs: the quick look fails, and click's says why, once."""
    paths = build(config_root)
    paths.config.unlink()
    os.mkfifo(paths.config)
    env = {**os.environ, **ENV}
    quick = run("quick", ["status"], env)
    assert quick == run("main", ["status"], env)
    assert quick[0] == 1 and quick[1] == ""
    assert quick[2].count("swarm: error:") == 1 and "FIFO" in quick[2]


def test_the_program_prints_what_the_click_command_prints(config_root: Path) -> None:
    """As the program (``python -m swarm``, the ``swarm`` script) the quick path ends the
    process itself once its text is out: all of it is there, and the exit code is 0."""
    build(config_root)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as people run it
    env.update(ENV)
    argv = ["status", "--team", "t"]

    def program() -> tuple[int, str, str]:
        done = subprocess.run(
            [sys.executable, "-m", "swarm", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.returncode, _ageless_text(argv, done.returncode, done.stdout), done.stderr

    clicked = run("main", argv, env)
    assert program() == clicked
    assert clicked[0] == 0 and "team-lead" in clicked[1]


def test_ctrl_c_during_the_look_ends_as_the_click_command_does(
    config_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Interrupted (Ctrl-C: KeyboardInterrupt) in the middle of the look, either path says
    "interrupted" on stderr, prints nothing else, and exits 130 (as a shell does); no
    traceback."""
    import swarm.cli.main
    import swarm.cli.quick
    import swarm.cli.status
    import swarm.views.status_report

    def interrupted(*_: object) -> str:
        raise KeyboardInterrupt

    build(config_root)
    monkeypatch.setattr(swarm.views.status_report, "status_report", interrupted)
    monkeypatch.setattr(swarm.cli.status, "status_report", interrupted)
    argv = ["status", "--team", "t"]
    assert swarm.cli.quick.main(argv) == 130
    quick = capsys.readouterr()
    assert swarm.cli.main.main(argv) == 130
    clicked = capsys.readouterr()
    assert (quick.out, quick.err) == (clicked.out, clicked.err) == ("", "\ninterrupted\n")
