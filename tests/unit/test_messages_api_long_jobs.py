"""What long agent jobs meet, played by the local Messages API server to the real `anthropic`
SDK: thinking blocks, every stop reason (a tool call cut off by ``max_tokens``), faults in the
middle of a stream, a stalled stream, a context window, and prompt caching's look-back, TTLs
and limits. What the SDK raises for each fault is noted where it is tested."""

from __future__ import annotations

import json
import threading
from typing import Any

import anthropic
import httpx2  # the HTTP client of the anthropic SDK (2.14): a broken stream raises its errors
import pytest
from messages_api import MessagesAPI, PromptCache, Turn, request_tokens

from teammate.api.script import STOP_REASONS, ScriptError, parse_script

HI = [{"role": "user", "content": "hi"}]
WRITE = {"file_path": "out.txt", "content": "hello world, this is long"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")


def client(api: MessagesAPI) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=api.url, max_retries=0)  # faults surface at once


def streamed(api: MessagesAPI, beta: bool = False, **kwargs: Any) -> Any:
    messages: Any = client(api).beta.messages if beta else client(api).messages
    with messages.stream(**{"model": "m", "max_tokens": 100, "messages": HI, **kwargs}) as stream:
        return stream.get_final_message()


def created(api: MessagesAPI, beta: bool = False, **kwargs: Any) -> Any:
    messages: Any = client(api).beta.messages if beta else client(api).messages
    return messages.create(**{"model": "m", "max_tokens": 100, "messages": HI, **kwargs})


# thinking


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("beta", [False, True])
def test_thinking_and_redacted_thinking_reach_the_sdk_whole(stream: bool, beta: bool) -> None:
    turn = Turn.tool("Read", {"file_path": "a"}, thinking="Let me " * 40, redacted_thinking="RDT")
    with MessagesAPI([turn]) as api:
        message = (streamed if stream else created)(api, beta=beta)  # 3 thinking_delta events
    thinking, redacted, tool = message.content
    assert (thinking.type, thinking.thinking) == ("thinking", "Let me " * 40)
    assert thinking.signature == Turn.thinking_block("Let me " * 40)["signature"] != ""
    assert (redacted.type, redacted.data) == ("redacted_thinking", "RDT")
    assert (tool.name, tool.input) == ("Read", {"file_path": "a"})


def test_a_thinking_block_of_the_script_keeps_its_own_signature() -> None:
    blocks = [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "ok"},
    ]
    with MessagesAPI([Turn(blocks)]) as api:
        assert streamed(api).content[0].signature == "sig"


# stop reasons

REASONS = sorted(STOP_REASONS - {"compaction"})  # the beta API's own: not played here


@pytest.mark.parametrize("reason", REASONS)
def test_every_stop_reason_comes_back_as_sent(reason: str) -> None:
    with MessagesAPI([Turn.text("x", stop_reason=reason)] * 2) as api:
        for message in (
            streamed(api, stop_sequences=["END"]),
            created(api, stop_sequences=["END"]),
        ):
            assert message.stop_reason == reason
            assert message.stop_sequence == ("END" if reason == "stop_sequence" else None)


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_tool_call_cut_off_keeps_only_what_was_complete(reason: str) -> None:
    turn = Turn.tool("Write", WRITE, stop_reason=reason)
    with MessagesAPI([turn, turn]) as api:
        # both: the stream's half JSON ('{"file_path": "out.txt", "conten') as the SDK's
        # partial parser reads it, and the complete keys without a stream
        assert streamed(api).content[0].input == {"file_path": "out.txt"}
        assert created(api).content[0].input == {"file_path": "out.txt"}


def test_a_cut_list_differs_between_stream_and_not() -> None:
    turn = Turn.tool("T", {"a": 1, "b": [1, 2, 3, 4, 5, 6], "c": "x"}, stop_reason="max_tokens")
    with MessagesAPI([turn, turn]) as api:
        assert streamed(api).content[0].input == {"a": 1, "b": [1, 2]}  # jiter keeps a cut list
        assert created(api).content[0].input == {"a": 1}


def test_cut_false_sends_the_tool_call_whole() -> None:
    with MessagesAPI([Turn.tool("Write", WRITE, stop_reason="max_tokens", cut=False)]) as api:
        assert streamed(api).content[0].input == WRITE


# faults


@pytest.mark.parametrize(
    ("fault", "kind"), [("overloaded", "overloaded_error"), ("api_error", "api_error")]
)
def test_an_error_event_mid_stream_is_an_api_status_error_with_status_200(
    fault: str, kind: str
) -> None:
    seen: list[str] = []
    with (
        MessagesAPI([Turn.tool("Read", {}, text="first", fault=fault)]) as api,
        pytest.raises(anthropic.APIStatusError) as raised,  # not its 529/500 subclass
        client(api).messages.stream(model="m", max_tokens=10, messages=HI) as stream,
    ):
        seen.extend(event.type for event in stream)
    assert raised.value.status_code == 200  # the status the stream began with
    assert isinstance(raised.value.body, dict) and raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == kind
    assert seen.count("content_block_stop") == 1 and "message_stop" not in seen  # fault_after=1


@pytest.mark.parametrize("keep_alive", [False, True])
def test_a_reset_mid_stream_is_a_transport_error_not_an_anthropic_one(keep_alive: bool) -> None:
    # the SDK does not wrap errors raised while a stream is read: httpx2.RemoteProtocolError
    # ("peer closed connection without sending complete message body (incomplete chunked read)")
    with (
        MessagesAPI(
            [Turn.text("partial", fault="reset", fault_after=0)], keep_alive=keep_alive
        ) as api,
        pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"),
    ):
        streamed(api)


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("overloaded", anthropic.OverloadedError),  # HTTP 529
        ("api_error", anthropic.InternalServerError),  # HTTP 500
        ("reset", anthropic.APIConnectionError),  # no response at all: "Connection error."
    ],
)
def test_faults_without_a_stream(fault: str, error: type[Exception]) -> None:
    with MessagesAPI([Turn.text("x", fault=fault)]) as api, pytest.raises(error):
        created(api)


def test_a_retry_after_header_comes_with_a_scripted_failure() -> None:
    with (
        MessagesAPI([Turn.failure(429, retry_after=7)]) as api,
        pytest.raises(anthropic.RateLimitError) as raised,
    ):
        created(api)
    assert raised.value.response.headers["retry-after"] == "7"


# a stalled stream


def test_a_stalled_stream_is_seen_and_then_released() -> None:
    release = threading.Event()
    outcome: list[Any] = []
    with MessagesAPI([Turn.tool("Read", {}, text="first", stall=release)]) as api:
        thread = threading.Thread(target=lambda: outcome.append(streamed(api)), daemon=True)
        thread.start()
        assert api.wait_stalled() and api.stalled == [0]
        assert thread.is_alive() and outcome == []  # it cannot end while the answer waits
        release.set()
        thread.join(10)
    (message,) = outcome
    assert [block.type for block in message.content] == ["text", "tool_use"]


def test_a_client_that_leaves_a_stalled_stream_ends_it_quietly(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # closed by the thread that reads it: a stream closed from another thread while its
    # reader waits in recv() stays open (no FIN) until more bytes arrive
    release = threading.Event()
    script = [Turn.text("first", stall=release), Turn.text("next")]
    with MessagesAPI(script, keep_alive=True) as api:
        with client(api).messages.stream(model="m", max_tokens=10, messages=HI):
            assert api.wait_stalled()  # closed unread at the end of the block
        assert api.wait_for(lambda api: api.disconnected == [0] and api.active == 0)
        release.set()
        assert created(api).content[0].text == "next"
    assert "Traceback" not in capfd.readouterr().err


# a context window and token counting


def test_a_request_over_the_window_is_refused_with_the_apis_words() -> None:
    tokens = request_tokens({"messages": HI})
    with (
        MessagesAPI([Turn.text("fits")], window=tokens - 1) as api,
        pytest.raises(anthropic.BadRequestError) as raised,
    ):
        created(api)
    message = f"prompt is too long: {tokens} tokens > {tokens - 1} maximum"
    assert raised.value.body["error"] == {"type": "invalid_request_error", "message": message}
    assert api.refused == [(400, message)] and len(api.requests) == 1


def test_input_that_fits_without_room_for_max_tokens_is_refused() -> None:
    tokens = request_tokens({"messages": HI})
    with MessagesAPI([Turn.text("fits")], window=tokens + 50) as api:
        with pytest.raises(anthropic.BadRequestError) as raised:
            created(api)  # max_tokens=100
        # the refused request did not take the script's turn
        reply = client(api).messages.create(model="m", max_tokens=50, messages=HI)
    message = (
        f"input length and `max_tokens` exceed context limit: {tokens} + 100 > {tokens + 50}, "
        "decrease input length or `max_tokens` and try again"
    )
    assert raised.value.body["error"]["message"] == message
    assert reply.content[0].text == "fits" and api.refused == [(400, message)]


def test_counted_usage_and_a_turns_own_output_tokens() -> None:
    turns = [
        Turn.text("hello there"),
        Turn.text("x", usage={"input_tokens": 1, "output_tokens": 77}),
    ]
    with MessagesAPI(turns, count_tokens=True) as api:
        first, second = created(api).usage, streamed(api).usage
    tokens = request_tokens({"messages": HI})
    assert (first.input_tokens, second.input_tokens) == (tokens, tokens)
    assert first.output_tokens == len(json.dumps([{"type": "text", "text": "hello there"}])) // 4
    assert second.output_tokens == 77  # a turn's own usage keeps its output_tokens


def test_counted_usage_with_a_cache_adds_up_to_the_request() -> None:
    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]
    with MessagesAPI([Turn.text("a")] * 2, cache=PromptCache(), window=10_000) as api:
        usages = [created(api, system=system).usage for _ in range(2)]
    for usage in usages:
        parts = (
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        )
        assert parts == request_tokens({"system": system, "messages": HI})


# prompt caching: look-back, limits, TTLs


def text_blocks(count: int) -> list[dict[str, Any]]:
    return [{"type": "text", "text": f"block {index}"} for index in range(count)]


def marked(block: dict[str, Any], ttl: str | None = None) -> dict[str, Any]:
    return {**block, "cache_control": {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}}


@pytest.mark.parametrize(("added", "read"), [(19, True), (20, False), (30, False)])
def test_one_breakpoint_reads_only_within_20_blocks(added: int, read: bool) -> None:
    first, more = text_blocks(5), text_blocks(5 + added)[5:]
    with MessagesAPI([Turn.text("a")] * 2, cache=PromptCache()) as api:
        written = created(
            api, messages=[{"role": "user", "content": [*first[:4], marked(first[4])]}]
        ).usage
        later = [*first, *more[:-1], marked(more[-1])]
        usage = created(api, messages=[{"role": "user", "content": later}]).usage
    assert usage.cache_read_input_tokens == (written.cache_creation_input_tokens if read else 0)
    assert usage.input_tokens == 0  # the new breakpoint wrote the rest


def test_a_second_breakpoint_at_the_previous_end_reads_it_all() -> None:
    first, more = text_blocks(5), text_blocks(35)[5:]
    with MessagesAPI([Turn.text("a")] * 2, cache=PromptCache()) as api:
        written = created(
            api, messages=[{"role": "user", "content": [*first[:4], marked(first[4])]}]
        ).usage
        later = [*first[:4], marked(first[4]), *more[:-1], marked(more[-1])]
        usage = created(api, messages=[{"role": "user", "content": later}]).usage
    assert usage.cache_read_input_tokens == written.cache_creation_input_tokens > 0
    total = request_tokens({"messages": [{"role": "user", "content": later}]})
    assert usage.cache_creation_input_tokens == total - usage.cache_read_input_tokens


def test_entries_expire_after_their_ttl_and_reads_refresh_them() -> None:
    now = [0.0]
    system = [marked({"type": "text", "text": "s" * 400})]
    with MessagesAPI([Turn.text("a")] * 4, cache=PromptCache(clock=lambda: now[0])) as api:
        reads = []
        for at in (0, 200, 450, 751):  # written at 0; read at 200 (until 500), 450 (until 750)
            now[0] = at
            reads.append(created(api, system=system).usage.cache_read_input_tokens > 0)
    assert reads == [False, True, True, False]


def test_an_hour_long_entry_outlives_five_minutes_and_the_split_says_which_wrote_what() -> None:
    now = [0.0]
    system = [marked({"type": "text", "text": "s" * 400}, ttl="1h")]
    messages = [{"role": "user", "content": [marked({"type": "text", "text": "m" * 200})]}]
    with MessagesAPI([Turn.text("a")] * 2, cache=PromptCache(clock=lambda: now[0])) as api:
        first = created(api, system=system, messages=messages).usage
        now[0] = 3000.0
        later = created(api, system=system, messages=messages).usage
    hour = request_tokens({"system": system})
    assert first.cache_creation.ephemeral_1h_input_tokens == hour
    assert (
        first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens - hour
    )
    assert later.cache_read_input_tokens == hour  # the 5m part expired, the 1h part did not
    assert (
        later.cache_creation.ephemeral_5m_input_tokens
        == first.cache_creation.ephemeral_5m_input_tokens
    )


@pytest.mark.parametrize(
    ("ttls", "message"),
    [
        ([None] * 5, "A maximum of 4 blocks with cache_control may be provided. Found 5."),
        (
            [None, "1h"],
            "messages.0.content.1.cache_control.ttl: a ttl='1h' cache_control block must not "
            "come after a ttl='5m' cache_control block. Note that blocks are processed in the "
            "following order: `tools`, `system`, `messages`.",
        ),
    ],
)
def test_breakpoints_the_api_refuses(ttls: list[str | None], message: str) -> None:
    content = [marked(block, ttl) for block, ttl in zip(text_blocks(len(ttls)), ttls, strict=True)]
    with (
        MessagesAPI([Turn.text("a")], cache=PromptCache()) as api,
        pytest.raises(anthropic.BadRequestError) as raised,
    ):
        created(api, messages=[{"role": "user", "content": content}])
    assert raised.value.body["error"]["message"] == message and api.refused == [(400, message)]


# headers and the beta client


def test_betas_and_streaming_are_recorded_for_each_request() -> None:
    betas = ["interleaved-thinking-2025-05-14", "effort-2025-11-24"]
    with MessagesAPI([Turn.text("a")] * 3) as api:
        client(api).beta.messages.create(model="m", max_tokens=10, messages=HI, betas=betas)
        streamed(api, beta=True, betas=betas[:1])
        streamed(api)
    assert api.betas == [betas, betas[:1], []]
    assert api.streamed == [False, True, True]


# the script format


def test_a_yaml_script_says_thinking_faults_and_cuts() -> None:
    (thinking, faulty, cut) = parse_script(
        [
            {"thinking": "hm", "redacted_thinking": "RDT", "text": "ok"},
            {"text": "x", "fault": "reset", "fault_after": 0},
            {"tool": "Write", "input": WRITE, "stop_reason": "max_tokens", "cut": False},
        ]
    )
    assert [block["type"] for block in thinking.content] == [
        "thinking",
        "redacted_thinking",
        "text",
    ]
    assert thinking.content[0]["signature"] == Turn.thinking_block("hm")["signature"]
    assert (faulty.fault, faulty.fault_after) == ("reset", 0)
    assert (cut.stop_reason, cut.cut) == ("max_tokens", False)
    with pytest.raises(ScriptError, match="fault must be one of"):
        parse_script([{"text": "x", "fault": "boom"}])
    with pytest.raises(ScriptError, match="stop_reason must be one of"):
        parse_script([{"text": "x", "stop_reason": "tired"}])
