"""The ``sandbox`` settings (`teammate.sandbox.config`): read from a settings file with every
wrong value named, merged across files, and what `Sandbox` makes of them (excluded commands,
the bwrap command line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teammate.config.settings import SettingsError, layered_settings, load_settings
from teammate.sandbox import ENGINE_VAR, landlock, sandbox_for
from teammate.sandbox.bwrap import Sandbox
from teammate.sandbox.config import SandboxConfig, merge_sandbox, parse_sandbox
from teammate.sandbox.landlock import LandlockSandbox


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("yes", "sandbox must be an object, not str"),
        ({"enabled": "true"}, "sandbox.enabled must be true or false, not 'true'"),
        ({"excludedCommands": "docker"}, "sandbox.excludedCommands must be a list"),
        ({"filesystem": []}, "sandbox.filesystem must be an object, not list"),
        ({"filesystem": {"allowWrite": [""]}}, "sandbox.filesystem.allowWrite must be a list"),
        ({"network": {"allowedDomains": [1]}}, "sandbox.network.allowedDomains must be a list"),
        # would never match a host name, so would silently allow nothing
        (
            {"network": {"allowedDomains": ["pypi.org", "https://github.com/x"]}},
            "allowedDomains: 'https://github.com/x' is not a domain; write example.com",
        ),
        ({"network": {"allowedDomains": ["example.com:443"]}}, "'example.com:443' is not a"),
        ({"network": {"allowedDomains": ["a..b"]}}, "'a..b' is not a domain"),
    ],
)
def test_a_wrong_value_is_named(tmp_path: Path, value: object, named: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"sandbox": value}))
    with pytest.raises(SettingsError) as raised:
        load_settings(path)
    assert str(path) in str(raised.value) and named in str(raised.value)


def test_domains_the_proxy_can_match_are_taken() -> None:
    domains = ["*", "pypi.org", "*.github.com", "files.pythonhosted.org.", "127.0.0.1", "[::1]"]
    parsed = parse_sandbox({"network": {"allowedDomains": domains}}, "settings.json")
    assert parsed.allowed_domains == tuple(domains)


def test_files_merge_flags_win_and_lists_add_up(tmp_path: Path, config_root: Path) -> None:
    (config_root / "settings.json").write_text(
        json.dumps({"sandbox": {"enabled": True, "excludedCommands": ["docker *"]}})
    )
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    local = {"sandbox": {"excludedCommands": ["make"], "network": {"allowedDomains": ["*"]}}}
    (project / ".claude" / "settings.local.json").write_text(json.dumps(local))
    sandbox = layered_settings(project, config_root).sandbox
    assert sandbox.enabled is True  # said by the user's file, not undone by a later silence
    assert sandbox.excluded_commands == ("docker *", "make")
    assert sandbox.network
    off = merge_sandbox(sandbox, parse_sandbox({"enabled": False}, "flag"))
    assert off.enabled is False


def test_excluded_commands_and_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    config = SandboxConfig(
        enabled=True,
        excluded_commands=("docker *", "make"),
        allow_write=("cache", "missing"),
        deny_read=(str(tmp_path / "cache"),),
    )
    sandbox = Sandbox(config, tmp_path, tmp=tmp_path / "tmp")
    assert (
        sandbox.excluded("docker run x")
        and sandbox.excluded("make")
        and sandbox.excluded("make test")
    )
    assert not sandbox.excluded("makefile-lint") and not sandbox.excluded("rm -rf /")
    argv = sandbox.wrap(["bash", "-c", "true"])
    assert argv[-4:] == ["--", "bash", "-c", "true"]
    assert ["--bind", str(tmp_path), str(tmp_path)] == argv[argv.index("--bind") :][:3]
    assert str(tmp_path / "cache") in argv and str(tmp_path / "missing") not in argv
    assert "--unshare-net" in argv and ["--setenv", "TMPDIR", str(tmp_path / "tmp")] == argv[8:11]


@pytest.mark.skipif(landlock.available() is None, reason="this kernel has no Landlock")
def test_landlock_stands_in_for_bubblewrap_and_says_what_it_cannot_do(tmp_path: Path) -> None:
    said: list[str] = []
    config = SandboxConfig(enabled=True, allowed_domains=("github.com",))
    made = sandbox_for(config, tmp_path, (), said.append, environ={ENGINE_VAR: "landlock"})
    assert isinstance(made, LandlockSandbox) and made.proxy is None
    (line,) = said
    assert line.startswith("SWARM_SANDBOX_ENGINE=landlock: commands run under Landlock instead")
    assert "the allowed domains (github.com): the network is off" in line
    wrapped = made.wrap(["/bin/sh", "-c", "true"])
    assert wrapped[-3:] == ["/bin/sh", "-c", "true"]
    assert made.why("touch: cannot touch '/x': Permission denied") is not None
    assert made.why("all fine") is None
