"""`protocols.fs.safefs`: reading open files without a file object, and a file's own status
without following links, on real files."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from helpers import finishes

from protocols.fs import safefs


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


@pytest.mark.parametrize(
    "flags",
    [os.O_RDONLY, os.O_WRONLY, os.O_RDWR, os.O_RDWR | os.O_APPEND, os.O_WRONLY | os.O_CREAT],
    ids=["read", "write", "read-write", "append", "create"],
)
def test_a_fifo_or_a_socket_is_refused_by_every_open_instead_of_hanging_it(
    tmp_path: Path, flags: int
) -> None:
    """Opening a FIFO for reading (or writing) waits for the other end: one planted as an
    inbox or config.json hung every reader. It is refused, by a name that says what it is."""
    fifo = tmp_path / "inbox.json"
    os.mkfifo(fifo)
    refused = finishes(lambda: safefs.open_path(fifo, flags))
    assert isinstance(refused, safefs.NotRegularFile), refused
    assert isinstance(refused, OSError)  # callers that handle an unreadable file handle it
    assert f"{fifo} is a FIFO, not a regular file" in str(refused)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock.json"))
        refused = finishes(lambda: safefs.open_path(tmp_path / "sock.json", flags))
        assert isinstance(refused, safefs.NotRegularFile), refused
        assert "is a socket, not a regular file" in str(refused)


def test_a_caller_passing_o_nonblock_gets_the_fifo_to_check_itself(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    fd = finishes(lambda: safefs.open_path(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK))
    assert isinstance(fd, int)
    try:
        assert stat.S_ISFIFO(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    (tmp_path / "file").write_text("x")
    assert safefs.read_text(tmp_path / "file") == "x"  # a regular file reads as before
    directory = safefs.open_dir(tmp_path)
    assert stat.S_ISDIR(os.fstat(directory).st_mode)
    os.close(directory)
