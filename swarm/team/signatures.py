"""swarm as a signing lead (Claude Code 2.1.323's lead signatures, docs/interop.md).

On by default: every teammate swarm starts, its own or a ``--teammate-command`` program that
says (``--version``) it is Claude Code 2.1.323 or newer, gets ``--lead-verify-key`` for the
team's key (`protocols.team.keyfile`, made on first use; an older Claude Code exits on a flag it
does not know, so it gets none), and every entry swarm writes from ``team-lead`` (or ``user``,
``system``) carries ``lead_sig``: so such a teammate obeys swarm and nobody else who writes
into its inbox under the lead's name. swarm's own view of what the lead answered
(`lead_wrote`) counts only signed answers too, so a forged answer does not close a request
that its teammate still waits on. ``SWARM_LEAD_SIGNATURES=off`` (or ``0``, ``false``, ``no``)
turns both off: then teammates start without a key and act on unsigned lead messages, as
before 2.1.323.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from protocols.paths import TeamPaths
from protocols.store.selection import open_store

if TYPE_CHECKING:
    from protocols.store.contract import MailboxContract
    from protocols.team.keyfile import KeyFileSigner


VARIABLE = "SWARM_LEAD_SIGNATURES"
LEAD_KEY_FIELD = "swarmLeadKey"  # in a member's roster entry: `key_id` of the key it checks
_OFF = {"0", "off", "false", "no"}
FIRST_SIGNING_VERSION = (2, 1, 323)  # Claude Code's first version with --lead-verify-key
VERSION_WAIT_S = 30.0


def signatures_on(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(VARIABLE, "on")
    return value.strip().lower() not in _OFF


def lead_signer(paths: TeamPaths) -> KeyFileSigner | None:
    """The signer of the team's lead entries; None when signatures are off."""
    from protocols.team import keyfile  # the key's module loads only where a key is used

    return keyfile.KeyFileSigner(paths.lead_key) if signatures_on() else None


def lead_mailbox(paths: TeamPaths) -> MailboxContract:
    """The team's mailbox as swarm's lead processes use it: lead entries signed."""
    return open_store(paths).mailbox(signer=lead_signer(paths))


def verify_key(paths: TeamPaths, environ: Mapping[str, str] | None = None) -> str | None:
    """``--lead-verify-key`` for a teammate starting now (the key made if there is none yet);
    None when signatures are off. Raises `protocols.team.keyfile.KeyFileRefused`."""
    if not signatures_on(environ):
        return None
    from protocols.team import keyfile

    return keyfile.load_or_create(paths.lead_key).verify_key()


def key_id(verify_key: str) -> str:
    """A short id of the public key in ``--lead-verify-key`` `verify_key` (its time part,
    which changes with every spawn, left out): what a member's roster entry records."""
    public = verify_key.split(".", 1)[-1]
    return hashlib.sha256(public.encode()).hexdigest()[:16]


def signing_problem(paths: TeamPaths, entry: Mapping[str, Any] | None) -> str | None:
    """Why the member of roster `entry` would ignore a lead answer written from this machine
    (None: it would take it). A member started with ``--lead-verify-key`` takes only answers
    signed with that key, which lives on the machine that started it; on a PostgreSQL team
    the person may be on another (a `swarm web` there, a `swarm approve` there)."""
    expected = (entry or {}).get(LEAD_KEY_FIELD)
    if not isinstance(expected, str) or not expected:
        return None  # started without a key: it takes unsigned answers
    name = str((entry or {}).get("name", "the teammate"))
    needs = (
        f"{name} takes only answers signed with the lead key of the machine that started it "
        f"(key {expected})"
    )
    if not signatures_on():
        return f"{needs}, and {VARIABLE} is off here: answer from that machine"
    from protocols.team import keyfile

    held = keyfile.load(paths.lead_key)
    if held is not None and key_id(held.verify_key()) == expected:
        return None
    here = "no lead key" if held is None else "another lead key"
    return (
        f"{needs}; this machine holds {here} for team {paths.team!r} at {paths.lead_key}: "
        f"answer from that machine, or copy its {paths.lead_key} here (mode 0600)"
    )


def lead_wrote(paths: TeamPaths) -> Callable[[Mapping[str, Any]], bool]:
    """Whether an inbox entry (as JSON) is one the lead wrote: signed with the team's key when
    there is one (signatures on); otherwise any entry counts, as before. Raises
    `protocols.team.keyfile.KeyFileRefused` for a key file that is not safe."""
    from protocols.team import keyfile

    signer = keyfile.load(paths.lead_key) if signatures_on() else None
    if signer is None:
        return lambda entry: True
    return signer.wrote


def takes_verify_key(program: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the ``--teammate-command`` `program` takes ``--lead-verify-key``: it says it is
    Claude Code 2.1.323 or newer when asked for ``--version`` (asked once per command)."""
    return _version_at_least(tuple(program), tuple(sorted(environ.items())))


@functools.cache
def _version_at_least(program: tuple[str, ...], environ: tuple[tuple[str, str], ...]) -> bool:
    import subprocess  # only for a Claude Code member: a send needs none

    try:
        result = subprocess.run(
            [*program, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_WAIT_S,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    found = re.search(r"(\d+)\.(\d+)\.(\d+)\s*\(Claude Code\)", result.stdout)
    return found is not None and tuple(map(int, found.groups())) >= FIRST_SIGNING_VERSION
