"""swarm as a signing lead (Claude Code 2.1.323's lead signatures, docs/interop.md).

On by default: every teammate swarm starts, its own or a ``--teammate-command`` program such as
Claude Code, gets ``--lead-verify-key`` for the team's key (`protocols.keyfile`, made on first
use), and every entry swarm writes from ``team-lead`` (or ``user``, ``system``) carries
``lead_sig``: so such a teammate obeys swarm and nobody else who writes into its inbox under the
lead's name. swarm's own view of what the lead answered (`lead_wrote`) counts only signed
answers too, so a forged answer does not close a request that its teammate still waits on.
``SWARM_LEAD_SIGNATURES=off`` (or ``0``, ``false``, ``no``) turns both off: then
teammates start without a key and act on unsigned lead messages, as before 2.1.323.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from protocols import keyfile
from protocols.mailbox import Mailbox
from protocols.paths import TeamPaths

VARIABLE = "SWARM_LEAD_SIGNATURES"
_OFF = {"0", "off", "false", "no"}


def signatures_on(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(VARIABLE, "on")
    return value.strip().lower() not in _OFF


def lead_signer(paths: TeamPaths) -> keyfile.KeyFileSigner | None:
    """The signer of the team's lead entries; None when signatures are off."""
    return keyfile.KeyFileSigner(paths.lead_key) if signatures_on() else None


def lead_mailbox(paths: TeamPaths) -> Mailbox:
    """The team's mailbox as swarm's lead processes use it: lead entries signed."""
    return Mailbox(paths, signer=lead_signer(paths))


def verify_key(paths: TeamPaths, environ: Mapping[str, str] | None = None) -> str | None:
    """``--lead-verify-key`` for a teammate starting now (the key made if there is none yet);
    None when signatures are off. Raises `protocols.keyfile.KeyFileRefused`."""
    if not signatures_on(environ):
        return None
    return keyfile.load_or_create(paths.lead_key).verify_key()


def lead_wrote(paths: TeamPaths) -> Callable[[Mapping[str, Any]], bool]:
    """Whether an inbox entry (as JSON) is one the lead wrote: signed with the team's key when
    there is one (signatures on); otherwise any entry counts, as before. Raises
    `protocols.keyfile.KeyFileRefused` for a key file that is not safe."""
    signer = keyfile.load(paths.lead_key) if signatures_on() else None
    if signer is None:
        return lambda entry: True
    return signer.wrote
