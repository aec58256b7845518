"""The team lead's private signing key on disk: ``<config root>/swarm/keys/<team>/lead.key``.

Claude Code keeps its lead keys in memory; swarm's lead is many processes (``swarm lead``, the
one-shot commands, the lead agent), so the key is a file only the user can read:

- the directory ``swarm/keys/<team>`` is made with mode 0700 and the key with 0600, from the
  first byte: it is written to a temporary file created 0600 (``O_EXCL``, no link followed),
  synced, then hard-linked to ``lead.key``, which fails if another process got there first
  (then that one's key is used): a reader never sees a half-written or readable-by-others key;
- a key that is a symbolic link, not a regular file, not the user's own, or readable or
  writable by anyone else (mode wider than 0600), or a key directory open to others, is refused
  with `KeyFileRefused`, which says what to do; it is never used and never replaced silently.

The format is PEM (PKCS#8, unencrypted) of an Ed25519 private key. `KeyFileSigner` signs a
mailbox's lead entries with the key of one file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.team.signing import LEAD_NAMES, LeadSigner

KEY_FILE_MODE = 0o600
KEY_DIR_MODE = 0o700
_MAX_KEY_BYTES = 4096


class KeyFileRefused(ProtocolsError):
    """The lead key file (or its directory) is not safe to use; the message says why and how to
    fix it."""


class KeyFileSigner:
    """The `protocols.inbox.mailbox.EntrySigner` of a lead whose key is the file at `path`: read the
    first time an entry from a lead name is sent, then kept. It never makes the key: that is
    done when swarm starts a teammate that will verify with it. In a team whose teammates
    swarm did not start (a Claude Code lead's, with its own keys in memory) there is no key,
    and swarm's lead entries go out unsigned, as any other writer's would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._signer: LeadSigner | None = None
        self._lock = threading.Lock()

    def signer(self) -> LeadSigner | None:
        with self._lock:
            if self._signer is None:
                self._signer = load(self.path)  # None until a spawn makes it: asked again
            return self._signer

    def signed(self, entry: dict[str, Any]) -> dict[str, Any]:
        if entry.get("from") not in LEAD_NAMES:
            return entry
        signer = self.signer()
        return entry if signer is None else signer.signed(entry)


def load(path: Path) -> LeadSigner | None:
    """The lead key at `path`, or None when there is none. Raises `KeyFileRefused`."""
    try:
        # O_NONBLOCK: a FIFO planted there must not hang the open (a file is checked below)
        fd = safefs.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except safefs.LinkRefused as exc:
        raise KeyFileRefused(
            f"the lead key {path} is a symbolic link, or lies under one ({exc.link}); a lead "
            "key must be a plain file only you can read: remove the link (swarm then makes a "
            "new key; teammates started with the old one need a restart)"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        _check_file(path, os.fstat(handle.fileno()))
        data = handle.read(_MAX_KEY_BYTES + 1)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileRefused(f"the lead key {path} is not a PEM private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileRefused(f"the lead key {path} is not an Ed25519 key")
    return LeadSigner(key)


def load_or_create(path: Path) -> LeadSigner:
    """The lead key at `path`, made first if there is none (module doc). Raises
    `KeyFileRefused`."""
    existing = load(path)
    if existing is not None:
        return existing
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    _make_directory(path.parent)
    made = LeadSigner.generate()
    pem = made.private_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    with safefs.parent_of(path) as (dir_fd, name):
        temp = f".{name}.{os.urandom(8).hex()}.tmp"  # secrets.token_hex, without OpenSSL
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, KEY_FILE_MODE, dir_fd=dir_fd)
        try:
            try:
                os.fchmod(fd, KEY_FILE_MODE)  # the umask only takes bits away; be exact
                os.write(fd, pem)
                os.fsync(fd)
            finally:
                os.close(fd)
            # another process may have made it first: then its key is the key
            with contextlib.suppress(FileExistsError):
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            os.fsync(dir_fd)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    loaded = load(path)
    if loaded is None:
        raise KeyFileRefused(f"the lead key {path} vanished as it was made")
    return loaded


def _make_directory(directory: Path) -> None:
    """``mkdir -p`` with mode 0700 for what is made, refusing links; the key's own directory
    must be the user's and closed to others."""
    missing = []
    current = directory
    while not safefs.exists(current):
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with safefs.parent_of(path) as (fd, name), contextlib.suppress(FileExistsError):
            os.mkdir(name, KEY_DIR_MODE, dir_fd=fd)
    st = safefs.stat_of(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise KeyFileRefused(f"{directory}, where the lead key goes, is not a directory")
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise KeyFileRefused(
            f"the lead key directory {directory} has mode {stat.S_IMODE(st.st_mode):04o} and "
            f"owner uid {st.st_uid}: it must be yours and closed to others "
            f"(chmod 700 {directory})"
        )


def _check_file(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileRefused(f"the lead key {path} is not a regular file")
    if st.st_uid != os.geteuid():
        raise KeyFileRefused(
            f"the lead key {path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}): "
            "remove it, and swarm makes a new one"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise KeyFileRefused(
            f"the lead key {path} has mode {mode:04o}: others may read or change it, so it "
            f"cannot prove that a message comes from the lead. Make it private (chmod 600 "
            f"{path}) if nobody else could have read it, or remove it to get a new key (then "
            "restart the teammates)"
        )
    if st.st_size > _MAX_KEY_BYTES:
        raise KeyFileRefused(f"the lead key {path} is {st.st_size} bytes: not a key")
