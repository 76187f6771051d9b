"""Prompt caching against the loopback stub: the anthropic style's cache_control marks, and
cache reads and writes counted in usage the same way on every style."""

from __future__ import annotations

import pytest

from tests.support.resilience_helpers import single_try_client
from tests.support.stub_provider import (
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
    stub.script(
        Reply.json(anthropic_tool_use([("add", {"a": 20, "b": 22})], text="Adding.")),
        Reply.json(anthropic_text("It is 42.")),
    )
    async with single_try_client(stub, "anthropic", system_prompt="Be brief.") as client:
        result = await client.run("what is 20+22?", await tools())
    assert result.text == "It is 42."
    first, second = (request.json for request in stub.requests)
    assert first["system"] == [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
    assert [t.get("cache_control") for t in first["tools"]] == [None, MARK]
    assert first["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is 20+22?", "cache_control": MARK}],
        }
    ]
    # the follow-up reads back the prefix the first request wrote, and writes a longer one
    assert second["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "what is 20+22?", "cache_control": MARK}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 20, "b": 22}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "42",
                    "cache_control": MARK,
                }
            ],
        },
    ]
    assert marks(second) == 4  # the API allows no more
    # the transcript handed out carries no marks: it is valid to send on any style
    assert marks(result.messages) == 0


async def test_a_long_history_still_has_at_most_four_marks(stub):
    history = []
    for n in range(5):
        history += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    stub.script(Reply.json(anthropic_text("ok")))
    async with single_try_client(stub, "anthropic", system_prompt="sys") as client:
        await client.run("last question", await tools(), history=history)
    body = stub.requests[0].json
    assert marks(body) == 4
    marked = [
        m["content"][-1]["text"] for m in body["messages"] if "cache_control" in m["content"][-1]
    ]
    assert marked == ["question 4", "last question"]


async def test_prompt_cache_false_sends_no_marks_and_a_plain_system_string(stub):
    stub.script(
        Reply.json(anthropic_tool_use([("echo", {"text": "a"})])),
        Reply.json(anthropic_text("done")),
    )
    async with single_try_client(
        stub, "anthropic", system_prompt="Be brief.", prompt_cache=False
    ) as client:
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


def expected(prompt: int, completion: int, **cache: int) -> dict:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        **cache,
    }


@pytest.mark.parametrize(
    ("style", "whole", "streamed", "usage"),
    [
        # Anthropic's input_tokens is only what follows the last breakpoint: 50 + 200 + 1000
        (
            "anthropic",
            anthropic_text("ok", usage=(50, 7), cache=(1000, 200)),
            anthropic_stream("ok", usage=(50, 7), cache=(1000, 200)),
            expected(1250, 7, cached_tokens=1000, cache_write_tokens=200),
        ),
        (
            "openai",
            openai_text("ok", usage=(2000, 5), cache=(1024, 0)),
            openai_stream("ok", usage=(2000, 5), cache=(1024, 0)),
            expected(2000, 5, cached_tokens=1024),
        ),
        # OpenRouter reports cache writes among the prompt_tokens_details
        (
            "openai",
            openai_text("ok", usage=(2000, 5), cache=(0, 1500)),
            openai_stream("ok", usage=(2000, 5), cache=(0, 1500)),
            expected(2000, 5, cache_write_tokens=1500),
        ),
        (
            "responses",
            responses_reply("ok", usage=(3000, 4), cache=(2048, 0)),
            responses_stream("ok", usage=(3000, 4), cache=(2048, 0)),
            expected(3000, 4, cached_tokens=2048),
        ),
    ],
    ids=["anthropic", "openai", "openrouter", "responses"],
)
async def test_cache_reads_and_writes_are_counted_the_same_on_every_style(
    stub, style, whole, streamed, usage
):
    stub.script(Reply.json(whole), streamed)
    async with single_try_client(stub, style) as client:
        result = await client.run("hi", None)
        events = [event async for event in client.stream("hi", None)]
    assert result.usage == usage
    assert events[-1]["result"].usage == usage


async def test_cache_counts_sum_over_the_calls_of_a_run(stub):
    stub.script(
        Reply.json(anthropic_tool_use([("echo", {"text": "a"})], cache=(1000, 200))),
        Reply.json(anthropic_text("done", cache=(1200, 30))),
    )
    async with single_try_client(stub, "anthropic") as client:
        result = await client.run("hi", await tools())
    assert (result.usage["cached_tokens"], result.usage["cache_write_tokens"]) == (2200, 230)


@pytest.mark.parametrize("details", [{"cached_tokens": "many"}, {"cached_tokens": [1]}])
async def test_a_malformed_cache_count_is_one_clear_error(stub, details):
    body = openai_text("ok")
    body["usage"]["prompt_tokens_details"] = details
    stub.script(Reply.json(body))
    async with single_try_client(stub, "openai") as client:
        with pytest.raises(ProviderError) as info:
            await client.run("hi", None)
    assert "usage.cached_tokens" in str(info.value) and "not a number" in str(info.value)


async def test_a_compaction_summary_is_asked_without_marks(stub):
    """A summary is asked once: a cache write would only make it cost more."""
    long = "word " * 2000  # about 2,500 tokens a turn: three do not fit 4,096
    history = []
    for n in range(3):
        history += [
            {"role": "user", "content": f"note {n}: {long}"},
            {"role": "assistant", "content": "Noted."},
        ]
    stub.handler = lambda rec: Reply.json(anthropic_text("Noted."))
    async with single_try_client(stub, "anthropic", context_window=4096) as client:
        await client.run("and now?", None, history=history)
    summaries = [r.json for r in stub.requests if "<conversation>" in str(r.json["messages"])]
    answers = [r.json for r in stub.requests if "<conversation>" not in str(r.json["messages"])]
    assert summaries and answers
    assert all(marks(body) == 0 for body in summaries)
    assert all(marks(body) > 0 for body in answers)
