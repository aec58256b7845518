"""Lead signatures (Claude Code 2.1.323+, spec section 9): signing what a lead writes into a
teammate's inbox, and checking it on the teammate's side.

A lead starts each teammate with ``--lead-verify-key <ms>.<base64url of the DER
SubjectPublicKeyInfo of an Ed25519 public key>`` (``ms``: when it was handed out) and adds
``lead_sig`` to every inbox entry whose ``from`` is a lead name (`LEAD_NAMES`)::

    lead_sig = base64url(Ed25519.sign(payload))          # no padding, as Node's "base64url"
    payload  = UTF-8 of JSON.stringify(["claude-team-lead-entry-v1", msg_id, from, timestamp,
                                        text, summary ?? null, color ?? null, from_plugin ?? null])

`js_stringify` writes exactly JavaScript's bytes (Python's ``json.dumps`` differs on lone
surrogates). A teammate with a key (`Verifier`) calls an entry *verified* when Claude Code
would: the key parses, ``from`` is a lead name, ``msg_id`` is there and not spent by another
entry, the time is not before the replay window (`earliest_ms`) and the signature holds. An
unverified entry that claims a lead name (compared loosely: ``Team-Lead``, a Unicode dash) or
holds a ``shutdown_request`` is *forged*; anything else is *unverifiable* (a teammate's own
message). Only verified lead entries are obeyed; forged ones are shown to a model with
``verified="false"``. The private key on disk is `protocols.team.keyfile`'s.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from protocols.clock import ms_from_iso, now_ms

if TYPE_CHECKING:  # cryptography is imported where a key is used: most commands use none
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

LEAD_NAMES = frozenset({"team-lead", "user", "system"})  # Claude Code's xPr
PAYLOAD_TAG = "claude-team-lead-entry-v1"
REPLAY_WINDOW_MS = 120_000  # how far before the teammate's start a lead entry may be dated
_VERIFY_KEY = re.compile(r"^(\d+)\.([\w-]+)$", re.ASCII)  # Claude Code's own pattern
_MAX_SAFE_INTEGER = 2**53 - 1
# what Claude Code counts as a dash when it asks whether a name claims to be the lead
_DASHES = re.compile("[\u2212\u207b\u208b\u02d7\u2796\u2043\u30fc\uff70]")


class Provenance(StrEnum):
    VERIFIED = "verified"  # signed by the lead whose key this teammate was given
    FORGED = "forged"  # claims the lead (or asks for a shutdown) without a good signature
    UNVERIFIABLE = "unverifiable"  # claims nothing that needs a signature (a teammate's note)


# JavaScript's JSON.stringify, byte for byte


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _utf16_pairs_joined(text: str) -> str:
    """`text` as JavaScript sees it: a high surrogate followed by a low one is one character
    (json.loads already joins escaped pairs; text built by hand may hold them apart)."""
    if not re.search("[\ud800-\udbff][\udc00-\udfff]", text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def js_string(text: str) -> str:
    """``JSON.stringify(text)``: ``"`` and ``\\`` escaped, the C0 controls as ``\\b \\f \\n
    \\r \\t`` or ``\\u00xx``, lone surrogates as ``\\udxxx``; everything else (U+2028, U+2029,
    DEL) as it is."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, _utf16_pairs_joined(text)) + '"'


def js_stringify(values: Iterable[str | None]) -> str:
    """``JSON.stringify`` of an array of strings and nulls."""
    return "[" + ",".join("null" if v is None else js_string(v) for v in values) + "]"


def js_utf8(text: str) -> bytes:
    """``Buffer.from(text)``: UTF-8, a lone surrogate as U+FFFD (as Node encodes it)."""
    joined = _utf16_pairs_joined(text)
    return re.sub("[\ud800-\udfff]", "\ufffd", joined).encode("utf-8")


def signing_payload(entry: Mapping[str, Any]) -> bytes | None:
    """The bytes a lead signs for inbox entry `entry`; None when a field that goes into them is
    not a string (such an entry cannot be verified)."""
    fields: list[str | None] = []
    for key, required in (
        ("msg_id", True),
        ("from", True),
        ("timestamp", True),
        ("text", True),
        ("summary", False),
        ("color", False),
        ("from_plugin", False),
    ):
        value = entry.get(key)
        if value is None and not required:
            fields.append(None)
        elif isinstance(value, str):
            fields.append(value)
        else:
            return None
    return js_utf8(js_stringify([PAYLOAD_TAG, *fields]))


def b64url(data: bytes) -> str:
    """Node's ``toString("base64url")``: the URL-safe alphabet, no padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str) -> bytes:
    """The bytes of a base64url text (padded or not); ValueError if it is not one."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64url: {exc}") from None


def plan_digest(plan_content: str) -> str:
    """``planDigest``: the SHA-256 of a plan request's ``planContent`` (UTF-8), in hex: what a
    plan approval must echo for a teammate that checks signatures."""
    import hashlib  # only for a plan: loads OpenSSL

    return hashlib.sha256(js_utf8(plan_content)).hexdigest()


def claims_lead(name: str) -> bool:
    """Whether a sender's name reads as a lead name (case, Unicode forms, dashes and invisible
    characters aside), as Claude Code asks before calling an unsigned entry forged."""
    folded = unicodedata.normalize("NFKC", name)
    folded = "".join(
        "-" if unicodedata.category(c) == "Pd" else c
        for c in folded
        if unicodedata.category(c) not in ("Cc", "Cf")
    )
    return _DASHES.sub("-", folded).strip().casefold() in LEAD_NAMES


# signing


class LeadSigner:
    """A lead's private key: signs entries from lead names, and hands out the verify key."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self.private_key = private_key

    @classmethod
    def generate(cls) -> LeadSigner:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        return cls(Ed25519PrivateKey.generate())

    def verify_key(self, ms: int | None = None) -> str:
        """``--lead-verify-key``: ``<ms>.<base64url DER SubjectPublicKeyInfo>``, ``ms`` now."""
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        der = self.private_key.public_key().public_bytes(
            Encoding.DER, PublicFormat.SubjectPublicKeyInfo
        )
        return f"{now_ms() if ms is None else ms}.{b64url(der)}"

    def signature(self, entry: Mapping[str, Any]) -> str | None:
        """``lead_sig`` for `entry` (None if it is not from a lead name, or cannot be signed)."""
        if entry.get("from") not in LEAD_NAMES:
            return None
        payload = signing_payload(entry)
        return None if payload is None else b64url(self.private_key.sign(payload))

    def signed(self, entry: dict[str, Any]) -> dict[str, Any]:
        """`entry` with its ``lead_sig`` (a copy; unchanged when it is not a lead's)."""
        signature = self.signature(entry)
        return entry if signature is None else {**entry, "lead_sig": signature}

    def wrote(self, entry: Mapping[str, Any]) -> bool:
        """Whether `entry`'s ``lead_sig`` is this key's signature of it (no replay window: for
        the lead's own look at what it sent)."""
        from cryptography.exceptions import InvalidSignature

        signature, payload = entry.get("lead_sig"), signing_payload(entry)
        if not isinstance(signature, str) or payload is None:
            return False
        try:
            self.private_key.public_key().verify(from_b64url(signature), payload)
        except (InvalidSignature, ValueError):
            return False
        return True


# verifying


def parse_verify_key(text: str) -> tuple[int, Ed25519PublicKey]:
    """The time and the public key of a ``--lead-verify-key``; ValueError saying what is wrong."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    match = _VERIFY_KEY.match(text)
    if match is None:
        raise ValueError(
            "a lead verify key is <ms>.<base64url of an Ed25519 public key (DER SPKI)>"
        )
    ms = int(match.group(1))
    if ms > _MAX_SAFE_INTEGER:
        raise ValueError(f"the time {match.group(1)} of the lead verify key is out of range")
    try:
        key = load_der_public_key(from_b64url(match.group(2)))
    except ValueError as exc:
        raise ValueError(f"the lead verify key does not hold a public key: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the lead verify key is not an Ed25519 public key")
    return ms, key


def earliest_ms(process_start_ms: int, key_ms: int) -> int:
    """The oldest time a lead entry may carry: a teammate started within the window after its
    key was made takes entries from up to the window before its start (its first prompt was
    written before it started); one started later only takes entries from after its start."""
    if process_start_ms <= key_ms + REPLAY_WINDOW_MS:
        return process_start_ms - REPLAY_WINDOW_MS
    return process_start_ms


class Verifier:
    """A teammate's check of lead entries against its ``--lead-verify-key`` (module doc).

    One ``msg_id`` verifies once: the same entry read again stays verified while it is unread,
    and any entry with that id after it was read (`spend`), or with another signature, is not.
    """

    def __init__(self, verify_key: str, process_start_ms: int) -> None:
        self.key_ms, self.public_key = parse_verify_key(verify_key)
        self.earliest = earliest_ms(process_start_ms, self.key_ms)
        self._verified: dict[str, str] = {}  # msg_id -> lead_sig, verified and still unread
        self._spent: set[str] = set()

    def check(self, entry: Mapping[str, Any]) -> Provenance:
        if self._verifies(entry):
            return Provenance.VERIFIED
        sender = entry.get("from")
        if isinstance(sender, str) and claims_lead(sender):
            return Provenance.FORGED
        if _is_shutdown_request(entry.get("text")):
            return Provenance.FORGED
        return Provenance.UNVERIFIABLE

    def spend(self, msg_ids: Iterable[str]) -> None:
        """These entries were read: their ids verify nothing from now on."""
        for msg_id in msg_ids:
            self._verified.pop(msg_id, None)
            self._spent.add(msg_id)

    def _verifies(self, entry: Mapping[str, Any]) -> bool:
        msg_id, signature = entry.get("msg_id"), entry.get("lead_sig")
        if entry.get("from") not in LEAD_NAMES or not isinstance(msg_id, str) or not msg_id:
            return False
        if not isinstance(signature, str) or msg_id in self._spent:
            return False
        known = self._verified.get(msg_id)
        if known is not None:
            return known == signature
        stamp = entry.get("timestamp")
        sent = ms_from_iso(stamp) if isinstance(stamp, str) else None
        payload = signing_payload(entry)
        if sent is None or sent < self.earliest or payload is None:
            return False
        from cryptography.exceptions import InvalidSignature

        try:
            self.public_key.verify(from_b64url(signature), payload)
        except (InvalidSignature, ValueError):
            return False
        self._verified[msg_id] = signature
        return True


def _is_shutdown_request(text: Any) -> bool:
    if not isinstance(text, str) or "shutdown_request" not in text:
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and value.get("type") == "shutdown_request"
