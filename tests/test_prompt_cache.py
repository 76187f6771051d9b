"""Prompt caching against the loopback stub: the anthropic style's cache_control marks, and
cache reads and writes counted in usage the same way on every style."""

from __future__ import annotations

import pytest

from tests.resilience_helpers import single_try_client
from tests.stub_provider import (
    Reply,
    anthropic_stream,
    anthropic_text,
    anthropic_tool_use,
    openai_stream,
    openai_text,
    responses_reply,
    responses_stream,
)
from toolnexus import ProviderError, create_toolkit, define_tool

MARK = {"type": "ephemeral"}


async def tools():
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return (await create_toolkit()).register(define_tool(add), define_tool(echo))


def marks(body: dict) -> int:
    """How many cache_control marks a request carries, wherever they are."""
    if isinstance(body, dict):
        return ("cache_control" in body) + sum(marks(v) for v in body.values())
    if isinstance(body, list):
        return sum(marks(v) for v in body)
    return 0


# ----------------------------------------------------------------------------- the marks


async def test_system_last_tool_and_the_last_two_user_messages_are_marked(stub):
    stub.script(Reply.json(anthropic_tool_use([("add", {"a": 20, "b": 22})], text="Adding.")),
                Reply.json(anthropic_text("It is 42.")))
    async with single_try_client(stub, "anthropic", system_prompt="Be brief.") as client:
        result = await client.run("what is 20+22?", await tools())
    assert result.text == "It is 42."
    first, second = (request.json for request in stub.requests)
    assert first["system"] == [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
    assert [t.get("cache_control") for t in first["tools"]] == [None, MARK]
    assert first["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "what is 20+22?", "cache_control": MARK}]}]
    # the follow-up reads back the prefix the first request wrote, and writes a longer one
    assert second["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "what is 20+22?", "cache_control": MARK}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 20, "b": 22}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42",
             "cache_control": MARK}]},
    ]
    assert marks(second) == 4  # the API allows no more
    # the transcript handed out carries no marks: it is valid to send on any style
    assert marks(result.messages) == 0


async def test_a_long_history_still_has_at_most_four_marks(stub):
    history = []
    for n in range(5):
        history += [{"role": "user", "content": f"question {n}"},
                    {"role": "assistant", "content": f"answer {n}"}]
    stub.script(Reply.json(anthropic_text("ok")))
    async with single_try_client(stub, "anthropic", system_prompt="sys") as client:
        await client.run("last question", await tools(), history=history)
    body = stub.requests[0].json
    assert marks(body) == 4
    marked = [m["content"][-1]["text"] for m in body["messages"]
              if "cache_control" in m["content"][-1]]
    assert marked == ["question 4", "last question"]


async def test_prompt_cache_false_sends_no_marks_and_a_plain_system_string(stub):
    stub.script(Reply.json(anthropic_tool_use([("echo", {"text": "a"})])),
                Reply.json(anthropic_text("done")))
    async with single_try_client(stub, "anthropic", system_prompt="Be brief.",
                                 prompt_cache=False) as client:
        await client.run("hi", await tools())
    for request in stub.requests:
        assert marks(request.json) == 0
        assert request.json["system"] == "Be brief."


async def test_other_styles_never_get_marks(stub):
    stub.script(Reply.json(openai_text("ok")))
    async with single_try_client(stub, "openai", system_prompt="sys") as client:
        await client.run("hi", await tools())
    assert marks(stub.requests[0].json) == 0


# ----------------------------------------------------------------------------- usage

# Anthropic's input_tokens is only what follows the last breakpoint: 50 + 200 + 1000
CACHED_USAGE = {"prompt_tokens": 1250, "completion_tokens": 7, "total_tokens": 1257,
                "cached_tokens": 1000, "cache_write_tokens": 200}


async def test_anthropic_cache_reads_and_writes_are_counted_and_part_of_the_prompt(stub):
    stub.script(Reply.json(anthropic_text("ok", usage=(50, 7), cache=(1000, 200))),
                anthropic_stream("ok", usage=(50, 7), cache=(1000, 200)))
    async with single_try_client(stub, "anthropic") as client:
        whole = await client.run("hi", None)
        events = [event async for event in client.stream("hi", None)]
    assert whole.usage == CACHED_USAGE
    assert events[-1]["result"].usage == CACHED_USAGE  # from message_start


async def test_cache_counts_sum_over_the_calls_of_a_run(stub):
    stub.script(Reply.json(anthropic_tool_use([("echo", {"text": "a"})], cache=(1000, 200))),
                Reply.json(anthropic_text("done", cache=(1200, 30))))
    async with single_try_client(stub, "anthropic") as client:
        result = await client.run("hi", await tools())
    assert (result.usage["cached_tokens"], result.usage["cache_write_tokens"]) == (2200, 230)


async def test_openai_cached_tokens_json_and_stream(stub):
    stub.script(Reply.json(openai_text("ok", usage=(2000, 5), cache=(1024, 0))),
                openai_stream("ok", usage=(2000, 5), cache=(1024, 0)))
    async with single_try_client(stub, "openai") as client:
        whole = await client.run("hi", None)
        events = [event async for event in client.stream("hi", None)]
    expected = {"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005,
                "cached_tokens": 1024}
    assert whole.usage == expected and events[-1]["result"].usage == expected


async def test_openrouters_cache_writes(stub):
    stub.script(openai_stream("ok", usage=(2000, 5), cache=(0, 1500)))
    async with single_try_client(stub, "openai") as client:
        events = [event async for event in client.stream("hi", None)]
    assert events[-1]["result"].usage == {"prompt_tokens": 2000, "completion_tokens": 5,
                                          "total_tokens": 2005, "cache_write_tokens": 1500}


async def test_responses_cached_tokens_json_and_stream(stub):
    stub.script(Reply.json(responses_reply("ok", usage=(3000, 4), cache=(2048, 0))),
                responses_stream("ok", usage=(3000, 4), cache=(2048, 0)))
    async with single_try_client(stub, "responses") as client:
        whole = await client.run("hi", None)
        events = [event async for event in client.stream("hi", None)]
    expected = {"prompt_tokens": 3000, "completion_tokens": 4, "total_tokens": 3004,
                "cached_tokens": 2048}
    assert whole.usage == expected and events[-1]["result"].usage == expected


@pytest.mark.parametrize("details", [{"cached_tokens": "many"}, {"cached_tokens": [1]}])
async def test_a_malformed_cache_count_is_one_clear_error(stub, details):
    body = openai_text("ok")
    body["usage"]["prompt_tokens_details"] = details
    stub.script(Reply.json(body))
    async with single_try_client(stub, "openai") as client:
        with pytest.raises(ProviderError) as info:
            await client.run("hi", None)
    assert "usage.cached_tokens" in str(info.value) and "not a number" in str(info.value)
