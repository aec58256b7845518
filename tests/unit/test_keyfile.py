"""The lead's key file (protocols/team/keyfile.py): made private whatever the umask, one key when
many processes make it at once, and refused (never used, never replaced) when it is a link, not
the user's, or open to others."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from protocols.paths import TeamPaths
from protocols.team import keyfile
from protocols.team.keyfile import KeyFileRefused

MAKE = "from pathlib import Path; from protocols.team import keyfile; import sys; print(keyfile.load_or_create(Path(sys.argv[1])).verify_key(ms=0))"


def test_made_private_even_with_an_open_umask(paths: TeamPaths) -> None:
    key = paths.lead_key
    result = subprocess.run(
        [sys.executable, "-c", f"import os; os.umask(0); {MAKE}", str(key)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    for directory in (key.parent, key.parent.parent, key.parent.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert keyfile.load_or_create(key).verify_key(ms=0) == result.stdout.strip()
    assert [p.name for p in key.parent.iterdir()] == ["lead.key"]  # no temporary file left


def test_processes_making_it_at_once_share_one_key(paths: TeamPaths) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MAKE, str(paths.lead_key)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    keys = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    assert len(keys) == 1 and all(proc.returncode == 0 for proc in procs)


def test_unsafe_keys_are_refused_and_left_alone(paths: TeamPaths, tmp_path: Path) -> None:
    key = paths.lead_key
    keyfile.load_or_create(key)
    original = key.read_bytes()
    for mode in (0o640, 0o604, 0o660):
        key.chmod(mode)
        with pytest.raises(KeyFileRefused, match=f"has mode {mode:04o}"):
            keyfile.load_or_create(key)
        assert key.read_bytes() == original
    key.chmod(0o600)
    key.parent.chmod(0o755)
    with pytest.raises(KeyFileRefused, match="chmod 700"):
        keyfile.load_or_create(Path(str(key.parent)) / "other.key")
    key.parent.chmod(0o700)
    key.unlink()
    target = tmp_path / "target"
    target.write_bytes(original)
    target.chmod(0o600)
    key.symlink_to(target)
    with pytest.raises(KeyFileRefused, match="is a symbolic link"):
        keyfile.load_or_create(key)
    assert key.is_symlink() and target.read_bytes() == original
    key.unlink()
    os.mkfifo(key, 0o600)
    with pytest.raises(KeyFileRefused, match="not a regular file"):
        keyfile.load(key)
    key.unlink()
    key.write_text("not a key")
    key.chmod(0o600)
    with pytest.raises(KeyFileRefused, match="not a PEM private key"):
        keyfile.load(key)
