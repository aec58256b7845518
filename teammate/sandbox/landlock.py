"""The sandbox where bubblewrap cannot run: Linux's Landlock, which a process applies to itself
and everything it starts (``landlock_create_ruleset``, ``landlock_add_rule``,
``landlock_restrict_self``; no privileges, no namespaces).

`LandlockSandbox.wrap` runs a command behind a small launcher (`LAUNCH`, Python without
``site``, ~20 ms) that restricts itself, then becomes the command:

- writes only in the sandbox's writable places (the working directory, its TMPDIR,
  ``allowWrite``) and the harmless devices (``/dev/null``, ``/dev/tty``...);
- reads everywhere but the hidden paths (the lead's keys, ``denyRead``): Landlock only allows,
  so the launcher allows every directory and file beside each hidden path's ancestors, and the
  hidden path itself is left out;
- no TCP connection (ABI 4 and later) unless ``allowedDomains`` holds ``"*"``; a list of
  domains is not reached through the proxy here (bubblewrap's network namespace is what keeps a
  command to the proxy): under Landlock the network is then off.

What bubblewrap adds and Landlock does not: a pid namespace, a session of its own, UDP and
Unix sockets cut off. `available` says which Landlock ABI this kernel has (None: none).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from teammate.sandbox.bwrap import Sandbox

DENIED = "Permission denied"  # EACCES: what Landlock answers
CREATE_RULESET = 444  # the syscall numbers (x86_64 and aarch64 share them)
RULESET_VERSION = 1  # landlock_create_ruleset's flag: the ABI version
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random",
           "/dev/urandom", "/dev/pts", "/dev/shm")  # fmt: skip

# the launcher: python3 -S -c LAUNCH SPEC COMMAND...; SPEC is JSON: {"abi", "hidden": [path],
# "write": [path], "devices": [path], "net_off", "tmp"}
LAUNCH = r"""
import ctypes, json, os, sys
spec = json.loads(sys.argv[1])
argv = sys.argv[2:]
abi = spec["abi"]
libc = ctypes.CDLL(None, use_errno=True)
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
TRUNCATE = 1 << 14 if abi >= 3 else 0
fs = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | TRUNCATE
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
READ = EXECUTE | READ_FILE | READ_DIR
net = 2 if spec["net_off"] and abi >= 4 else 0  # CONNECT_TCP, with no port allowed
class Attr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64)]
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]
attr = Attr(fs, net)
ruleset = libc.syscall(444, ctypes.byref(attr), 16 if abi >= 4 else 8, 0)
if ruleset < 0:
    sys.exit("swarm sandbox: landlock_create_ruleset failed: " + os.strerror(ctypes.get_errno()))
def allow(path, rights):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    if not os.path.isdir(path):
        rights &= FILE_RIGHTS
    libc.syscall(445, ruleset, 1, ctypes.byref(Beneath(rights, fd)), 0)
    os.close(fd)
hidden = spec["hidden"]
def cover(directory):
    inside = [h for h in hidden if h == directory or h.startswith(directory.rstrip("/") + "/")]
    if not inside:
        allow(directory, READ)
        return
    if directory in hidden:
        return
    allow(directory, READ_DIR)  # its entries' names, not what is beneath
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:  # a link needs no rule: what it points at is judged by its own
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            cover(entry.path)
        elif entry.path not in hidden:
            allow(entry.path, READ)
cover("/")
for path in spec["write"]:
    allow(path, fs)
for path in spec["devices"]:
    allow(path, READ_FILE | WRITE_FILE | TRUNCATE)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, ruleset, 0) != 0:
    sys.exit("swarm sandbox: landlock_restrict_self failed: " + os.strerror(ctypes.get_errno()))
os.close(ruleset)
if spec["tmp"]:
    os.environ["TMPDIR"] = spec["tmp"]
os.execvp(argv[0], argv)
"""


@functools.cache
def available() -> int | None:
    """This kernel's Landlock ABI version (None: it has none, or it is turned off)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(CREATE_RULESET, None, 0, RULESET_VERSION)
    except (OSError, AttributeError):
        return None
    return int(version) if version > 0 else None


@dataclass(frozen=True)
class LandlockSandbox(Sandbox):
    """`Sandbox` with Landlock instead of bubblewrap (module doc)."""

    abi: int = 1

    def wrap(self, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        """`argv` behind the launcher (module doc); it runs where its caller starts it (`cwd`
        is bubblewrap's concern: a caller gives the process its directory)."""
        hidden = [p for p in self.hidden if p.exists()]
        hidden += [p for p in self._existing(self.config.deny_read) if p not in hidden]
        spec = {
            "abi": self.abi,
            "hidden": [str(p) for p in hidden],
            "write": [str(p) for p in self._writable()],
            "devices": [d for d in DEVICES if os.path.exists(d)],
            "net_off": not self.config.network,
            "tmp": str(self.tmp) if self.tmp is not None else "",
        }
        return [sys.executable, "-S", "-c", LAUNCH, json.dumps(spec), *argv]

    def why(self, output: str) -> str | None:
        """One line for the model when `output` shows the sandbox stopped the command: under
        Landlock a write outside and a TCP connection both fail with EACCES."""
        if DENIED not in output:
            return None
        writable = ", ".join(str(p) for p in self._writable())
        line = (
            f"[sandbox] commands may write only in {writable} (TMPDIR is the last) "
            "(sandbox.filesystem.allowWrite adds places; dangerouslyDisableSandbox asks to run "
            "one outside)"
        )
        if not self.config.network and self.abi >= 4:
            line += "; and the network is off for sandboxed commands"
        return line
