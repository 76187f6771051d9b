"""style="responses" (the OpenAI Responses API) against the loopback stub: the request, streamed
and whole replies, parallel tool calls, reasoning summaries, encrypted reasoning, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.stream_events import joined, of_type
from tests.support.stub_provider import Reply, StubProvider, responses_reply, responses_stream
from toolnexus import ProviderError, create_client, create_toolkit, define_tool

pytestmark = pytest.mark.usefixtures("no_keys_in_env")

ENCRYPTED = "gAAAAABo-stub-encrypted-reasoning=="


def client_for(stub: StubProvider, **kw: Any):
    kw.setdefault("api_key", "sk-test")
    return create_client(base_url=stub.base_url, style="responses", model="gpt-test", **kw)


async def tools():
    """`echo(text)` and `add(a, b)`."""

    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo:{text}"

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return (await create_toolkit()).register(define_tool(echo), define_tool(add))


async def collect(client, prompt: str = "hi", toolkit=None, **kw: Any) -> list[dict]:
    return [event async for event in client.stream(prompt, toolkit, **kw)]


def ev(kind: str, **fields: Any) -> tuple[str, dict]:
    return kind, {"type": kind, **fields}


def completed(output: list | None = None, **usage: int) -> tuple[str, dict]:
    return ev(
        "response.completed",
        response={
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": output or [],
            "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5, **usage},
        },
    )


def items_of(body: dict, kind: str) -> list[dict]:
    return [item for item in body["input"] if item["type"] == kind]


# ----------------------------------------------------------------------------- the request


async def test_request_shape(stub):
    stub.script(responses_stream("Hello there"))
    async with client_for(stub, system_prompt="Be brief.") as client:
        events = await collect(client, "hello", await tools())
    req = stub.requests[0]
    assert (req.method, req.path) == ("POST", "/v1/responses")
    assert req.headers["authorization"] == "Bearer sk-test"
    body = req.json
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief."
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    ]
    assert body["tools"][0] == {
        "type": "function",
        "name": "echo",
        "description": "Echo the text back.",
        "parameters": body["tools"][0]["parameters"],
        "strict": False,
    }
    assert body["tools"][0]["parameters"]["required"] == ["text"]
    assert "messages" not in body
    assert joined(events, "text") == "Hello there" and len(of_type(events, "text")) > 1


async def test_the_key_comes_from_openai_api_key(stub, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    stub.script(Reply.json(responses_reply("ok")))
    async with client_for(stub, api_key=None) as client:
        await client.run("hi", None)
    assert stub.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_a_system_message_in_history_becomes_instructions(stub):
    stub.script(Reply.json(responses_reply("ok")))
    history = [{"role": "system", "content": "From history."}]
    async with client_for(stub, system_prompt="Ignored") as client:
        await client.run("hi", None, history=history)
    body = stub.requests[0].json
    assert body["instructions"] == "From history."
    assert [item["type"] for item in body["input"]] == ["message"]


# ----------------------------------------------------------------------------- replies


async def test_streamed_text_and_usage(stub):
    stub.script(responses_stream("It is noon.", reasoning="Look at the clock", usage=(12, 7)))
    async with client_for(stub) as client:
        events = await collect(client)
    result = events[-1]["result"]
    assert result.text == "It is noon." and result.finish_reason == "stop"
    assert result.usage == {
        "prompt_tokens": 12,
        "completion_tokens": 7,
        "total_tokens": 19,
        "reasoning_tokens": 4,
    }
    assert of_type(events, "usage")[-1]["usage"] == result.usage


async def test_non_streaming_reply(stub):
    stub.script(Reply.json(responses_reply("Whole answer", usage=(4, 2))))
    async with client_for(stub) as client:
        result = await client.run("hi", None)
    assert stub.requests[0].json["stream"] is False
    assert result.text == "Whole answer"
    assert result.usage == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_parallel_tool_calls_run_and_go_back_as_typed_items(stub, streamed):
    calls = [("echo", {"text": "A"}), ("add", {"a": 2, "b": 3})]
    first = (
        responses_stream(tool_calls=calls)
        if streamed
        else Reply.json(responses_reply(tool_calls=calls))
    )
    stub.script(first, responses_stream("Both done."))
    async with client_for(stub) as client:
        events = await collect(client, "go", await tools())
    assert [(e["id"], e["name"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("call_1", "echo", {"text": "A"}),
        ("call_2", "add", {"a": 2, "b": 3}),
    ]
    assert [e["output"] for e in of_type(events, "tool_result")] == ["echo:A", "5"]
    body = stub.requests[1].json
    assert all("type" in item for item in body["input"])
    assert [item["type"] for item in body["input"]] == [
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items_of(body, "function_call") == [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "echo",
            "arguments": '{"text": "A"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "add",
            "arguments": '{"a": 2, "b": 3}',
        },
    ]
    assert items_of(body, "function_call_output") == [
        {"type": "function_call_output", "call_id": "call_1", "output": "echo:A"},
        {"type": "function_call_output", "call_id": "call_2", "output": "5"},
    ]
    assert events[-1]["result"].text == "Both done."


async def test_interleaved_argument_deltas_are_kept_apart_by_output_index(stub):
    def call_item(index: int, name: str) -> tuple[str, dict]:
        return ev(
            "response.output_item.added",
            output_index=index,
            item={
                "id": f"fc_{index}",
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": f"call_{index}",
                "name": name,
            },
        )

    def delta(index: int, piece: str) -> tuple[str, dict]:
        return ev(
            "response.function_call_arguments.delta",
            item_id=f"fc_{index}",
            output_index=index,
            delta=piece,
        )

    stub.script(
        Reply.sse(
            [
                call_item(0, "echo"),
                call_item(1, "echo"),
                delta(1, '{"text": '),
                delta(0, '{"text": "x'),
                delta(1, '"y"}'),
                delta(0, '"}'),
                completed(),
            ]
        ),
        responses_stream("ok"),
    )
    async with client_for(stub) as client:
        events = await collect(client, "go", await tools())
    assert [(e["id"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("call_0", {"text": "x"}),
        ("call_1", {"text": "y"}),
    ]


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_reasoning_is_shown_and_encrypted_items_go_back_unchanged(stub, streamed):
    calls = [("echo", {"text": "r"})]
    first = (
        responses_stream(reasoning="Think first", encrypted=ENCRYPTED, tool_calls=calls)
        if streamed
        else Reply.json(
            responses_reply(reasoning="Think first", encrypted=ENCRYPTED, tool_calls=calls)
        )
    )
    stub.script(first, responses_stream("Done."))
    async with client_for(stub) as client:
        events = await collect(client, "go", await tools())
    assert joined(events, "reasoning") == "Think first"
    assert "Think" not in joined(events, "text")
    assistant = events[-1]["result"].messages[1]
    assert assistant["reasoning"] == "Think first"
    sent = stub.requests[1].json["input"]
    assert [item["type"] for item in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert sent[1] == {
        "id": "rs_stub1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Think first"}],
        "encrypted_content": ENCRYPTED,
    }


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_a_refusal_reaches_the_user_as_text(stub, streamed):
    refusal = "I can't help with that."
    stub.script(
        responses_stream(refusal=refusal)
        if streamed
        else Reply.json(responses_reply(refusal=refusal))
    )
    async with client_for(stub) as client:
        events = await collect(client)
    assert joined(events, "text") == refusal
    assert events[-1]["result"].text == refusal


async def test_an_incomplete_response_keeps_its_text_and_says_why(stub):
    stub.script(responses_stream("Cut short", end="incomplete"))
    async with client_for(stub) as client:
        events = await collect(client)
    result = events[-1]["result"]
    assert result.text == "Cut short" and result.finish_reason == "max_output_tokens"


# ----------------------------------------------------------------------------- errors


async def test_an_error_event_raises_with_the_providers_message(stub):
    stub.script(
        Reply.sse(
            [
                ev("response.created", response={"id": "resp_1", "status": "in_progress"}),
                ev(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    delta="Partial",
                ),
                ev("error", code="invalid_prompt", message="The prompt was flagged.", param=None),
            ]
        )
    )
    seen: list[dict] = []
    async with client_for(stub, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            async for event in client.stream("hi", None):
                seen.append(event)
    assert caught.value.provider_message == "The prompt was flagged."
    assert "The prompt was flagged." in str(caught.value)
    assert joined(seen, "text") == "Partial" and not of_type(seen, "done")


async def test_response_failed_raises_with_the_providers_message(stub):
    stub.script(
        Reply.sse(
            [
                ev("response.created", response={"id": "resp_1", "status": "in_progress"}),
                ev(
                    "response.failed",
                    response={
                        "id": "resp_1",
                        "status": "failed",
                        "output": [],
                        "error": {
                            "code": "invalid_image",
                            "message": "The image could not be read.",
                        },
                    },
                ),
            ]
        )
    )
    async with client_for(stub, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            await collect(client)
    assert caught.value.provider_message == "The image could not be read."
    assert len(stub.requests) == 1


async def test_a_server_error_before_any_output_is_retried(stub):
    stub.script(
        Reply.sse(
            [
                ev("response.created", response={"id": "resp_1", "status": "in_progress"}),
                ev(
                    "response.failed",
                    response={
                        "id": "resp_1",
                        "status": "failed",
                        "error": {"code": "server_error", "message": "The server had an error."},
                    },
                ),
            ]
        ),
        responses_stream("fine now"),
    )
    async with client_for(stub, retries=1, retry_base_ms=1) as client:
        events = await collect(client)
    assert len(of_type(events, "retry")) == 1 and joined(events, "text") == "fine now"


async def test_a_stream_without_response_completed_is_an_error_and_saves_nothing(stub):
    stub.script(responses_stream(tool_calls=[("echo", {"text": "never"})], end=None))
    async with client_for(stub) as client:
        with pytest.raises(ProviderError) as caught:
            await collect(client, "go", await tools(), id="t1")
        assert "the stream ended before the reply was complete" in str(caught.value)
        assert "response.completed" in str(caught.value)
        saved = await client.conversation_store.get("t1")
    assert [m["role"] for m in saved] == ["user"]
    assert len(stub.requests) == 1


async def test_a_failed_json_reply_raises(stub):
    body = responses_reply("x")
    body.update(status="failed", error={"code": "server_error", "message": "Boom."})
    stub.script(Reply.json(body))
    async with client_for(stub, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hi", None)
    assert "Boom." in str(caught.value)


async def test_unknown_events_are_ignored(stub):
    stub.script(
        Reply.sse(
            [
                ev("response.created", response={"id": "resp_1", "status": "in_progress"}),
                ev("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
                ev(
                    "response.output_text.annotation.added",
                    item_id="msg_1",
                    output_index=1,
                    annotation={"type": "url_citation"},
                ),
                ev(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=1,
                    content_index=0,
                    delta="cited",
                ),
                completed(),
            ]
        )
    )
    async with client_for(stub) as client:
        events = await collect(client)
    assert events[-1]["result"].text == "cited"
    assert json.dumps(events[-1]["result"].messages[-1]).count("cited") == 1


# ------------------------------------------------------------------------- answers without deltas


def created() -> tuple[str, dict]:
    return ev(
        "response.created",
        response={"id": "resp_1", "object": "response", "status": "in_progress", "output": []},
    )


def message_item(text: str) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "text": text}],
    }


async def test_an_answer_only_in_output_text_done_is_the_answer(stub):
    """A server that streams `response.created`, `response.output_text.done` and
    `response.completed` only, no delta (Sophomoresty/gemini-web2api#57, before its fix),
    still gives its answer, shown once."""
    stub.script(
        Reply.sse(
            [
                created(),
                ev(
                    "response.output_text.done",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    text="Only at the end.",
                ),
                completed(),
            ]
        )
    )
    async with client_for(stub) as client:
        events = await collect(client)
    assert [e["delta"] for e in of_type(events, "text")] == ["Only at the end."]
    assert events[-1]["result"].text == "Only at the end."
    assert events[-1]["result"].messages[-1]["content"] == "Only at the end."


async def test_an_answer_only_in_the_completed_response_is_the_answer(stub):
    """`response.completed` carries the whole response, its `output` included
    (openai-python src/openai/types/responses/response_completed_event.py): with no delta
    before it, that output is the answer."""
    stub.script(Reply.sse([created(), completed([message_item("All in one.")])]))
    async with client_for(stub) as client:
        events = await collect(client)
    assert joined(events, "text") == "All in one."
    assert events[-1]["result"].text == "All in one."


async def test_the_completed_response_is_what_is_kept_and_a_missed_tail_is_shown(stub):
    """Deltas that stop short of the item's text (vercel/ai#13844: xAI's stream dropped
    its last fragments) are completed from `response.output_item.done`; what is kept is the
    completed response's output."""
    stub.script(
        Reply.sse(
            [
                created(),
                ev(
                    "response.output_item.added",
                    output_index=0,
                    item={**message_item(""), "status": "in_progress", "content": []},
                ),
                ev(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    delta="The answer",
                ),
                ev(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    delta=" is",
                ),
                ev(
                    "response.output_item.done",
                    output_index=0,
                    item=message_item("The answer is 42."),
                ),
                completed([message_item("The answer is 42.")]),
            ]
        )
    )
    async with client_for(stub) as client:
        events = await collect(client)
    assert [e["delta"] for e in of_type(events, "text")] == ["The answer", " is", " 42."]
    assert events[-1]["result"].text == "The answer is 42."


async def test_deltas_with_an_empty_completed_output_are_the_answer(stub):
    """A gateway whose `response.completed` lists no output (mnfst/llm-gateway#2064) keeps
    what the deltas said."""
    stub.script(
        Reply.sse(
            [
                ev(
                    "response.output_text.delta",
                    item_id="msg_0",
                    output_index=0,
                    content_index=0,
                    delta="Hello",
                ),
                ev(
                    "response.output_text.delta",
                    item_id="msg_0",
                    output_index=0,
                    content_index=0,
                    delta="!",
                ),
                ev(
                    "response.completed",
                    response={
                        "status": "completed",
                        "output": [],
                        "usage": {"input_tokens": 1576, "output_tokens": 32, "total_tokens": 1608},
                    },
                ),
            ]
        )
    )
    async with client_for(stub) as client:
        events = await collect(client)
    result = events[-1]["result"]
    assert joined(events, "text") == result.text == "Hello!"
    assert result.usage["prompt_tokens"] == 1576


def with_call_ids(body: dict, call_id: str) -> dict:
    for item in body["output"]:
        if item["type"] == "function_call":
            item["call_id"] = call_id
    return body


@pytest.mark.parametrize(
    ("params", "expected"),
    [({}, ["call_0", "call_0_2"]), ({"previous_response_id": "resp_0"}, ["call_0", "call_0"])],
    ids=["stateless", "previous_response_id"],
)
async def test_repeated_call_ids_are_left_alone_where_the_server_keeps_the_turns(
    stub, params, expected
):
    """Repeated call ids (huggingface/smolagents#2683) are made unique when read, except
    with `previous_response_id`: the server then holds the earlier turns and matches each
    function_call_output to a call_id it named (platform.openai.com docs, "Conversation
    state"), so its ids stay as it sent them."""
    body = responses_reply(tool_calls=[("echo", {"text": "a"}), ("echo", {"text": "b"})])
    stub.script(Reply.json(with_call_ids(body, "call_0")), Reply.json(responses_reply("done")))
    async with client_for(stub, request_params=params) as client:
        result = await client.run("hi", await tools())
    outputs = items_of(stub.requests[1].json, "function_call_output")
    assert [item["call_id"] for item in outputs] == expected
    assert [call["id"] for call in result.messages[1]["tool_calls"]] == expected
