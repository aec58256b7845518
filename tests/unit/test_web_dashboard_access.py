"""`swarm.web.access` and `swarm.web.server`'s checks, without a server: tokens, the failure
limit, what a change needs, the address and the refusal to serve off loopback in clear; the
cost series' ring, the checks of an action's text and which error gets which status."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.errors import InvalidName, ProtocolsError, TeamNotFound, UnknownMember
from swarm.errors import SwarmError
from swarm.team.approvals import AlreadyAnswered, RequestNotFound
from swarm.web.access import FailureLimit, Role, Tokens, change_refused, given_token
from swarm.web.actions import text_field
from swarm.web.costs import SAVE_EVERY_S, CostSeries
from swarm.web.responses import BadInput, status_of
from swarm.web.server import Tls, check_exposure, parse_address
from swarm.web.state import _questions

TOKENS = Tokens("full-token", "viewer-token")
GOOD = {"authorization": "Bearer full-token", "content-type": "application/json"}
OWN = {"http://127.0.0.1:8765"}


def test_tokens_grant_their_role_only() -> None:
    assert TOKENS.role("full-token") is Role.FULL
    assert TOKENS.role("viewer-token") is Role.VIEWER
    for wrong in (None, "", "full-toke", "full-token ", "FULL-TOKEN"):
        assert TOKENS.role(wrong) is None
    new = Tokens.new()
    assert new.full != new.viewer and len(new.full) >= 40


def test_the_token_given_query_then_header_then_cookie() -> None:
    assert given_token({"token": "a"}, {"authorization": "Bearer b"}, {}, 1) == "a"
    assert given_token({}, {"authorization": "Bearer b"}, {"swarm_web_1": "c"}, 1) == "b"
    assert given_token({}, {}, {"swarm_web_1": "c"}, 1) == "c"
    assert given_token({}, {}, {"swarm_web_2": "c"}, 1) is None  # another port's cookie


def test_a_change_needs_the_header_token_json_and_its_own_origin() -> None:
    assert change_refused(GOOD, TOKENS, OWN) is None
    assert change_refused({**GOOD, "origin": "http://127.0.0.1:8765"}, TOKENS, OWN) is None
    refused = [
        {"content-type": "application/json"},
        {**GOOD, "authorization": "Bearer viewer-token"},
        {**GOOD, "origin": "http://evil.example"},
        {**GOOD, "origin": "null"},
        {**GOOD, "sec-fetch-site": "cross-site"},
        {**GOOD, "content-type": "text/plain"},
    ]
    for headers in refused:
        assert change_refused(headers, TOKENS, OWN) is not None, headers


def test_wrong_tokens_shut_an_address_out_for_a_window() -> None:
    now = [0.0]
    limit = FailureLimit(most=3, window_s=60, clock=lambda: now[0])
    for _ in range(3):
        assert not limit.shut_out("a")
        limit.failed("a")
    assert limit.shut_out("a") and not limit.shut_out("b")
    now[0] = 61
    assert not limit.shut_out("a")


def test_wrong_tokens_from_ever_new_addresses_keep_the_memory_bounded() -> None:
    now = [0.0]
    limit = FailureLimit(most=3, window_s=60, clock=lambda: now[0], max_clients=100)
    for _ in range(3):
        limit.failed("persistent")
    for n in range(1000):  # a sweep of addresses, one wrong token each, a second apart
        now[0] = 1 + n / 100
        limit.failed(f"2001:db8::{n:x}")
        assert limit.remembered() <= 100
    assert limit.shut_out("persistent")  # the sweep pushed out its own addresses, not this one
    now[0] = 200  # every failure aged out: the next new address finds room at once
    limit.failed("late")
    assert limit.remembered() == 1 and not limit.shut_out("late")


def test_the_address_and_exposure() -> None:
    assert parse_address("127.0.0.1:0").loopback
    assert parse_address("[::1]:8080").host == "::1"
    for bad in ("8080", "host:", "host:99999", ":80"):
        with pytest.raises(SwarmError, match="HOST:PORT"):
            parse_address(bad)
    outside = parse_address("0.0.0.0:8443")
    with pytest.raises(SwarmError, match="--tls-cert"):
        check_exposure(outside, None, insecure=False)
    check_exposure(outside, None, insecure=True)
    check_exposure(outside, Tls(Path("c.pem"), Path("k.pem")), insecure=False)
    assert not parse_address("example.com:80").loopback


def test_questions_keep_only_well_formed_parts() -> None:
    given = {
        "questions": [
            {"question": "Which DB?", "multiSelect": True, "options": [{"label": "pg"}, "junk"]},
            "junk",
        ]
    }
    assert _questions(given) == [
        {
            "question": "Which DB?",
            "multiSelect": True,
            "options": [{"label": "pg", "description": ""}],
        }
    ]
    assert _questions({"questions": "no"}) == []


def test_the_cost_series_keeps_a_flat_run_short_and_the_newest_samples() -> None:
    series = CostSeries(most=4)
    series.sample(1, None)  # no price known: nothing
    for at, cost in ((1, 0.5), (2, 0.5), (3, 0.5), (4, 0.5), (5, 1.0)):
        series.sample(at, cost)
    assert series.points() == [[1, 0.5], [4, 0.5], [5, 1.0]]  # the flat run: first and last
    for at in (6, 7, 8):
        series.sample(at, 1.0 + at)
    assert len(series.points()) == 4 and series.points()[-1] == [8, 9.0]


def test_the_cost_series_is_kept_in_a_file_and_a_bad_one_starts_it_anew(tmp_path: Path) -> None:
    path = tmp_path / "web" / "cost-series.json"
    clock = [0.0]
    series = CostSeries(path, clock=lambda: clock[0])
    series.save_if_due()  # nothing sampled: nothing written
    assert not path.exists()
    series.sample(1, 0.5)
    series.save_if_due()  # the first save is due at once
    series.sample(2, 0.75)
    series.save_if_due()  # the next only `SAVE_EVERY_S` later
    assert CostSeries(path).points() == [[1, 0.5]]
    clock[0] = SAVE_EVERY_S
    series.save_if_due()
    series.sample(3, 1.0)
    series.save()  # as the server stops
    again = CostSeries(path)
    again.sample(4, 1.5)
    assert again.points() == [[1, 0.5], [2, 0.75], [3, 1.0], [4, 1.5]]

    path.write_text('[[1, 0.5], ["x", 1], [2, NaN], [3, true], [4], 7, [5, 2.5]]')
    assert CostSeries(path).points() == [[1, 0.5], [5, 2.5]]  # what is not a sample is dropped
    for bad in ("{broken", '{"a": 1}', ""):
        path.write_text(bad)
        assert CostSeries(path).points() == []
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("[[1, 2]]")
    path.unlink()
    path.symlink_to(elsewhere)  # a planted link is not followed, nor written through
    planted = CostSeries(path)
    assert planted.points() == []
    planted.sample(9, 3.0)
    planted.save()  # refused and logged: the chart goes on in memory
    assert elsewhere.read_text() == "[[1, 2]]" and planted.points() == [[9, 3.0]]


def test_an_actions_text_is_checked_in_full() -> None:
    assert text_field({"t": "a\n\tb"}, "t", required=True, lines=True, most=10) == "a\n\tb"
    assert text_field({}, "t", required=False, lines=False, most=10) is None
    for body, lines, said in (
        ({}, False, "'t' is empty"),
        ({"t": " "}, False, "only blanks"),
        ({"t": 3}, False, "must be text"),
        ({"t": "x" * 11}, False, "at most 10"),
        ({"t": "a\nb"}, False, "U+000A"),
        ({"t": "a\x1bb"}, True, "U+001B"),
        ({"t": "a\x85b"}, True, "U+0085"),  # a C1 control too
    ):
        with pytest.raises(BadInput, match=said.replace("+", "\\+")):
            text_field(body, "t", required=True, lines=lines, most=10)


def test_each_error_gets_its_status() -> None:
    assert status_of(AlreadyAnswered("x")) == 409
    assert status_of(RequestNotFound("x")) == 404
    assert status_of(TeamNotFound("x")) == 404
    assert status_of(BadInput("x")) == 400
    assert status_of(InvalidName("x")) == 400
    assert status_of(UnknownMember("x")) == 400
    assert status_of(SwarmError("x")) == 400
    assert status_of(ProtocolsError("x")) == 500
    assert status_of(RuntimeError("x")) is None  # not ours: raised, a 500 from starlette
