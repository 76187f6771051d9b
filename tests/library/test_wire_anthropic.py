"""style="anthropic" against the loopback stub: the request as the Messages API expects it,
and every reply variant (JSON and SSE) as real servers send it."""

from __future__ import annotations

import re

import pytest

from tests.support.stream_events import joined, of_type
from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_blocks_stream,
    anthropic_message,
    anthropic_stream,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
)
from toolnexus import ProviderError, create_client, create_toolkit, define_tool

SIGNATURE = "c2lnLW9uZQ=="


# ----------------------------------------------------------------------------- helpers


def client_for(base_url: str, style: str = "anthropic", **kw):
    """The request shapes here are read without prompt-cache marks (test_prompt_cache.py
    covers those)."""
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("prompt_cache", False)
    return create_client(base_url=base_url, style=style, model="claude-test", **kw)


async def tools(*extra):
    """A toolkit with `add(a, b)` and `echo(text)`, plus `extra` tools."""

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return (await create_toolkit()).register(define_tool(add), define_tool(echo), *extra)


async def collect(events) -> list[dict]:
    return [event async for event in events]


def sent(stub: StubProvider, n: int) -> dict:
    """The JSON body of the n-th request the stub received."""
    return stub.requests[n].json


def ev(name: str, **data) -> tuple[str, dict]:
    """One named Messages-API stream event."""
    return name, {"type": name, **data}


def message_start(input_tokens: int = 10) -> tuple[str, dict]:
    return ev(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    )


def block(index: int, start: dict, *deltas: dict) -> list[tuple[str, dict]]:
    return [
        ev("content_block_start", index=index, content_block=start),
        *(ev("content_block_delta", index=index, delta=d) for d in deltas),
        ev("content_block_stop", index=index),
    ]


def message_end(stop: str = "end_turn", output_tokens: int = 5) -> list[tuple[str, dict]]:
    return [
        ev(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        ev("message_stop"),
    ]


def text_block(index: int, *pieces: str) -> list[tuple[str, dict]]:
    return block(
        index, {"type": "text", "text": ""}, *({"type": "text_delta", "text": p} for p in pieces)
    )


def tool_block(index: int, call_id: str, name: str, *json_pieces: str):
    return block(
        index,
        {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        *({"type": "input_json_delta", "partial_json": p} for p in json_pieces),
    )


def roles(body: dict) -> list[str]:
    return [m["role"] for m in body["messages"]]


def blocks_of(body: dict, kind: str) -> list[dict]:
    return [b for m in body["messages"] for b in m["content"] if b["type"] == kind]


# ----------------------------------------------------------------------------- the request


async def test_posts_to_v1_messages_with_anthropic_headers(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url, api_key="sk-ant-secret") as client:
        result = await client.run("hello", None)
    assert result.text == "hi"
    req = stub.requests[0]
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.headers["x-api-key"] == "sk-ant-secret"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.json["model"] == "claude-test"
    assert req.json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
async def test_base_url_ending_in_v1_gets_no_second_v1(stub, suffix):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url + suffix) as client:
        await client.run("hello", None)
    assert stub.requests[0].path == "/v1/messages"


async def test_max_tokens_defaults_to_4096(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url) as client:
        await client.run("hello", None)
    assert sent(stub, 0)["max_tokens"] == 4096


async def test_request_params_override_max_tokens(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    params = {"max_tokens": 321, "temperature": 0.25}
    async with client_for(stub.url, request_params=params) as client:
        await client.run("hello", None)
    assert sent(stub, 0)["max_tokens"] == 321
    assert sent(stub, 0)["temperature"] == 0.25


async def test_system_prompt_is_hoisted_out_of_messages(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url, system_prompt="Be brief.") as client:
        await client.run("hello", None)
    body = sent(stub, 0)
    assert body["system"] == "Be brief."
    assert roles(body) == ["user"]


async def test_a_system_message_in_history_is_hoisted_too(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    history = [{"role": "system", "content": "You are a pirate."}]
    async with client_for(stub.url) as client:
        result = await client.run("hello", None, history=history)
    body = sent(stub, 0)
    assert body["system"] == "You are a pirate."
    assert "system" not in roles(body)
    assert result.messages[0] == {"role": "system", "content": "You are a pirate."}


async def test_tools_go_out_in_anthropic_shape(stub):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url) as client:
        await client.run("hello", await tools())
    assert [t["name"] for t in sent(stub, 0)["tools"]] == ["add", "echo"]
    add = sent(stub, 0)["tools"][0]
    assert add["description"] == "Add two numbers."
    assert add["input_schema"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert "function" not in add and "parameters" not in add


async def test_parallel_tool_results_form_one_user_message(stub):
    stub.script(
        anthropic_stream(tool_calls=[("add", {"a": 2, "b": 3}), ("echo", {"text": "hey"})]),
        anthropic_stream("Done."),
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("go", await tools()))
    assert of_type(events, "done")[0]["result"].text == "Done."
    follow_up = sent(stub, 1)
    assert roles(follow_up) == ["user", "assistant", "user"]
    assistant, results = follow_up["messages"][1], follow_up["messages"][2]
    assert assistant["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
        {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"text": "hey"}},
    ]
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "hey"},
    ]


async def test_a_failed_tool_goes_back_flagged_as_error(stub):
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    stub.script(
        Reply.json(anthropic_tool_use([("explode", {})])), Reply.json(anthropic_text("Sorry."))
    )
    async with client_for(stub.url) as client:
        await client.run("go", await tools(define_tool(explode)))
    [result] = blocks_of(sent(stub, 1), "tool_result")
    assert result["tool_use_id"] == "toolu_1"
    assert result["is_error"] is True
    assert "kaboom" in result["content"]


@pytest.mark.parametrize(
    ("keys", "sent"),
    [
        (
            {"ANTHROPIC_API_KEY": "sk-ant-from-env", "OPENROUTER_API_KEY": "sk-or-wrong"},
            "sk-ant-from-env",
        ),
        ({"OPENROUTER_API_KEY": "sk-or-fallback"}, "sk-or-fallback"),
    ],
    ids=["its-own-variable", "openrouter-as-fallback"],
)
async def test_the_anthropic_key_is_its_variable_else_openrouters(
    stub, monkeypatch, no_keys_in_env, keys, sent
):
    for var, value in {"OPENAI_API_KEY": "sk-openai-wrong", **keys}.items():
        monkeypatch.setenv(var, value)
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url, api_key=None) as client:
        await client.run("hello", None)
    assert stub.requests[0].headers["x-api-key"] == sent


async def test_the_anthropic_key_is_not_sent_to_an_openai_endpoint(
    stub, monkeypatch, no_keys_in_env
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-private")
    stub.script(Reply.json(openai_text("hi")))
    async with client_for(stub.base_url, style="openai", api_key=None) as client:
        await client.run("hello", None)
    assert "sk-ant-private" not in str(stub.requests[0].headers)


async def test_without_any_key_no_auth_header_is_sent(stub, no_keys_in_env):
    stub.script(Reply.json(anthropic_text("hi")))
    async with client_for(stub.url, api_key=None) as client:
        await client.run("hello", None)
    assert "x-api-key" not in stub.requests[0].headers
    assert "authorization" not in stub.requests[0].headers


def test_an_unknown_style_names_both_choices():
    with pytest.raises(ValueError) as info:
        create_client(base_url="http://127.0.0.1:9/v1", style="gemini", model="m")
    assert "openai" in str(info.value) and "anthropic" in str(info.value)
    assert "gemini" in str(info.value)


# ----------------------------------------------------------------------------- non-streaming


async def test_non_streaming_text_reply(stub):
    stub.script(Reply.json(anthropic_text("Hello there", usage=(12, 4))))
    async with client_for(stub.url) as client:
        result = await client.run("hi", None)
    assert sent(stub, 0)["stream"] is False
    assert result.text == "Hello there"
    assert result.finish_reason == "end_turn"
    assert result.usage == {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    assert result.messages[-1] == {"role": "assistant", "content": "Hello there"}


async def test_non_streaming_tool_use_reply(stub):
    stub.script(
        Reply.json(
            anthropic_tool_use([("add", {"a": 20, "b": 22})], text="Adding.", usage=(10, 6))
        ),
        Reply.json(anthropic_text("It is 42.", usage=(30, 4))),
    )
    async with client_for(stub.url) as client:
        result = await client.run("what is 20+22?", await tools())
    assert result.text == "It is 42."
    assert result.tool_calls == [{"id": "toolu_1", "name": "add", "args": {"a": 20, "b": 22}}]
    assert result.usage == {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50}
    follow_up = sent(stub, 1)
    assert follow_up["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 20, "b": 22}},
        ],
    }
    assert follow_up["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"},
        ],
    }


async def test_http_error_carries_the_providers_message(stub):
    stub.script(Reply.error(400, "max_tokens: must be at most 8192", style="anthropic"))
    async with client_for(stub.url) as client:
        with pytest.raises(ProviderError) as info:
            await client.run("hi", None)
    assert info.value.status == 400
    assert info.value.provider_message == "max_tokens: must be at most 8192"
    assert "max_tokens: must be at most 8192" in str(info.value)


async def test_a_plain_json_answer_to_a_streaming_request_still_works(stub):
    stub.script(Reply.json(anthropic_text("Whole reply")))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    assert sent(stub, 0)["stream"] is True
    assert joined(events, "text") == "Whole reply"
    assert of_type(events, "done")[0]["result"].text == "Whole reply"


# ----------------------------------------------------------------------------- streaming


async def test_streamed_text_arrives_as_deltas(stub):
    stub.script(anthropic_stream("Hello big wide world", usage=(11, 7)))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    assert sent(stub, 0)["stream"] is True
    texts = of_type(events, "text")
    assert len(texts) > 1
    assert joined(events, "text") == "Hello big wide world"
    result = events[-1]["result"]
    assert events[-1]["type"] == "done"
    assert result.text == "Hello big wide world"
    assert result.finish_reason == "end_turn"
    assert result.usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


async def test_stream_split_into_tiny_network_reads(stub):
    stub.script(
        anthropic_stream("Grüße, wörld ✓", tool_calls=[("echo", {"text": "ünï"})], chunks=5),
        anthropic_stream("ok", chunks=3),
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", await tools()))
    assert joined(events, "text") == "Grüße, wörld ✓ok"
    assert of_type(events, "tool_call")[0]["args"] == {"text": "ünï"}
    assert of_type(events, "tool_result")[0]["output"] == "ünï"


async def test_input_json_deltas_are_joined_into_the_arguments(stub):
    events_in = [
        message_start(),
        *tool_block(0, "toolu_a", "add", '{"a"', ': 4, "', 'b": 38', "}"),
        *message_end("tool_use"),
    ]
    stub.script(Reply.sse(events_in), anthropic_stream("42"))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("sum", await tools()))
    [call] = of_type(events, "tool_call")
    assert (call["id"], call["name"], call["args"]) == ("toolu_a", "add", {"a": 4, "b": 38})
    assert of_type(events, "tool_result")[0]["output"] == "42"
    [tool_use] = blocks_of(sent(stub, 1), "tool_use")
    assert tool_use == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "add",
        "input": {"a": 4, "b": 38},
    }


async def test_a_tool_use_without_any_json_delta_has_empty_arguments(stub):
    def now() -> str:
        """The time."""
        return "noon"

    events_in = [message_start(), *tool_block(0, "toolu_n", "now"), *message_end("tool_use")]
    stub.script(Reply.sse(events_in), anthropic_stream("It is noon."))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("time?", await tools(define_tool(now))))
    assert of_type(events, "tool_call")[0]["args"] == {}
    result = of_type(events, "tool_result")[0]
    assert (result["output"], result["is_error"]) == ("noon", False)
    assert blocks_of(sent(stub, 1), "tool_use")[0]["input"] == {}


async def test_a_tool_use_whole_in_its_start_event_keeps_its_input(stub):
    """Some gateways and Bedrock send a tool_use's whole `input` in content_block_start and
    no input_json_delta after it; the SDK keeps that input when no delta follows
    (anthropics/anthropic-sdk-python src/anthropic/lib/streaming/_messages.py,
    `accumulate_event`: the input is replaced only by a non-empty json buffer)."""
    events_in = [
        message_start(),
        *block(0, {"type": "tool_use", "id": "toolu_w", "name": "add", "input": {"a": 4, "b": 38}}),
        *message_end("tool_use"),
    ]
    stub.script(Reply.sse(events_in), anthropic_stream("42"))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("sum", await tools()))
    assert of_type(events, "tool_call")[0]["args"] == {"a": 4, "b": 38}
    assert of_type(events, "tool_result")[0]["output"] == "42"
    assert blocks_of(sent(stub, 1), "tool_use")[0]["input"] == {"a": 4, "b": 38}


async def test_ping_events_and_unknown_events_are_ignored(stub):
    events_in = [
        message_start(),
        ev("ping"),
        *text_block(0, "a", "b"),
        ev("ping"),
        ev("some_future_event", payload={"x": 1}),
        *message_end(),
    ]
    stub.script(Reply.sse(events_in))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    assert joined(events, "text") == "ab"
    assert events[-1]["result"].text == "ab"


async def test_usage_is_start_input_plus_the_last_cumulative_output(stub):
    events_in = [
        message_start(input_tokens=25),
        *text_block(0, "x"),
        ev("message_delta", delta={"stop_reason": None}, usage={"output_tokens": 3}),
        ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9}),
        ev("message_stop"),
    ]
    stub.script(Reply.sse(events_in))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    result = events[-1]["result"]
    assert result.usage == {"prompt_tokens": 25, "completion_tokens": 9, "total_tokens": 34}
    assert result.finish_reason == "end_turn"


async def test_cumulative_message_delta_usage_with_cache_tokens_replaces_the_start(stub):
    """message_delta's usage is cumulative, input and cache counts included (anthropic-sdk
    MessageDeltaUsage: input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
    output_tokens, server_tool_use); with server tools they grow during the message, and a
    delta may carry only some of them."""
    start = message_start(input_tokens=0)
    start[1]["message"]["usage"].update(cache_creation_input_tokens=0, cache_read_input_tokens=0)
    events_in = [
        start,
        *text_block(0, "Searched."),
        ev(
            "message_delta",
            delta={"stop_reason": None},
            usage={
                "input_tokens": 2679,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1536,
                "output_tokens": 200,
                "server_tool_use": {"web_search_requests": 1},
            },
        ),
        ev(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage={"cache_read_input_tokens": 2048, "output_tokens": 510},
        ),
        ev("message_stop"),
    ]
    stub.script(Reply.sse(events_in))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    assert events[-1]["result"].usage == {
        "prompt_tokens": 2679 + 2048,
        "completion_tokens": 510,
        "total_tokens": 5237,
        "cached_tokens": 2048,
    }
    assert of_type(events, "usage")[-1]["usage"]["prompt_tokens"] == 4727


async def test_usage_sums_over_turns(stub):
    stub.script(
        anthropic_stream(tool_calls=[("echo", {"text": "a"})], usage=(10, 3)),
        anthropic_stream("fine", usage=(20, 4)),
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", await tools()))
    assert events[-1]["result"].usage == {
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "total_tokens": 37,
    }


async def test_thinking_is_reasoning_and_goes_back_signed_ahead_of_tool_use(stub):
    stub.script(
        anthropic_stream(
            thinking="I should add them",
            tool_calls=[("add", {"a": 1, "b": 2})],
            text="Let me add.",
            signature=SIGNATURE,
        ),
        anthropic_stream("Three."),
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("1+2?", await tools()))
    assert joined(events, "reasoning") == "I should add them"
    assert joined(events, "text") == "Let me add.Three."
    assert "add them" not in events[-1]["result"].text
    assistant = sent(stub, 1)["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should add them",
        "signature": SIGNATURE,
    }
    assert assistant["content"][2]["id"] == "toolu_1"


async def test_redacted_thinking_goes_back_untouched(stub):
    events_in = [
        message_start(),
        *block(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3vOpaque"}),
        *block(
            1,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "plain "},
            {"type": "thinking_delta", "thinking": "thought"},
            {"type": "signature_delta", "signature": SIGNATURE},
        ),
        *tool_block(2, "toolu_r", "echo", '{"text": "x"}'),
        *message_end("tool_use"),
    ]
    stub.script(Reply.sse(events_in), anthropic_stream("done"))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", await tools()))
    assert joined(events, "reasoning") == "plain thought"
    assert joined(events, "text") == "done"
    assert sent(stub, 1)["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3vOpaque"},
        {"type": "thinking", "thinking": "plain thought", "signature": SIGNATURE},
        {"type": "tool_use", "id": "toolu_r", "name": "echo", "input": {"text": "x"}},
    ]


async def test_non_streamed_thinking_blocks_go_back_too(stub):
    reply = anthropic_tool_use([("echo", {"text": "x"})])
    reply["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": SIGNATURE})
    stub.script(Reply.json(reply), Reply.json(anthropic_text("ok")))
    async with client_for(stub.url) as client:
        result = await client.run("hi", await tools())
    assert result.text == "ok"
    assert sent(stub, 1)["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "hmm",
        "signature": SIGNATURE,
    }


async def test_an_error_event_in_the_stream_raises_with_the_providers_message(stub):
    events_in = [
        message_start(),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Par"}),
        ev("error", error={"type": "overloaded_error", "message": "Overloaded right now"}),
    ]
    stub.script(Reply.sse(events_in))
    seen = []
    async with client_for(stub.url) as client:
        with pytest.raises(ProviderError) as info:
            async for event in client.stream("hi", None):
                seen.append(event)
    assert info.value.provider_message == "Overloaded right now"
    assert "Overloaded right now" in str(info.value)
    assert not of_type(seen, "done")


async def test_a_stream_that_stops_mid_message_raises_instead_of_half_an_answer(stub):
    events_in = [message_start(), *text_block(0, "The answer", " is")]  # no message_stop
    stub.script(Reply.sse(events_in))
    seen = []
    async with client_for(stub.url) as client:
        with pytest.raises(ProviderError, match="message_stop"):
            async for event in client.stream("hi", None):
                seen.append(event)
    assert joined(seen, "text") == "The answer is"
    assert not of_type(seen, "done")


async def test_a_stream_ending_after_its_stop_reason_is_complete(stub):
    events_in = [message_start(), *text_block(0, "Fine."), message_end()[0]]
    stub.script(Reply.sse(events_in))
    async with client_for(stub.url) as client:
        events = await collect(client.stream("hi", None))
    assert events[-1]["result"].text == "Fine."


# ----------------------------------------------------------------------------- cross-style


def _assert_anthropic_wellformed(body: dict) -> None:
    """Roles alternate starting with user; every tool_use has its tool_result right after."""
    assert roles(body)[0] == "user"
    assert all(a != b for a, b in zip(roles(body), roles(body)[1:], strict=False))
    for i, message in enumerate(body["messages"]):
        assert isinstance(message["content"], list) and message["content"]
        for part in message["content"]:
            assert part["type"] in (
                "text",
                "tool_use",
                "tool_result",
                "thinking",
                "redacted_thinking",
            )
            if part["type"] == "text":
                assert part["text"]
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", u) for u in uses), uses
        if uses:
            nxt = body["messages"][i + 1]["content"]
            assert [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"] == uses


async def test_an_openai_thread_continues_on_anthropic(stub):
    stub.script(
        Reply.json(openai_tool_call([("add", {"a": 1, "b": 1}), ("echo", {"text": "yo"})])),
        Reply.json(openai_text("2 and yo")),
        Reply.json(anthropic_text("Continued.")),
    )
    kit = await tools()
    async with client_for(stub.base_url, style="openai") as first:
        before = await first.run("start", kit)
    async with client_for(stub.url) as second:
        after = await second.run("and now?", kit, history=before.messages)
    assert after.text == "Continued."
    assert stub.requests[2].path == "/v1/messages"
    body = sent(stub, 2)
    _assert_anthropic_wellformed(body)
    assert roles(body) == ["user", "assistant", "user", "assistant", "user"]
    assert [b["id"] for b in blocks_of(body, "tool_use")] == ["call_1", "call_2"]
    assert blocks_of(body, "tool_use")[0]["input"] == {"a": 1, "b": 1}
    assert [(b["tool_use_id"], b["content"]) for b in blocks_of(body, "tool_result")] == [
        ("call_1", "2"),
        ("call_2", "yo"),
    ]
    assert body["messages"][-1]["content"] == [{"type": "text", "text": "and now?"}]


async def test_an_anthropic_thread_continues_on_openai(stub):
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("nope")

    stub.script(
        anthropic_stream(
            thinking="Plan it", tool_calls=[("add", {"a": 2, "b": 2}), ("explode", {})]
        ),
        anthropic_stream("4, and explode failed."),
        Reply.json(openai_text("Sure.")),
    )
    kit = await tools(define_tool(explode))
    async with client_for(stub.url) as first:
        before = await collect(first.stream("start", kit))
    async with client_for(stub.base_url, style="openai") as second:
        after = await second.run("more?", kit, history=before[-1]["result"].messages)
    assert after.text == "Sure."
    assert stub.requests[2].path == "/v1/chat/completions"
    body = sent(stub, 2)
    allowed = {"role", "content", "tool_calls", "tool_call_id", "name"}
    for message in body["messages"]:
        assert set(message) <= allowed, message
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]
    calls = body["messages"][1]["tool_calls"]
    assert [c["id"] for c in calls] == ["toolu_1", "toolu_2"]
    assert calls[0]["function"] == {"name": "add", "arguments": '{"a": 2, "b": 2}'}
    assert [m["tool_call_id"] for m in body["messages"][2:4]] == ["toolu_1", "toolu_2"]
    assert "nope" in body["messages"][3]["content"]


async def test_an_anthropic_thread_round_trips_back_to_anthropic_after_openai(stub):
    stub.script(
        anthropic_stream(thinking="Think", tool_calls=[("echo", {"text": "a"})]),
        anthropic_stream("first"),
        Reply.json(openai_tool_call([("echo", {"text": "b"})])),
        Reply.json(openai_text("second")),
        Reply.json(anthropic_text("third")),
    )
    kit = await tools()
    async with client_for(stub.url) as a, client_for(stub.base_url, style="openai") as o:
        r1 = (await collect(a.stream("one", kit)))[-1]["result"]
        r2 = await o.run("two", kit, history=r1.messages)
        await a.run("three", kit, history=r2.messages)
    body = sent(stub, 4)
    _assert_anthropic_wellformed(body)
    assert [b["tool_use_id"] for b in blocks_of(body, "tool_result")] == ["toolu_1", "call_1"]
    assert blocks_of(body, "thinking")[0]["signature"] == "c3R1Yi1zaWduYXR1cmU="


async def test_foreign_tool_ids_are_made_valid_and_stay_paired(stub):
    """Some OpenAI-style servers name calls like "functions.add:0"; the Messages API only
    takes [a-zA-Z0-9_-] ids, so the tool_use and its tool_result are rewritten alike."""
    reply = openai_tool_call([("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})])
    calls = reply["choices"][0]["message"]["tool_calls"]
    calls[0]["id"], calls[1]["id"] = "functions.add:0", "functions.add:1"
    stub.script(
        Reply.json(reply), Reply.json(openai_text("3 and 7")), Reply.json(anthropic_text("ok"))
    )
    kit = await tools()
    async with client_for(stub.base_url, style="openai") as first:
        before = await first.run("start", kit)
    async with client_for(stub.url) as second:
        await second.run("again", kit, history=before.messages)
    body = sent(stub, 2)
    _assert_anthropic_wellformed(body)
    ids = [b["id"] for b in blocks_of(body, "tool_use")]
    assert len(set(ids)) == 2
    assert [b["tool_use_id"] for b in blocks_of(body, "tool_result")] == ids
    assert [b["content"] for b in blocks_of(body, "tool_result")] == ["3", "7"]
    assert before.messages[1]["tool_calls"][0]["id"] == "functions.add:0"  # transcript as is


# ----------------------------------------------------------------------------- server tools

SEARCH_ID = "srvtoolu_014hJH82Qum7Td6UV8gDXThB"
# the blocks of the web search reply in the docs' "Streaming Messages" example; the cited
# text block's citation as the anthropic SDK's CitationsWebSearchResultLocation
WEB_SEARCH = [
    {"type": "text", "text": "I'll check the current weather in New York City for you."},
    {
        "type": "server_tool_use",
        "id": SEARCH_ID,
        "name": "web_search",
        "input": {"query": "weather NYC today"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": SEARCH_ID,
        "content": [
            {
                "type": "web_search_result",
                "title": "Weather in New York City in May 2025 (New York) - detailed Weather "
                "Forecast for a month",
                "url": "https://world-weather.info/forecast/usa/new_york/may-2025/",
                "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k...",
                "page_age": None,
            }
        ],
    },
    {
        "type": "text",
        "text": "Here's the current weather information for New York City.",
        "citations": [
            {
                "type": "web_search_result_location",
                "cited_text": "Mostly sunny, 72°F",
                "url": "https://world-weather.info/forecast/usa/new_york/may-2025/",
                "title": "Weather in New York City in May 2025",
                "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm..",
            }
        ],
    },
]


async def test_server_tool_blocks_are_kept_in_order_and_go_back_verbatim(stub):
    """A web search reply (server_tool_use, web_search_tool_result, cited text) streamed as
    the docs show it: its blocks stay in the thread in their order and go back unchanged,
    also after the thread went through the other styles."""
    stub.script(
        anthropic_blocks_stream(WEB_SEARCH),
        Reply.json(openai_text("elsewhere")),
        Reply.json(anthropic_text("back")),
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("weather in NYC?", None))
        result = events[-1]["result"]
        async with client_for(stub.base_url, style="openai") as other:
            moved = await other.run("and tomorrow?", None, history=result.messages)
        await client.run("thanks", None, history=moved.messages)
    said = (
        "I'll check the current weather in New York City for you.Here's the current "
        "weather information for New York City."
    )
    assert joined(events, "text") == result.text == said
    assert sent(stub, 1)["messages"][1] == {"role": "assistant", "content": said}  # its text
    assert sent(stub, 2)["messages"][1] == {"role": "assistant", "content": WEB_SEARCH}


async def test_a_server_tool_call_goes_back_with_a_client_tool_use_of_the_same_turn(stub):
    """When Claude calls a server tool and a client tool together, the server_tool_use
    comes without a result and the reply ends with stop_reason "tool_use"; the API runs it
    when the client's tool_result comes back (platform.claude.com, "Server tools")."""
    fetch = {
        "type": "server_tool_use",
        "id": "srvtoolu_01WebFetch",
        "name": "web_fetch",
        "input": {"url": "https://example.com/article"},
    }
    blocks = [
        {"type": "text", "text": "Let me fetch it and echo a word."},
        fetch,
        {"type": "tool_use", "id": "toolu_01Echo", "name": "echo", "input": {"text": "hi"}},
    ]
    web_fetch = {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_01WebFetch",
        "content": {
            "type": "web_fetch_result",
            "url": "https://example.com/article",
            "retrieved_at": "2025-09-10T12:00:00Z",
            "content": {
                "type": "document",
                "title": "Article",
                "source": {"type": "text", "media_type": "text/plain", "data": "The article."},
            },
        },
    }
    stub.script(
        Reply.json(anthropic_message(blocks, "tool_use")),
        Reply.json(anthropic_message([web_fetch, {"type": "text", "text": "Done."}])),
    )
    async with client_for(stub.url) as client:
        result = await client.run("go", await tools())
    body = sent(stub, 1)
    assert body["messages"][1] == {"role": "assistant", "content": blocks}
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_01Echo", "content": "hi"}
    ]
    assert result.text == "Done." and result.status == "done"
    assert result.messages[-1]["anthropic_content"][0] == web_fetch  # kept for later


BASH_ID = "srvtoolu_01Bash"
PAUSED = [{"type": "text", "text": "Searching first. "}, *WEB_SEARCH[1:3]]
WENT_ON = [
    {
        "type": "server_tool_use",
        "id": BASH_ID,
        "name": "bash_code_execution",
        "input": {"command": "python -c 'print(6 * 7)'"},
    },
    {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": BASH_ID,
        "content": {
            "type": "bash_code_execution_result",
            "stdout": "42\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    },
    {"type": "text", "text": "It is 42."},
]


async def test_pause_turn_is_continued_by_sending_the_turn_back(stub):
    """stop_reason "pause_turn": the API paused a long server-side turn; it goes on when
    the assistant's content is sent back as it is (platform.claude.com, "Server tools":
    the server-side loop and pause_turn). It is never the end of the answer."""
    stub.script(
        anthropic_blocks_stream(PAUSED, stop="pause_turn"), anthropic_blocks_stream(WENT_ON)
    )
    async with client_for(stub.url) as client:
        events = await collect(client.stream("search, then compute", None))
    result = events[-1]["result"]
    assert sent(stub, 1)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "search, then compute"}]},
        {"role": "assistant", "content": PAUSED},
    ]
    assert (result.status, result.finish_reason, result.turns) == ("done", "end_turn", 2)
    assert joined(events, "text") == result.text == "Searching first. It is 42."
    [answer] = [m for m in result.messages if m["role"] == "assistant"]  # one turn
    assert answer["anthropic_content"] == PAUSED + WENT_ON


async def test_pause_turn_is_continued_only_up_to_max_turns(stub):
    stub.script(*[anthropic_blocks_stream(PAUSED, stop="pause_turn")] * 3)
    async with client_for(stub.url, max_turns=3) as client:
        events = await collect(client.stream("search forever", None))
    result = events[-1]["result"]
    assert len(stub.requests) == 3
    assert (result.status, result.incomplete_reason) == ("incomplete", "max_turns")
