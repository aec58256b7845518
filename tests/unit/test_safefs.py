"""`protocols.safefs`: reading open files without a file object, and a file's own status
without following links, on real files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from protocols import safefs


def test_read_fd_reads_from_an_offset_to_the_end_whatever_the_size_hint(tmp_path: Path) -> None:
    path = tmp_path / "f"
    data = os.urandom(100_000)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert safefs.read_fd(fd) == data  # no hint: several reads
        assert safefs.read_fd(fd, len(data)) == data
        assert safefs.read_fd(fd, 10) == data  # a hint too small (the file grew since its stat)
        assert safefs.read_fd(fd, len(data), 99_990) == data[99_990:]
        assert safefs.read_fd(fd, len(data), len(data)) == b""
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0  # pread: the position is not moved
    finally:
        os.close(fd)
    (tmp_path / "empty").write_bytes(b"")
    assert safefs.read_bytes(tmp_path / "empty") == b""


def test_lstat_describes_a_link_at_the_end_and_refuses_one_on_the_way(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "file").write_text("x")
    (tmp_path / "link").symlink_to(real / "file")
    (tmp_path / "dirlink").symlink_to(real)
    assert stat.S_ISREG(safefs.lstat(real / "file").st_mode)
    assert safefs.lstat(real / "file").st_ino == os.lstat(real / "file").st_ino
    assert stat.S_ISLNK(safefs.lstat(tmp_path / "link").st_mode)
    with pytest.raises(safefs.LinkRefused):
        safefs.stat_of(tmp_path / "link")
    with pytest.raises(safefs.LinkRefused):
        safefs.lstat(tmp_path / "dirlink" / "file")
    with pytest.raises(FileNotFoundError):
        safefs.lstat(real / "missing")
    with pytest.raises(NotADirectoryError):
        safefs.lstat(real / "file" / "below")
    assert not safefs.exists(real / "missing") and safefs.exists(real / "file")
