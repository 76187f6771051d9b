"""What holds for every wire style: the registry, a thread moving between styles, malformed
replies as one clear error, and the numbers of a context-overflow error."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from tests.support.scripted import calling, scripted_client
from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_blocks_stream,
    anthropic_stream,
    anthropic_text,
    openai_stream,
    openai_text,
    openai_tool_call,
    responses_reply,
    responses_stream,
)
from toolnexus import MemoryStore, ProviderError, create_client, create_toolkit, define_tool
from toolnexus.errors import ContextSize
from toolnexus.wire import KEY_ENVS, STYLES, ToolSpec, WireStyle

pytestmark = pytest.mark.usefixtures("no_keys_in_env")

ENCRYPTED = "gAAAAABo-encrypted=="
SIGNATURE = "c3R1Yi1zaWduYXR1cmU="


def client_for(stub: StubProvider, style: str, **kw: Any):
    kw.setdefault("api_key", "sk-test")
    base = stub.url if style == "anthropic" else stub.base_url
    return create_client(base_url=base, style=style, model="m", **kw)


async def tools():
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo:{text}"

    return (await create_toolkit()).register(define_tool(echo))


# ----------------------------------------------------------------------------- the registry


def test_every_style_is_a_wirestyle_that_names_its_key_variable():
    assert set(STYLES) == {"openai", "anthropic", "responses"}
    assert {name: s.key_env for name, s in STYLES.items()} == {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "responses": "OPENAI_API_KEY",
    }
    assert all(isinstance(s, WireStyle) and s.name == name for name, s in STYLES.items())
    # what the CLI's redactor reads without importing every style
    assert {name: s.key_env for name, s in STYLES.items()} == KEY_ENVS


def test_each_style_shapes_the_same_neutral_tool_its_own_way():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    spec = ToolSpec("find", "Find things.", schema)
    assert STYLES["openai"].tool_schemas([spec]) == [
        {
            "type": "function",
            "function": {"name": "find", "description": "Find things.", "parameters": schema},
        }
    ]
    assert STYLES["anthropic"].tool_schemas([spec]) == [
        {"name": "find", "description": "Find things.", "input_schema": schema}
    ]
    assert STYLES["responses"].tool_schemas([spec]) == [
        {
            "type": "function",
            "name": "find",
            "description": "Find things.",
            "parameters": schema,
            "strict": False,
        }
    ]


def test_an_unknown_style_lists_every_style():
    with pytest.raises(ValueError) as info:
        create_client(base_url="http://127.0.0.1:9/v1", style="gemini", model="m")
    assert all(name in str(info.value) for name in STYLES)


# ----------------------------------------------------------------------------- crossing styles


def _paired(call_ids: list[str], result_ids: list[str]) -> None:
    assert call_ids and sorted(call_ids) == sorted(result_ids)


async def test_a_thread_moves_between_all_three_styles_and_back(stub):
    stub.script(
        Reply.json(openai_tool_call([("echo", {"text": "o"})])),
        openai_stream("openai done"),
        anthropic_stream(thinking="Plan", tool_calls=[("echo", {"text": "a"})]),
        anthropic_stream("anthropic done"),
        responses_stream(
            reasoning="Hmm", encrypted=ENCRYPTED, tool_calls=[("echo", {"text": "r"})]
        ),
        responses_stream("responses done"),
        Reply.json(openai_text("openai again")),
        Reply.json(anthropic_text("anthropic again")),
        Reply.json(responses_reply("responses again")),
    )
    kit, store = await tools(), MemoryStore()
    for style in ("openai", "anthropic", "responses", "openai", "anthropic", "responses"):
        async with client_for(stub, style, store=store) as client:
            events = [e async for e in client.stream(f"on {style}", kit, id="thread")]
    result = events[-1]["result"]
    assert result.text == "responses again"
    assert [r.path for r in stub.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/messages",
        "/v1/responses",
        "/v1/responses",
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/responses",
    ]

    openai_body = stub.requests[6].json
    for message in openai_body["messages"]:
        assert set(message) <= {"role", "content", "tool_calls", "tool_call_id", "name"}
    _paired(
        [c["id"] for m in openai_body["messages"] for c in m.get("tool_calls") or []],
        [m["tool_call_id"] for m in openai_body["messages"] if m["role"] == "tool"],
    )
    assert len([m for m in openai_body["messages"] if m["role"] == "tool"]) == 3

    anthropic_body = stub.requests[7].json
    blocks = [b for m in anthropic_body["messages"] for b in m["content"]]
    _paired(
        [b["id"] for b in blocks if b["type"] == "tool_use"],
        [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"],
    )
    assert [b["signature"] for b in blocks if b["type"] == "thinking"] == [SIGNATURE]
    assert ENCRYPTED not in json.dumps(anthropic_body)

    responses_body = stub.requests[8].json
    items = responses_body["input"]
    assert all(item.get("type") for item in items)
    _paired(
        [i["call_id"] for i in items if i["type"] == "function_call"],
        [i["call_id"] for i in items if i["type"] == "function_call_output"],
    )
    assert [i["encrypted_content"] for i in items if i["type"] == "reasoning"] == [ENCRYPTED]
    assert SIGNATURE not in json.dumps(responses_body)
    said = [
        p["text"]
        for i in items
        if i["type"] == "message" and i["role"] == "assistant"
        for p in i["content"]
    ]
    assert said == [
        "openai done",
        "anthropic done",
        "responses done",
        "openai again",
        "anthropic again",
    ]


# ----------------------------------------------------------------------------- malformed replies

OPENAI_CHUNK = {"id": "c", "object": "chat.completion.chunk"}
ANTHROPIC_START = (
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    },
)


def _openai_message(**message: Any) -> dict:
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ]
    }


def _responses_completed(**response: Any) -> Reply:
    return Reply.sse(
        [
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {"status": "completed", "output": [], **response},
                },
            )
        ]
    )


MALFORMED = {
    "openai": [
        ("choices [null]", Reply.json({"choices": [None]})),
        ('choices "x"', Reply.json({"choices": "x"})),
        ("message 5", Reply.json({"choices": [{"message": 5}]})),
        ('usage "x"', Reply.json({**openai_text("hi"), "usage": "lots"})),
        ("usage not numeric", Reply.json({**openai_text("hi"), "usage": {"prompt_tokens": "x"}})),
        ("tool_calls {}", Reply.json(_openai_message(content=None, tool_calls={}))),
        ("content parts not objects", Reply.json(_openai_message(content=[5, "x"]))),
        ("a reply that is a list", Reply.json([1, 2])),
        ("stream: choices [null]", Reply.sse([{**OPENAI_CHUNK, "choices": [None]}], done=True)),
        ('stream: choices "x"', Reply.sse([{**OPENAI_CHUNK, "choices": "x"}], done=True)),
        ("stream: delta 5", Reply.sse([{**OPENAI_CHUNK, "choices": [{"delta": 5}]}], done=True)),
        (
            'stream: usage "x"',
            Reply.sse([{**OPENAI_CHUNK, "choices": [], "usage": "x"}], done=True),
        ),
        (
            "stream: usage not numeric",
            Reply.sse(
                [{**OPENAI_CHUNK, "choices": [], "usage": {"completion_tokens": [1]}}], done=True
            ),
        ),
        (
            "stream: tool_calls {}",
            Reply.sse([{**OPENAI_CHUNK, "choices": [{"delta": {"tool_calls": {}}}]}], done=True),
        ),
        (
            "stream: a tool call fragment 5",
            Reply.sse([{**OPENAI_CHUNK, "choices": [{"delta": {"tool_calls": [5]}}]}], done=True),
        ),
    ],
    "anthropic": [
        ("content blocks not objects", Reply.json({**anthropic_text("x"), "content": [5]})),
        ('usage "x"', Reply.json({**anthropic_text("x"), "usage": "x"})),
        (
            "usage not numeric",
            Reply.json({**anthropic_text("x"), "usage": {"input_tokens": "ten"}}),
        ),
        (
            "stream: content_block 5",
            Reply.sse(
                [
                    ANTHROPIC_START,
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": 5},
                    ),
                ]
            ),
        ),
        (
            "stream: delta a string",
            Reply.sse(
                [
                    ANTHROPIC_START,
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": "text"},
                    ),
                ]
            ),
        ),
        (
            "stream: message 5",
            Reply.sse([("message_start", {"type": "message_start", "message": 5})]),
        ),
        (
            'stream: usage "x"',
            Reply.sse(
                [
                    ANTHROPIC_START,
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn"},
                            "usage": "x",
                        },
                    ),
                ]
            ),
        ),
    ],
    "responses": [
        ("output items not objects", Reply.json({**responses_reply("x"), "output": [5]})),
        ('output "x"', Reply.json({**responses_reply("x"), "output": "x"})),
        (
            "content parts not objects",
            Reply.json(
                {
                    **responses_reply("x"),
                    "output": [{"type": "message", "role": "assistant", "content": [None]}],
                }
            ),
        ),
        ('usage "x"', Reply.json({**responses_reply("x"), "usage": "x"})),
        (
            "usage not numeric",
            Reply.json({**responses_reply("x"), "usage": {"output_tokens": "x"}}),
        ),
        (
            "stream: item 5",
            Reply.sse(
                [
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": 0, "item": 5},
                    )
                ]
            ),
        ),
        (
            "stream: delta 5",
            Reply.sse(
                [
                    (
                        "response.output_text.delta",
                        {"type": "response.output_text.delta", "output_index": 0, "delta": 5},
                    )
                ]
            ),
        ),
        (
            "stream: response 5",
            Reply.sse([("response.completed", {"type": "response.completed", "response": 5})]),
        ),
        ('stream: usage "x"', _responses_completed(usage="x")),
        ("stream: output item content 5", _responses_completed()),
    ],
}
MALFORMED["responses"][-1] = (
    "stream: output item content 5",
    Reply.sse(
        [
            (
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {"type": "message", "content": 5},
                },
            ),
            (
                "response.completed",
                {"type": "response.completed", "response": {"status": "completed"}},
            ),
        ]
    ),
)


@pytest.mark.parametrize(
    ("style", "reply"),
    [
        pytest.param(style, reply, id=f"{style}: {name}")
        for style, cases in MALFORMED.items()
        for name, reply in cases
    ],
)
async def test_a_malformed_reply_is_one_clear_provider_error(stub, style, reply):
    stub.script(reply)
    async with client_for(stub, style, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            async for _ in client.stream("hi", None):
                pass
    message = str(caught.value)
    assert "\n" not in message
    assert "malformed" in message or "well-formed" in message
    assert [m["role"] for m in caught.value.result.messages] == ["user"]


# ----------------------------------------------------------------------------- context overflow

LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5123,
        "n_ctx": 4096,
    }
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, "
        "your messages resulted in 9010 tokens. Please reduce the length of the "
        "messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 208310 tokens > 200000 maximum",
    },
}
RESPONSES = {
    "error": {
        "message": "Your input exceeds the context window of this model. "
        "Please adjust your input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    ("style", "body", "expected"),
    [
        ("openai", LLAMA_CPP, (5123, 4096)),
        ("responses", LLAMA_CPP, (5123, 4096)),
        ("openai", OPENAI, (9010, 8192)),
        ("anthropic", ANTHROPIC, (208310, 200000)),
        ("responses", RESPONSES, (None, None)),
        ("openai", {"error": {"message": "Invalid value for 'temperature'", "code": None}}, None),
    ],
    ids=[
        "llama.cpp",
        "llama.cpp-responses",
        "openai",
        "anthropic",
        "responses-no-numbers",
        "not-an-overflow",
    ],
)
async def test_a_context_overflow_error_carries_its_numbers(stub, style, body, expected):
    stub.script(Reply.json(body, status=400))
    async with client_for(stub, style) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("a very long prompt", None)
    overflow = caught.value.context_overflow
    assert overflow == (None if expected is None else ContextSize(*expected))
    if expected is not None:
        assert caught.value.hint and "too long" in caught.value.hint
        assert overflow.used == expected[0] and overflow.window == expected[1]


async def test_a_context_overflow_sent_inside_a_stream_carries_its_numbers(stub):
    stub.script(Reply.sse([("error", {"type": "error", "error": ANTHROPIC["error"]})]))
    async with client_for(stub, "anthropic", retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            async for _ in client.stream("hi", None):
                pass
    assert caught.value.context_overflow == ContextSize(208310, 200000)


# ----------------------------------------------------------------------------- cut off


async def _streamed(client: Any, prompt: str, toolkit: Any = None) -> Any:
    return [event async for event in client.stream(prompt, toolkit)][-1]["result"]


@pytest.mark.parametrize(
    ("style", "reply", "reason"),
    [
        ("openai", openai_stream("Roses are", finish="length"), "length"),
        ("anthropic", anthropic_stream("Roses are", stop="max_tokens"), "max_tokens"),
        ("responses", responses_stream("Roses are", end="incomplete"), "max_output_tokens"),
    ],
    ids=["openai", "anthropic", "responses"],
)
async def test_an_answer_cut_off_by_the_length_limit_is_incomplete(stub, style, reply, reason):
    stub.script(reply)
    async with client_for(stub, style) as client:
        result = await _streamed(client, "a poem")
    assert result.text == "Roses are"
    assert result.status == "incomplete" and result.incomplete_reason == "max_tokens"
    assert result.finish_reason == reason  # in the provider's own words


AZURE_FILTERED = {
    "hate": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": True, "severity": "medium"},
}


def _azure_filtered_reply() -> Reply:
    """A whole reply Azure's content filter emptied: no content, finish_reason
    "content_filter", the filter's verdict per category beside it."""
    body = openai_text("")
    body["choices"][0].update(
        finish_reason="content_filter",
        message={"role": "assistant", "content": None},
        content_filter_results=AZURE_FILTERED,
    )
    return Reply.json(body)


@pytest.mark.parametrize(
    ("style", "reply", "text", "finish", "why"),
    [
        # openai-python's ChatCompletionChunk: finish_reason "content_filter" "if content was
        # omitted due to a flag from our content filters" (commit f10c757); Azure's filter
        # ends a stream with it on the last chunk, or empties a whole reply
        (
            "openai",
            openai_stream("Here is how", finish="content_filter"),
            "Here is how",
            "content_filter",
            "content_filter",
        ),
        ("openai", _azure_filtered_reply(), "", "content_filter", "content_filter"),
        # Anthropic: the stop reason a model's context window filling up mid-answer gives
        # (anthropic-sdk-python v0.119.0, "add new stop reason 'model_context_window_exceeded'")
        (
            "anthropic",
            anthropic_stream("Chapter one", stop="model_context_window_exceeded"),
            "Chapter one",
            "model_context_window_exceeded",
            "context_window",
        ),
        # Responses: response.incomplete's incomplete_details.reason, "max_output_tokens" or
        # "content_filter" (openai-python types/responses/response.py), or any other
        (
            "responses",
            responses_stream("Here is how", end="incomplete", why="content_filter"),
            "Here is how",
            "content_filter",
            "content_filter",
        ),
        (
            "responses",
            responses_stream("Here is how", end="incomplete", why="a_new_reason"),
            "Here is how",
            "a_new_reason",
            "cut_off",
        ),
    ],
    ids=[
        "openai-filter-stream",
        "azure-filter-json",
        "anthropic-context-window",
        "responses-filter",
        "responses-any-reason",
    ],
)
async def test_every_other_cut_off_is_incomplete_with_its_reason(
    stub, style, reply, text, finish, why
):
    stub.script(reply)
    async with client_for(stub, style) as client:
        result = await _streamed(client, "a story")
    assert result.text == text
    assert (result.status, result.incomplete_reason, result.finish_reason) == (
        "incomplete",
        why,
        finish,
    )
    assert result.messages[-1]["role"] == "assistant"
    assert "dropped" not in result.messages[-1]  # kept and sent: only a refusal is not


async def test_running_out_of_turns_is_incomplete_for_another_reason(scripted):
    scripted.add(*[calling(("echo", {"text": str(n)})) for n in range(2)])
    async with scripted_client(scripted, max_turns=2) as client:
        result = await _streamed(client, "loop", await tools())
    assert result.status == "incomplete" and result.incomplete_reason == "max_turns"
    scripted.add("All of it.")
    async with scripted_client(scripted) as client:
        whole = await _streamed(client, "a poem")
    assert whole.status == "done" and whole.incomplete_reason is None


# ----------------------------------------------------------------------------- refusals

REFUSAL = "I can't help with that."


def _openai_refusal() -> Reply:
    """A whole reply whose message is a refusal: content null, `refusal` set
    (openai-python ChatCompletionMessage.refusal, structured outputs)."""
    body = openai_text("")
    body["choices"][0]["message"].update(content=None, refusal=REFUSAL)
    return Reply.json(body)


def _openai_refusal_deltas() -> Reply:
    """The same refusal streamed as `refusal` deltas (ChoiceDelta.refusal)."""

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**OPENAI_CHUNK, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return Reply.sse(
        [
            chunk({"role": "assistant", "content": None, "refusal": "I can't "}),
            chunk({"refusal": "help with that."}),
            chunk({}, "stop"),
        ],
        done=True,
    )


@pytest.mark.parametrize(
    ("style", "refusal", "shown"),
    [
        # Anthropic's streaming classifiers stop an answer with stop_reason "refusal"; the turn
        # must be left out or changed before going on, or the refusals continue
        # (platform.claude.com, "Streaming refusals")
        (
            "anthropic",
            anthropic_stream("Here is the first st", stop="refusal"),
            "Here is the first st",
        ),
        ("openai", _openai_refusal(), REFUSAL),
        ("openai", _openai_refusal_deltas(), REFUSAL),
        ("responses", responses_stream(refusal=REFUSAL), REFUSAL),
    ],
    ids=[
        "anthropic-stop-reason",
        "openai-refusal-field",
        "openai-refusal-deltas",
        "responses-refusal-part",
    ],
)
async def test_a_refused_answer_is_kept_marked_and_never_sent_again(stub, style, refusal, shown):
    later = {
        "openai": openai_stream("Sure."),
        "anthropic": anthropic_stream("Sure."),
        "responses": responses_stream("Sure."),
    }
    stub.script(refusal, later[style], Reply.json(openai_text("Still fine.")))
    store = MemoryStore()
    async with client_for(stub, style, store=store) as client:
        events = [e async for e in client.stream("the bad question", None, id="t")]
        answered = [e async for e in client.stream("something else", None, id="t")]
    refused = events[-1]["result"]
    assert refused.text == shown
    assert (refused.status, refused.incomplete_reason) == ("incomplete", "refused")
    assert answered[-1]["result"].status == "done"
    async with client_for(stub, "openai", store=store) as other:  # on another style too
        await other.run("and more", None, history=await store.get("t"))
    for request in stub.requests[1:]:
        assert "the bad question" not in request.body.decode()
        assert shown not in request.body.decode()
    thread = await store.get("t")
    assert [(m["role"], m.get("dropped")) for m in thread] == [
        ("user", "refused"),
        ("assistant", "refused"),
        ("user", None),
        ("assistant", None),
    ]
    assert thread[1]["content"] == shown  # kept as it was said


# ------------------------------------------------------------------ new fields, every style

OPENROUTER_DETAILS = [
    {
        "type": "reasoning.text",
        "text": "Check the echo first.",
        "signature": "sig-or-1",
        "id": "reasoning-text-1",
        "format": "anthropic-claude-v1",
        "index": 0,
    }
]
SEARCH_BLOCKS = [
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01A",
        "name": "web_search",
        "input": {"query": "echo"},
    },
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01A",
        "content": [
            {
                "type": "web_search_result",
                "title": "Echo",
                "url": "https://example.com/echo",
                "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3",
                "page_age": None,
            }
        ],
    },
    {"type": "text", "text": "Found it."},
]


async def test_the_new_fields_round_trip_through_every_style(stub, monkeypatch):
    """A thread started on OpenRouter (reasoning_details with a tool call) goes on with
    Anthropic's web search (server tool blocks), then the Responses API and a plain chat
    completions server, and back: each provider gets back exactly what it needs from its
    own turns, the others never see it, and the stored thread (JSON) keeps it all."""
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", stub.url)  # openrouter.ai by its name, via the stub
    reply = openai_tool_call([("echo", {"text": "a"})])
    reply["choices"][0]["message"].update(
        reasoning="Check the echo first.", reasoning_details=OPENROUTER_DETAILS
    )
    stub.script(
        Reply.json(reply),
        Reply.json(openai_text("echoed")),
        anthropic_blocks_stream(SEARCH_BLOCKS),
        responses_stream("third"),
        openai_stream("fourth"),
        Reply.json(openai_text("fifth")),
        Reply.json(anthropic_text("sixth")),
    )
    kit = await tools()
    async with contextlib.AsyncExitStack() as open_clients:
        openrouter, claude, responses, chat = [
            await open_clients.enter_async_context(c)
            for c in (
                create_client(
                    base_url="http://openrouter.ai/api/v1",
                    style="openai",
                    model="m",
                    api_key="sk-or",
                    retries=0,
                ),
                client_for(stub, "anthropic"),
                client_for(stub, "responses"),
                client_for(stub, "openai"),
            )
        ]
        messages: list = []
        for client in (openrouter, claude, responses, chat, openrouter, claude):
            result = await client.run("go on", kit, history=messages)
            messages = json.loads(json.dumps(result.messages))  # as a store keeps it
    bodies = [json.dumps(r.json) for r in stub.requests]
    assert all("reasoning_details" not in body for body in bodies[2:5])
    assert json.loads(bodies[5])["messages"][1]["reasoning_details"] == OPENROUTER_DETAILS
    assert all("srvtoolu_01A" not in body for body in bodies[3:6])
    anthropic_turn = [m for m in json.loads(bodies[6])["messages"] if m["role"] == "assistant"][2]
    assert anthropic_turn["content"] == SEARCH_BLOCKS
    assert "signature" not in bodies[6] and "sig-or-1" not in bodies[6]
    assert result.text == "sixth"
