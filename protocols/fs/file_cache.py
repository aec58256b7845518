"""Re-read a file only if it changed: the one cache of parsed files (the team file, task files).

A file's `Signature` is its (inode, size, mtime in ns). Every swarm write replaces a file by
renaming a new one into place, so a write changes the inode; Claude Code's in-place writes change
the size or the time. File times are coarse (a few ms) and inodes are reused, so a cached value
can be stale for a moment: callers use it for reads, never for a compare-and-set.
"""

from __future__ import annotations

import os
from typing import Generic, TypeVar

Signature = tuple[int, int, int]
K = TypeVar("K")
V = TypeVar("V")


def signature_of(st: os.stat_result) -> Signature:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class FileCache(Generic[K, V]):
    """Values parsed from files, each kept with the signature of the file it came from."""

    def __init__(self) -> None:
        self._entries: dict[K, tuple[Signature, V]] = {}

    def get(self, key: K, signature: Signature | None) -> tuple[bool, V | None]:
        """(True, value) when `key` was stored from a file with this signature, else (False,
        None)."""
        entry = self._entries.get(key)
        if entry is None or signature is None or entry[0] != signature:
            return False, None
        return True, entry[1]

    def signature(self, key: K) -> Signature | None:
        """The signature `key`'s value was stored with (None: nothing stored)."""
        entry = self._entries.get(key)
        return entry[0] if entry is not None else None

    def put(self, key: K, signature: Signature, value: V) -> V:
        self._entries[key] = (signature, value)
        return value

    def drop(self, key: K) -> None:
        self._entries.pop(key, None)
