"""The local Messages API server answers the real `anthropic` SDK, streaming and not, with
scripted text and tool-use turns, records what it was sent, and injects errors for retries."""

from __future__ import annotations

import anthropic
import pytest
from messages_api import MessagesAPI, Turn


def client(api: MessagesAPI, **kwargs: object) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test-key", base_url=api.url, **kwargs)  # type: ignore[arg-type]


def test_a_text_turn_and_the_request_it_recorded() -> None:
    with MessagesAPI([Turn.text("Hello from the stub")]) as api:
        reply = client(api).messages.create(
            model="claude-stub",
            max_tokens=100,
            system="be brief",
            messages=[{"role": "user", "content": "hi"}],
        )
    assert reply.content[0].text == "Hello from the stub"
    assert reply.stop_reason == "end_turn" and reply.usage.input_tokens == 10
    (request,) = api.requests
    assert request["system"] == "be brief" and request["messages"][0]["content"] == "hi"


def test_tool_use_turns_stream_like_the_real_api() -> None:
    script = [Turn.tool("Bash", {"command": "ls -la"}, text="Let me look."), Turn.text("Done.")]
    with (
        MessagesAPI(script) as api,
        client(api).messages.stream(
            model="m",
            max_tokens=100,
            messages=[{"role": "user", "content": "list files"}],
            tools=[{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        ) as stream,
    ):
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    text, tool = message.content
    assert text.text == "Let me look."
    assert (tool.name, tool.input) == ("Bash", {"command": "ls -la"})
    assert tool.id.startswith("toolu_")


def test_a_script_function_answers_from_the_request() -> None:
    def echo(body: dict) -> Turn:
        return Turn.text(f"you said: {body['messages'][-1]['content']}")

    with MessagesAPI(echo) as api:
        reply = client(api).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "ping"}]
        )
    assert reply.content[0].text == "you said: ping"


def test_overloaded_and_rate_limited_answers_are_retried_by_the_sdk() -> None:
    script = [Turn.failure(529), Turn.failure(429), Turn.text("third time lucky")]
    with MessagesAPI(script) as api:
        reply = client(api, max_retries=3).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert reply.content[0].text == "third time lucky"
    assert len(api.requests) == 3


def test_an_error_the_sdk_gives_up_on_is_raised() -> None:
    with MessagesAPI([Turn.failure(500)]) as api, pytest.raises(anthropic.InternalServerError):
        client(api, max_retries=0).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )


def test_prompt_cache_billing_reaches_the_sdk_when_streaming() -> None:
    from messages_api import PromptCache

    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]
    messages = [{"role": "user", "content": "hi"}]
    with MessagesAPI([Turn.text("one"), Turn.text("two")], cache=PromptCache()) as api:
        usages = []
        for _ in range(2):
            with client(api).messages.stream(
                model="claude-stub", max_tokens=10, system=system, messages=messages
            ) as stream:
                usages.append(stream.get_final_message().usage)
    assert usages[0].cache_creation_input_tokens > 0 and usages[0].cache_read_input_tokens == 0
    assert usages[1].cache_read_input_tokens == usages[0].cache_creation_input_tokens
