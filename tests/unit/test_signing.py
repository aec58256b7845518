"""Lead signatures (protocols/team/signing.py): the payload is JavaScript's bytes, a signature made
here verifies in Node and one made in Node verifies here, and the verification rules are
Claude Code 2.1.330's (which entry is verified, forged or unverifiable; the replay window; a
message id verifies once)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.clock import iso_from_ms
from protocols.team.signing import (
    REPLAY_WINDOW_MS,
    LeadSigner,
    Provenance,
    Verifier,
    claims_lead,
    earliest_ms,
    js_stringify,
    js_utf8,
    parse_verify_key,
    plan_digest,
    signing_payload,
)

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None, reason="node is not installed: no JavaScript to compare with"
)

TRICKY = [
    "plain",
    "",
    'quote " backslash \\ slash /',
    "controls \x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f and DEL \x7f",
    "line separators \u2028 \u2029, NEL \x85, BOM \ufeff, zero width \u200b",
    "lone high \ud800 lone low \udfff, reversed pair \udc00\ud800",
    "pair held apart \ud83d\ude00 and joined 😀",
    "ünïcödé ✓ 中文 𝄞 <tag> & 'single' `back` $(whoami)",
    "\\u2028 escaped already",
]
# JavaScript's own code for both halves, as Claude Code 2.1.330 has it (function `it` and `lt`)
JS_PAYLOAD = """
const payload = (e) => Buffer.from(JSON.stringify(["claude-team-lead-entry-v1", e.msg_id, e.from,
  e.timestamp, e.text, e.summary ?? null, e.color ?? null, e.from_plugin ?? null]));
"""


def node(script: str, given: Any) -> Any:
    """Run `script` in Node with `given` (as JSON, every non-ASCII character escaped, so lone
    surrogates arrive as JavaScript strings hold them) in ``input``; its printed JSON."""
    assert NODE is not None
    program = (
        f"const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n{JS_PAYLOAD}\n{script}"
    )
    result = subprocess.run(
        [NODE, "-e", program],
        input=json.dumps(given, ensure_ascii=True),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def entry(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "from": "team-lead",
        "text": text,
        "timestamp": iso_from_ms(START),
        "read": False,
        "msgV": 1,
        "msg_id": "0b9d2c1e-7a4f-4e1b-9c3d-5f6a7b8c9d0e",
        "type": "message",
        **extra,
    }


START = 1_790_000_000_000  # the teammate's process start in these tests


@needs_node
def test_the_payload_is_the_bytes_javascript_makes() -> None:
    arrays = [[t, None, t] for t in TRICKY]
    expected = node(
        "console.log(JSON.stringify(input.map((a) => Buffer.from(JSON.stringify(a)).toString('hex'))))",
        arrays,
    )
    assert [js_utf8(js_stringify(a)).hex() for a in arrays] == expected


@needs_node
@settings(max_examples=1, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
        ),
        min_size=40,
        max_size=40,
    )
)
def test_any_text_is_stringified_as_javascript_does(texts: list[str]) -> None:
    """Hypothesis's texts include surrogates and controls: one Node run checks forty."""
    expected = node(
        "console.log(JSON.stringify(input.map((t) => Buffer.from(JSON.stringify([t])).toString('hex'))))",
        texts,
    )
    assert [js_utf8(js_stringify([t])).hex() for t in texts] == expected


@needs_node
def test_signed_here_verifies_in_node() -> None:
    signer = LeadSigner.generate()
    key = signer.verify_key()
    entries = [
        signer.signed(entry(text, summary=text[:10], color="blue", from_plugin="p"))
        for text in TRICKY
    ]
    entries.append(signer.signed(entry("no optional fields")))
    forged = {**entries[0], "text": "changed after signing"}
    verdicts = node(
        """
        const crypto = require('crypto');
        const [, b64] = /^(\\d+)\\.([\\w-]+)$/.exec(input.key).slice(1);
        const key = crypto.createPublicKey({key: Buffer.from(b64, 'base64url'), format: 'der', type: 'spki'});
        console.log(JSON.stringify(input.entries.map((e) =>
          key.asymmetricKeyType === 'ed25519' &&
          crypto.verify(null, payload(e), key, Buffer.from(e.lead_sig, 'base64url')))));
        """,
        {"key": key, "entries": [*entries, forged]},
    )
    assert verdicts == [True] * len(entries) + [False]
    assert all("=" not in e["lead_sig"] for e in entries)  # base64url without padding


@needs_node
def test_signed_in_node_verifies_here() -> None:
    made = node(
        """
        const crypto = require('crypto');
        const {publicKey, privateKey} = crypto.generateKeyPairSync('ed25519');
        const key = `${input.ms}.${publicKey.export({format: 'der', type: 'spki'}).toString('base64url')}`;
        const entries = input.entries.map((e) =>
          ({...e, lead_sig: crypto.sign(null, payload(e), privateKey).toString('base64url')}));
        console.log(JSON.stringify({key, entries}));
        """,
        {"ms": START - 1000, "entries": [entry(t, msg_id=f"id-{i}") for i, t in enumerate(TRICKY)]},
    )
    verifier = Verifier(made["key"], START)
    assert [verifier.check(e) for e in made["entries"]] == [Provenance.VERIFIED] * len(TRICKY)
    tampered = {**made["entries"][0], "msg_id": "other", "summary": "added"}
    assert verifier.check(tampered) == Provenance.FORGED


def test_the_payload_holds_the_fields_in_claude_codes_order() -> None:
    payload = signing_payload(entry("hi", summary="s"))
    assert payload == (
        b'["claude-team-lead-entry-v1","0b9d2c1e-7a4f-4e1b-9c3d-5f6a7b8c9d0e","team-lead",'
        b'"2026-09-21T14:13:20.000Z","hi","s",null,null]'
    )
    assert signing_payload({**entry(), "text": 3}) is None
    assert signing_payload({**entry(), "summary": None}) == signing_payload(entry())


def test_only_lead_names_are_signed() -> None:
    signer = LeadSigner.generate()
    for name in ("team-lead", "user", "system"):
        assert "lead_sig" in signer.signed(entry(**{"from": name}))
    assert "lead_sig" not in signer.signed(entry(**{"from": "alice"}))


def test_the_verify_key_is_time_dot_spki() -> None:
    signer = LeadSigner.generate()
    text = signer.verify_key(ms=1234)
    ms, _ = parse_verify_key(text)
    assert ms == 1234 and text.startswith("1234.MCowBQYDK2VwAyEA")  # Ed25519 SPKI's header
    for bad in ("", "1234", "x.abc", "1234.", "1234.!!", "1234.AAAA", "99999999999999999999.abc"):
        with pytest.raises(ValueError):
            parse_verify_key(bad)


def test_what_is_verified_forged_or_unverifiable() -> None:
    signer = LeadSigner.generate()
    verifier = Verifier(signer.verify_key(ms=START - 1000), START)
    good = signer.signed(entry())
    assert verifier.check(good) == Provenance.VERIFIED
    assert verifier.check(good) == Provenance.VERIFIED  # read again, still unread: the same
    assert verifier.check(entry()) == Provenance.FORGED  # unsigned
    other = LeadSigner.generate().signed(entry(msg_id="x"))
    assert verifier.check(other) == Provenance.FORGED  # another lead's key
    no_id = signer.signed({k: v for k, v in entry().items() if k != "msg_id"})
    assert verifier.check(no_id) == Provenance.FORGED
    for lookalike in (
        "Team-Lead",
        "team\u2010lead",
        "\uff54\uff45\uff41\uff4d-\uff4c\uff45\uff41\uff44",
        "USER",
        "system\u200b",
    ):
        assert claims_lead(lookalike), lookalike
        assert verifier.check(entry(**{"from": lookalike})) == Provenance.FORGED
    assert verifier.check(entry(**{"from": "alice"})) == Provenance.UNVERIFIABLE
    shutdown = json.dumps(
        {"type": "shutdown_request", "requestId": "shutdown-1@a", "from": "alice"}
    )
    assert verifier.check(entry(shutdown, **{"from": "alice"})) == Provenance.FORGED


def test_a_message_id_verifies_once() -> None:
    signer = LeadSigner.generate()
    verifier = Verifier(signer.verify_key(ms=START), START)
    first = signer.signed(entry("first"))
    assert verifier.check(first) == Provenance.VERIFIED
    # another entry, properly signed, under an id already verified: a replay of the id
    assert verifier.check(signer.signed(entry("second"))) == Provenance.FORGED
    verifier.spend([first["msg_id"]])
    assert verifier.check(first) == Provenance.FORGED  # the same entry once more, after reading


def test_the_replay_window() -> None:
    assert earliest_ms(START, START - 1000) == START - REPLAY_WINDOW_MS
    assert earliest_ms(START, START - REPLAY_WINDOW_MS) == START - REPLAY_WINDOW_MS
    assert earliest_ms(START, START - REPLAY_WINDOW_MS - 1) == START  # started long after
    signer = LeadSigner.generate()
    verifier = Verifier(signer.verify_key(ms=START - 1000), START)
    old = signer.signed(entry(timestamp=iso_from_ms(START - REPLAY_WINDOW_MS - 1), msg_id="a"))
    edge = signer.signed(entry(timestamp=iso_from_ms(START - REPLAY_WINDOW_MS), msg_id="b"))
    assert verifier.check(old) == Provenance.FORGED
    assert verifier.check(edge) == Provenance.VERIFIED
    late = Verifier(signer.verify_key(ms=START - REPLAY_WINDOW_MS - 5000), START)
    assert late.check(signer.signed(entry(timestamp=iso_from_ms(START - 1)))) == Provenance.FORGED
    assert late.check(signer.signed(entry(msg_id="c"))) == Provenance.VERIFIED


@needs_node
def test_plan_digest_is_node_sha256_of_the_plan() -> None:
    plans = ["# Plan\n1. do it", "ünï ✓ \ud800 lone"]
    expected = node(
        "const c = require('crypto'); console.log(JSON.stringify(input.map((p) => c.createHash('sha256').update(p).digest('hex'))))",
        plans,
    )
    assert [plan_digest(p) for p in plans] == expected
