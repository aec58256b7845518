"""A teammate's check of its lead's signatures (``--lead-verify-key``; `protocols.team.signing`).

`LeadCheck` tells each inbox entry's provenance: without a key every entry is taken as it says
(as before Claude Code 2.1.323); with one, an entry that claims a lead name or asks for a
shutdown without the lead's signature is *forged*. The runtime obeys nothing forged, shows it
to a model marked ``verified="false"``, and reports it once (`first_report`). The key's replay
window starts from this process's own start time, as Claude Code's does.
"""

from __future__ import annotations

import os

from protocols.clock import now_ms
from protocols.inbox.entry import InboxEntry
from protocols.pids import started_at_ms
from protocols.team.signing import Provenance, Verifier, claims_lead


class LeadCheck:
    def __init__(self, verify_key: str | None) -> None:
        self.verifier = (
            Verifier(verify_key, started_at_ms(os.getpid()) or now_ms()) if verify_key else None
        )
        self._reported: set[str] = set()

    @property
    def active(self) -> bool:
        return self.verifier is not None

    def checked(self, entry: InboxEntry) -> InboxEntry:
        """`entry` with its provenance (unchanged without a key, or when it has one)."""
        if self.verifier is None or entry.provenance is not None:
            return entry
        return entry.with_provenance(self.verifier.check(entry.to_json_dict()))

    def trusted(self, entry: InboxEntry) -> bool:
        """Whether `entry` may be acted on as what it says it is: always without a key; with
        one, unless it is forged."""
        return self.verifier is None or self.checked(entry).provenance != Provenance.FORGED

    def unsigned_lead(self, entry: InboxEntry) -> bool:
        """Claims a lead name without the lead's signature (with a key only)."""
        return self.active and claims_lead(entry.from_) and not self.trusted(entry)

    def spend(self, identities: set[str]) -> None:
        """Entries were marked read: their message ids verify nothing any more."""
        if self.verifier is not None:
            self.verifier.spend(identities)

    def first_report(self, entry: InboxEntry) -> bool:
        """True the first time a forged `entry` is to be reported (it may be seen again
        before it is marked read)."""
        if entry.identity in self._reported:
            return False
        self._reported.add(entry.identity)
        return True
