"""style="openai" against the loopback stub: the request, every stream variant real servers
send, non-streaming replies (the loop itself is tests/library/test_loop.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.openai_wire import calls, chunk, frag, sse, wire_calls, wire_results
from tests.support.resilience_helpers import echo_toolkit
from tests.support.stream_events import joined, of_type, result_of, stream
from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_text,
    openai_stream,
    openai_text,
    openai_tool_call,
    responses_stream,
)
from toolnexus import ProviderError, create_client, create_toolkit

pytestmark = pytest.mark.usefixtures("no_keys_in_env")

# ----------------------------------------------------------------------------- helpers


@pytest.fixture
async def make_client(stub):
    """Build clients on the stub; they are closed after the test."""
    clients = []

    def make(**kw: Any):
        kw.setdefault("api_key", "sk-test")
        client = create_client(base_url=stub.base_url, style="openai", model="m", **kw)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
async def toolkit():
    return await echo_toolkit()


FINAL = openai_stream("done")

# ----------------------------------------------------------------------------- the request


async def test_stream_request_shape(stub, make_client):
    stub.script(openai_stream("Hello there"))
    events = await stream(make_client(system_prompt="Be brief."), "hello", await create_toolkit())
    req = stub.requests[0]
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.json["model"] == "m"
    assert req.json["stream"] is True
    assert req.json["stream_options"] == {"include_usage": True}
    assert "tools" not in req.json and "tool_choice" not in req.json
    assert req.json["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert joined(events, "text") == "Hello there" and len(of_type(events, "text")) > 1


async def test_run_request_is_not_streaming_and_carries_the_tools(stub, make_client, toolkit):
    stub.script(Reply.json(openai_text("fine")))
    result = await make_client(system_prompt="S").run("hello", toolkit)
    body = stub.requests[0].json
    assert body["stream"] is False and "stream_options" not in body
    assert body["tools"] == toolkit.to_openai()
    assert [t["function"]["name"] for t in body["tools"]] == ["echo", "now"]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["text"]
    assert body["messages"][0] == {"role": "system", "content": "S"}
    assert result.text == "fine" and result.status == "done"


async def test_no_key_sends_no_auth_header_and_401_names_the_variable(stub, make_client):
    stub.script(Reply.error(401, "You didn't provide an API key."))
    with pytest.raises(ProviderError) as caught:
        await make_client(api_key=None).run("hi", None)
    assert "authorization" not in stub.requests[0].headers
    assert caught.value.status == 401
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "You didn't provide an API key." in str(caught.value)


@pytest.mark.parametrize(
    ("api_key", "env", "expected"),
    [
        ("sk-arg", {"OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-or"}, "sk-arg"),
        (None, {"OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-or"}, "sk-openai"),
        (None, {"OPENROUTER_API_KEY": "sk-or", "ANTHROPIC_API_KEY": "sk-ant"}, "sk-or"),
        (None, {"ANTHROPIC_API_KEY": "sk-ant"}, None),
    ],
    ids=["argument", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "not-the-anthropic-key"],
)
async def test_key_fallback_order(stub, make_client, monkeypatch, api_key, env, expected):
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    stub.script(Reply.json(openai_text("ok")))
    await make_client(api_key=api_key).run("hi", None)
    sent = stub.requests[0].headers.get("authorization")
    assert sent == (f"Bearer {expected}" if expected else None)


# ----------------------------------------------------------------------------- tool-call assembly


async def test_arguments_empty_first_then_whole(stub, make_client, toolkit):
    stub.script(
        sse(
            chunk({"role": "assistant", "content": None}),
            calls(frag(0, "call_a", "echo", "")),
            calls(frag(0, args='{"text": "hi"}')),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [(e["id"], e["name"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("call_a", "echo", {"text": "hi"})
    ]
    assert toolkit.seen == [{"text": "hi"}]
    assert wire_calls(stub)[0]["function"] == {"name": "echo", "arguments": '{"text": "hi"}'}
    assert wire_results(stub) == [{"role": "tool", "tool_call_id": "call_a", "content": "echo:hi"}]
    assert result_of(events).text == "done"


@pytest.mark.parametrize(
    "trailing",
    [[], [frag(0, args="")], [frag(0, args=None)]],
    ids=["alone", "then-empty", "then-null"],
)
async def test_whole_arguments_in_the_first_fragment_count_once(
    stub, make_client, toolkit, trailing
):
    stub.script(
        sse(
            calls(frag(0, "call_a", "now", "{}")),
            *[calls(f) for f in trailing],
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [e["args"] for e in of_type(events, "tool_call")] == [{}]
    assert of_type(events, "tool_result")[0]["output"] == "noon"
    assert [c["function"]["arguments"] for c in wire_calls(stub)] == ["{}"]


@pytest.mark.parametrize("first_args", [None, ...], ids=["null", "missing"])
async def test_null_or_missing_arguments_count_as_empty(stub, make_client, toolkit, first_args):
    stub.script(
        sse(
            calls(frag(0, "call_a", "echo", first_args)),
            calls(frag(0, args='{"te')),
            calls(frag(0)),  # a fragment without "arguments" at all
            calls(frag(0, args=None)),
            calls(frag(0, args='xt": "x"}')),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [e["args"] for e in of_type(events, "tool_call")] == [{"text": "x"}]
    assert toolkit.seen == [{"text": "x"}]


async def test_call_that_never_gets_arguments_runs_with_none(stub, make_client, toolkit):
    stub.script(sse(calls(frag(0, "call_a", "now", None)), chunk(finish="tool_calls")), FINAL)
    events = await stream(make_client(), toolkit=toolkit)
    assert of_type(events, "tool_result")[0]["output"] == "noon"
    assert json.loads(wire_calls(stub)[0]["function"]["arguments"]) == {}


async def test_two_parallel_calls_grouped_by_index(stub, make_client, toolkit):
    stub.script(
        sse(
            calls(frag(0, "call_a", "echo", ""), frag(1, "call_b", "echo", "")),
            calls(frag(1, args='{"text"')),
            calls(frag(0, args='{"text": "A"}')),
            calls(frag(1, args=': "B"}')),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [(e["id"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("call_a", {"text": "A"}),
        ("call_b", {"text": "B"}),
    ]
    assert [(r["tool_call_id"], r["content"]) for r in wire_results(stub)] == [
        ("call_a", "echo:A"),
        ("call_b", "echo:B"),
    ]


@pytest.mark.parametrize("second", ["now", "echo"], ids=["other-function", "same-function"])
async def test_new_name_at_a_completed_index_starts_a_new_call(stub, make_client, toolkit, second):
    args = "{}" if second == "now" else '{"text": "2"}'
    stub.script(
        sse(
            calls(frag(0, name="echo", args='{"text": "1"}')),
            calls(frag(0, name=second, args=args)),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [(e["name"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("echo", {"text": "1"}),
        (second, json.loads(args)),
    ]
    ids = [c["id"] for c in wire_calls(stub)]
    assert len(set(ids)) == 2
    assert [r["tool_call_id"] for r in wire_results(stub)] == ids


async def test_repeated_id_and_name_continue_the_same_call(stub, make_client, toolkit):
    # Some servers repeat id and name on every fragment, also after the JSON is complete.
    stub.script(
        sse(
            calls(frag(0, "call_a", "echo", '{"text":')),
            calls(frag(0, "call_a", "echo", ' "z"}')),
            calls(frag(0, "call_a", "echo", ""), finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [(e["id"], e["args"]) for e in of_type(events, "tool_call")] == [
        ("call_a", {"text": "z"})
    ]
    assert toolkit.seen == [{"text": "z"}]
    assert [r["tool_call_id"] for r in wire_results(stub)] == ["call_a"]


async def test_repeated_name_without_id_continues_an_unfinished_call(stub, make_client, toolkit):
    stub.script(
        sse(
            calls(frag(0, name="echo", args='{"text":')),
            calls(frag(0, name="echo", args=' "y"}')),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert [e["args"] for e in of_type(events, "tool_call")] == [{"text": "y"}]


async def test_gemini_style_calls_without_index_or_id(stub, make_client, toolkit):
    stub.script(
        sse(
            calls(
                frag(name="echo", args='{"text": "a"}'),
                frag(name="echo", args='{"text": "b"}'),
                frag(name="now", args="{}"),
            ),
            chunk(finish="stop"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    call_events = of_type(events, "tool_call")
    assert [(e["name"], e["args"]) for e in call_events] == [
        ("echo", {"text": "a"}),
        ("echo", {"text": "b"}),
        ("now", {}),
    ]
    ids = [e["id"] for e in call_events]
    assert len(set(ids)) == 3 and all(ids)
    assert [c["id"] for c in wire_calls(stub)] == ids
    assert [(r["tool_call_id"], r["content"]) for r in wire_results(stub)] == [
        (ids[0], "echo:a"),
        (ids[1], "echo:b"),
        (ids[2], "noon"),
    ]
    assert [e["id"] for e in of_type(events, "tool_result")] == ids


async def test_indexed_calls_without_id_get_unique_ids(stub, make_client, toolkit):
    stub.script(
        sse(
            calls(frag(0, name="echo", args=""), frag(1, name="echo", args="")),
            calls(frag(0, args='{"text": "a"}'), frag(1, args='{"text": "b"}')),
            chunk(finish="tool_calls"),
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    ids = [e["id"] for e in of_type(events, "tool_call")]
    assert len(set(ids)) == 2 and all(ids)
    assert [c["id"] for c in wire_calls(stub)] == ids
    assert [r["tool_call_id"] for r in wire_results(stub)] == ids
    assert result_of(events).tool_calls == [
        {"id": ids[0], "name": "echo", "args": {"text": "a"}},
        {"id": ids[1], "name": "echo", "args": {"text": "b"}},
    ]


async def test_tool_calls_found_without_any_finish_reason(stub, make_client, toolkit):
    stub.script(sse(calls(frag(0, "call_a", "echo", '{"text": "q"}'))), FINAL)
    events = await stream(make_client(), toolkit=toolkit)
    assert toolkit.seen == [{"text": "q"}]
    assert result_of(events).text == "done" and len(stub.requests) == 2


async def test_tool_calls_found_when_the_stream_ends_without_done(stub, make_client, toolkit):
    stub.script(
        sse(
            calls(frag(0, "call_a", "echo", '{"text": "q"}')),
            chunk(finish="tool_calls"),
            done=False,
        ),
        FINAL,
    )
    events = await stream(make_client(), toolkit=toolkit)
    assert toolkit.seen == [{"text": "q"}] and result_of(events).text == "done"


@pytest.mark.parametrize(
    "script",
    [
        [chunk({"content": "Half an ans"})],
        [calls(frag(0, "call_a", "echo", '{"text": "q"}'))],
        [],
    ],
    ids=["text", "tool-call", "nothing"],
)
async def test_a_stream_without_done_or_finish_reason_is_an_error(
    stub, make_client, toolkit, script
):
    stub.script(sse(*script, done=False))
    client = make_client()
    with pytest.raises(ProviderError) as caught:
        await stream(client, toolkit=toolkit)
    assert "the stream ended before the reply was complete" in str(caught.value)
    assert toolkit.seen == [] and len(stub.requests) == 1
    # what the user saw of the text is kept, marked; a cut-off call or nothing leaves no
    # assistant message at all
    kept = [m for m in caught.value.result.messages if m["role"] == "assistant"]
    assert kept == (
        [{"role": "assistant", "content": "Half an ans", "interrupted": True}]
        if script and "content" in script[0]["choices"][0]["delta"]
        else []
    )


# ----------------------------------------------------------------------------- usage, reasoning


USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


@pytest.mark.parametrize(
    "events",
    [
        [
            chunk({"content": "ok"}, usage=None),
            chunk(finish="stop", usage=None),
            {"choices": [], "usage": USAGE},
        ],
        [chunk({"content": "ok"}), chunk(finish="stop", usage=USAGE)],
        [
            chunk({"content": "ok"}, finish="stop", usage=USAGE),
            chunk(usage=None),
            {"choices": [], "usage": None},
        ],
    ],
    ids=["empty-choices-chunk", "content-chunk", "then-null"],
)
async def test_usage_on_any_chunk(stub, make_client, events):
    stub.script(sse(*events))
    got = await stream(make_client())
    assert result_of(got).usage == USAGE
    assert of_type(got, "usage")[-1]["usage"] == USAGE
    assert joined(got, "text") == "ok"


async def test_no_usage_at_all_is_zero(stub, make_client):
    stub.script(sse(chunk({"content": "ok"}, usage=None), chunk(finish="stop")))
    result = result_of(await stream(make_client()))
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_reasoning_deltas_are_reasoning_events_only(stub, make_client, key):
    stub.script(
        sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({key: "Let me ", "content": None}),
            chunk({key: "think.", "content": ""}),
            chunk({"content": "Answer", key: None}),
            chunk({"content": " here."}, finish="stop"),
        ),
        Reply.json(openai_text("again")),
    )
    client = make_client()
    events = await stream(client)
    assert joined(events, "reasoning") == "Let me think."
    assert joined(events, "text") == "Answer here."
    result = result_of(events)
    assert result.text == "Answer here."
    # The reasoning never reaches the wire as text in a follow-up either.
    await client.run("next", None, history=result.messages)
    sent = stub.requests[1].json["messages"]
    assert sent[1] == {"role": "assistant", "content": "Answer here."}


async def test_chunks_with_empty_choices_are_skipped(stub, make_client):
    stub.script(
        sse(
            {"id": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
            chunk({"role": "assistant", "content": "A"}),
            {"id": "chatcmpl-x", "choices": []},
            {"id": "chatcmpl-x", "choices": None},
            chunk({"content": "B"}, finish="stop"),
        )
    )
    events = await stream(make_client())
    assert joined(events, "text") == "AB" and result_of(events).text == "AB"


# ----------------------------------------------------------------------------- errors in the stream


async def test_error_object_inside_the_stream_raises(stub, make_client):
    stub.script(
        sse(
            chunk({"content": "Partial"}),
            {"error": {"message": "Upstream provider overloaded", "code": 502}},
            chunk({"content": " never"}, finish="stop"),
        )
    )
    seen: list[dict] = []
    with pytest.raises(ProviderError) as caught:
        async for event in make_client().stream("hi", None):
            seen.append(event)
    assert caught.value.provider_message == "Upstream provider overloaded"
    assert "Upstream provider overloaded" in str(caught.value)
    assert joined(seen, "text") == "Partial"
    assert not of_type(seen, "done")


async def test_stream_event_that_is_not_json_raises(stub, make_client):
    stub.script(sse(chunk({"content": "a"}), "<html>Bad Gateway</html>"))
    with pytest.raises(ProviderError) as caught:
        await stream(make_client())
    assert "not JSON" in str(caught.value) and "Bad Gateway" in str(caught.value)


async def test_streaming_request_answered_with_a_plain_json_body(stub, make_client):
    stub.script(Reply.json(openai_text("whole answer", usage=(4, 2))))
    events = await stream(make_client())
    assert [e["type"] for e in events] == ["text", "usage", "done"]
    assert events[0]["delta"] == "whole answer"
    result = result_of(events)
    assert result.text == "whole answer"
    assert result.usage == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}


async def test_streaming_request_answered_with_json_tool_call(stub, make_client, toolkit):
    stub.script(Reply.json(openai_tool_call([("echo", {"text": "j"})])), FINAL)
    events = await stream(make_client(), toolkit=toolkit)
    assert toolkit.seen == [{"text": "j"}] and result_of(events).text == "done"


# ----------------------------------------------------------------------------- non-streaming


@pytest.mark.parametrize("args", ['{"text": "s"}', {"text": "s"}], ids=["string", "object"])
async def test_non_streaming_arguments_string_or_object(stub, make_client, toolkit, args):
    reply = openai_tool_call([("echo", "{}")])
    reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = args
    stub.script(Reply.json(reply), Reply.json(openai_text("fin")))
    result = await make_client().run("hi", toolkit)
    assert toolkit.seen == [{"text": "s"}]
    assert result.tool_calls == [{"id": "call_1", "name": "echo", "args": {"text": "s"}}]
    sent = wire_calls(stub)[0]["function"]["arguments"]
    assert isinstance(sent, str) and json.loads(sent) == {"text": "s"}
    assert wire_results(stub) == [{"role": "tool", "tool_call_id": "call_1", "content": "echo:s"}]
    assert result.text == "fin"


async def test_non_streaming_calls_without_id_get_unique_ids(stub, make_client, toolkit):
    reply = openai_tool_call([("echo", {"text": "a"}), ("echo", {"text": "b"})])
    for call in reply["choices"][0]["message"]["tool_calls"]:
        del call["id"]
    stub.script(Reply.json(reply), Reply.json(openai_text("fin")))
    result = await make_client().run("hi", toolkit)
    ids = [c["id"] for c in result.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert [c["id"] for c in wire_calls(stub)] == ids
    assert [r["tool_call_id"] for r in wire_results(stub)] == ids


# ----------------------------------------------------------------------------- signatures, refusals

GEMINI_SIG = {"google": {"thought_signature": "CiQBcsjafQ-stub-signature=="}}


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_gemini_thought_signatures_go_back_with_their_tool_calls(
    stub, make_client, toolkit, streamed
):
    """Gemini's OpenAI-compatible endpoint signs each tool call under extra_content; the
    next request must carry each signature back on its own call, unchanged."""
    if streamed:
        first = sse(
            calls(
                {**frag(0, "fc-1", "echo", '{"text": "a"}'), "extra_content": GEMINI_SIG},
                {**frag(1, "fc-2", "now", "{}")},
            ),
            chunk(finish="tool_calls"),
        )
    else:
        reply = openai_tool_call([("echo", {"text": "a"}), ("now", {})])
        reply["choices"][0]["message"]["tool_calls"][0]["extra_content"] = GEMINI_SIG
        first = Reply.json(reply)
    stub.script(first, FINAL, FINAL)
    client = make_client()
    events = await stream(client, toolkit=toolkit)
    [signed, unsigned] = wire_calls(stub)
    assert signed["extra_content"] == GEMINI_SIG
    assert "extra_content" not in unsigned
    # kept in the transcript: a thread continued later still sends it
    await client.run("again", toolkit, history=result_of(events).messages)
    assert wire_calls(stub, 2)[0]["extra_content"] == GEMINI_SIG


async def test_a_streamed_refusal_is_shown_as_text(stub, make_client):
    stub.script(
        sse(
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            chunk({"refusal": "I can't "}),
            chunk({"refusal": "help with that."}),
            chunk(finish="stop"),
        )
    )
    events = await stream(make_client())
    assert joined(events, "text") == "I can't help with that."
    assert result_of(events).text == "I can't help with that."


async def test_a_refusal_in_a_whole_reply_is_shown_as_text(stub, make_client):
    reply = openai_text("")
    reply["choices"][0]["message"].update(content=None, refusal="I won't do that.")
    stub.script(Reply.json(reply))
    events = await stream(make_client())
    assert joined(events, "text") == "I won't do that."
    assert result_of(events).text == "I won't do that."


# ----------------------------------------------------------------------------- shapes not to lose


async def test_usage_under_x_groq_in_the_last_chunk(stub, make_client):
    """Groq puts a stream's usage under `x_groq` in its last chunk (the chunk as quoted in
    vercel/ai#1651)."""
    last = {
        "id": "chatcmpl-8566e76f",
        "object": "chat.completion.chunk",
        "created": 1716131679,
        "model": "llama3-8b-8192",
        "system_fingerprint": "fp_179b0f92c9",
        "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
        "x_groq": {
            "id": "req_01hy8ppkajfqk987jv2vx88m9r",
            "usage": {
                "queue_time": 0.07535312,
                "prompt_tokens": 23,
                "prompt_time": 0.006,
                "completion_tokens": 19,
                "completion_time": 0.022,
                "total_tokens": 42,
                "total_time": 0.027999999999999997,
            },
        },
    }
    stub.script(sse(chunk({"role": "assistant", "content": "Hi"}), last))
    events = await stream(make_client())
    assert result_of(events).usage == {
        "prompt_tokens": 23,
        "completion_tokens": 19,
        "total_tokens": 42,
    }
    assert of_type(events, "usage")[-1]["usage"]["prompt_tokens"] == 23


async def test_usage_inside_the_last_choice(stub, make_client):
    """Moonshot (Kimi) puts a stream's usage inside the choice of its last chunk, not beside
    it (the stream quoted in northes/go-moonshot#17)."""
    base = {
        "id": "cmpl-1305b94c570f447fbde3180560736287",
        "object": "chat.completion.chunk",
        "created": 1698999575,
        "model": "moonshot-v1-8k",
    }
    stub.script(
        sse(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            },
            {
                **base,
                "choices": [{"index": 0, "delta": {"content": "你好"}, "finish_reason": None}],
            },
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {},
                        "finish_reason": "stop",
                        "usage": {"prompt_tokens": 19, "completion_tokens": 13, "total_tokens": 32},
                    }
                ],
            },
        )
    )
    result = result_of(await stream(make_client()))
    assert result.text == "你好"
    assert result.usage == {"prompt_tokens": 19, "completion_tokens": 13, "total_tokens": 32}


async def test_a_later_chunk_of_zeros_does_not_undo_the_count(stub, make_client):
    """xAI's Grok sends its usage in a chunk before the last one (BerriAI/litellm#17136):
    what comes after it, even a usage of zeros, leaves the count as it was."""
    zeros = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    stub.script(
        sse(
            chunk({"content": "ok"}),
            chunk(finish="stop", usage=USAGE),
            {"choices": [], "usage": zeros},
        )
    )
    assert result_of(await stream(make_client())).usage == USAGE


@pytest.mark.parametrize("order", ["0-first", "1-first"])
async def test_choices_other_than_index_0_are_never_merged(stub, make_client, order):
    """With `n` > 1 each chunk's choice says which candidate it continues by its `index`
    (OpenAI API reference, chat.completion.chunk: choices[].index); only candidate 0 is the
    answer."""

    def both(zero: dict, one: dict) -> dict:
        choices = [
            {"index": 0, "delta": zero, "finish_reason": None},
            {"index": 1, "delta": one, "finish_reason": None},
        ]
        return chunk(choices=choices if order == "0-first" else choices[::-1])

    stub.script(
        sse(
            {**both({"content": "Yes"}, {"content": "No"})},
            {
                **chunk(),
                "choices": [{"index": 1, "delta": {"content": " way"}, "finish_reason": "stop"}],
            },
            both({"content": "."}, {}),
            {**chunk(), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        )
    )
    events = await stream(make_client())
    assert joined(events, "text") == "Yes." and result_of(events).text == "Yes."


async def test_a_whole_reply_answers_with_choice_0(stub, make_client):
    reply = openai_text("first candidate")
    second = {
        **reply["choices"][0],
        "index": 1,
        "message": {"role": "assistant", "content": "second candidate"},
    }
    reply["choices"] = [second, reply["choices"][0]]
    stub.script(Reply.json(reply))
    assert (await make_client().run("hi", None)).text == "first candidate"


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_a_legacy_function_call_becomes_a_tool_call(stub, make_client, toolkit, streamed):
    """Older OpenAI-compatible servers still answer in the deprecated `function_call` form
    (openai-python src/openai/types/chat/chat_completion_chunk.py, ChoiceDeltaFunctionCall;
    finish_reason "function_call")."""
    if streamed:
        first = sse(
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "echo", "arguments": ""},
                }
            ),
            chunk({"function_call": {"arguments": '{"text": '}}),
            chunk({"function_call": {"arguments": '"old"}'}}),
            chunk(finish="function_call"),
        )
    else:
        reply = openai_text("")
        reply["choices"][0]["message"] = {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "echo", "arguments": '{"text": "old"}'},
        }
        reply["choices"][0]["finish_reason"] = "function_call"
        first = Reply.json(reply)
    stub.script(first, FINAL)
    events = await stream(make_client(), toolkit=toolkit)
    [call] = of_type(events, "tool_call")
    assert (call["name"], call["args"]) == ("echo", {"text": "old"}) and call["id"]
    assert toolkit.seen == [{"text": "old"}]
    assert wire_results(stub) == [
        {"role": "tool", "tool_call_id": call["id"], "content": "echo:old"}
    ]
    assert result_of(events).text == "done"


# ---------------------------------------------------------------------- dialects: what goes back


def dialect_client(stub, monkeypatch, host: str, **kw: Any):
    """A client on `host` by its name (its dialect is chosen by host), reaching the stub
    as an HTTP proxy."""
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", stub.url)
    return create_client(
        base_url=f"http://{host}/v1", style="openai", model="m", api_key="sk-test", retries=0, **kw
    )


def detail(**fields: Any) -> dict:
    return {
        "type": "reasoning.text",
        "text": "",
        "signature": None,
        "id": "reasoning-text-1",
        "format": "anthropic-claude-v1",
        "index": 0,
        **fields,
    }


ENCRYPTED_DETAIL = {
    "type": "reasoning.encrypted",
    "data": "eyJlbmNyeXB0ZWQiOiJ0cnVlIn0=",
    "id": "reasoning-encrypted-1",
    "format": "anthropic-claude-v1",
    "index": 1,
}
WHOLE_DETAILS = [
    detail(text="Let me think about this step by step...", signature="sha256:abc123def456"),
    ENCRYPTED_DETAIL,
]


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_openrouter_reasoning_details_go_back_verbatim_with_the_tool_calls(
    stub, monkeypatch, toolkit, streamed
):
    """OpenRouter's reasoning_details (choices[].message.reasoning_details, or pieces in
    choices[].delta.reasoning_details "built by concatenating all chunks in order") must go
    back unmodified on the assistant message with its tool calls (openrouter.ai docs,
    "Reasoning Tokens": Preserving Reasoning Blocks)."""
    if streamed:
        first = sse(
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning": "Let me think",
                    "reasoning_details": [detail(text="Let me think")],
                }
            ),
            chunk(
                {
                    "reasoning": " about this step by step...",
                    "reasoning_details": [detail(text=" about this step by step...")],
                }
            ),
            chunk({"reasoning_details": [detail(signature="sha256:abc123def456")]}),
            chunk({"reasoning_details": [ENCRYPTED_DETAIL]}),
            calls(frag(0, "call_a", "echo", '{"text": "hi"}')),
            chunk(finish="tool_calls"),
        )
    else:
        reply = openai_tool_call([("echo", {"text": "hi"})])
        reply["choices"][0]["message"].update(
            reasoning="Let me think about this step by step...", reasoning_details=WHOLE_DETAILS
        )
        first = Reply.json(reply)
    stub.script(first, FINAL, FINAL)
    async with dialect_client(stub, monkeypatch, "openrouter.ai") as client:
        events = await stream(client, toolkit=toolkit)
        assert joined(events, "reasoning") == "Let me think about this step by step..."
        assistant = stub.requests[1].json["messages"][1]
        assert assistant["reasoning_details"] == WHOLE_DETAILS and assistant["tool_calls"]
        # kept on the thread's message: a later turn sends it again
        await client.run("again", toolkit, history=result_of(events).messages)
    assert stub.requests[2].json["messages"][1]["reasoning_details"] == WHOLE_DETAILS


def openrouter_shaped_reply() -> Reply:
    """A reply with a tool call and reasoning_details, as OpenRouter sends it (openrouter.ai
    docs, "Reasoning Tokens": Preserving Reasoning Blocks)."""
    reply = openai_tool_call([("echo", {"text": "hi"})])
    reply["choices"][0]["message"].update(
        reasoning="Let me think about this step by step...", reasoning_details=WHOLE_DETAILS
    )
    return Reply.json(reply)


@pytest.mark.parametrize("second_style", ["openai", "anthropic", "responses"])
async def test_what_an_endpoint_sent_goes_back_to_it_alone_whatever_its_host(
    stub, make_client, toolkit, second_style
):
    """The send-back rule: an OpenRouter-shaped reply through a base URL on 127.0.0.1 (a
    gateway, a proxy, a self-hosted deployment) gets its reasoning_details back, as they
    came, in every later request to that URL; a second provider the thread moves to (of
    any style) never gets them; the turn is stored tagged with its endpoint and loads
    again as JSON."""
    replies = {
        "openai": openai_stream("from the second"),
        "anthropic": Reply.json(anthropic_text("from the second")),
        "responses": responses_stream("from the second"),
    }
    with StubProvider() as second:
        second.script(replies[second_style])
        stub.script(openrouter_shaped_reply(), FINAL, FINAL)
        first = make_client(provider="gateway")
        events = await stream(first, toolkit=toolkit)
        in_loop = stub.requests[1].json["messages"][1]
        assert in_loop["reasoning_details"] == WHOLE_DETAILS and in_loop["tool_calls"]
        stored = json.loads(json.dumps(result_of(events).messages))  # as a store keeps it
        assert stored[1]["endpoint_fields"]["fields"] == {"reasoning_details": WHOLE_DETAILS}
        elsewhere = create_client(
            base_url=second.base_url,
            style=second_style,
            model="m",
            api_key="sk-2",
            provider="other",
        )
        async with elsewhere:
            moved = await elsewhere.run("go on", toolkit, history=stored)
        assert moved.text == "from the second"
        assert "reasoning_details" not in json.dumps(second.requests[0].json)
        assert "sha256:abc123def456" not in json.dumps(second.requests[0].json)
        await first.run("and back", toolkit, history=moved.messages)
    assert stub.requests[2].json["messages"][1]["reasoning_details"] == WHOLE_DETAILS


async def test_the_same_base_url_under_another_provider_name_is_another_endpoint(
    stub, make_client, toolkit
):
    stub.script(openrouter_shaped_reply(), FINAL, FINAL)
    events = await stream(make_client(provider="work"), toolkit=toolkit)
    await make_client(provider="home").run("again", toolkit, history=result_of(events).messages)
    assert "reasoning_details" in stub.requests[1].json["messages"][1]
    assert "reasoning_details" not in stub.requests[2].json["messages"][1]


async def test_a_turn_stored_before_endpoint_tags_keeps_the_host_rule(
    stub, monkeypatch, make_client, toolkit
):
    """A thread stored before turns were tagged (reasoning_details on the message itself)
    loads and goes on: its details go back to openrouter.ai by host, to a plain server
    not, and to any server whose provider's `dialect` says openrouter."""
    old_thread = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "reasoning": "Let me think about this step by step...",
            "reasoning_details": WHOLE_DETAILS,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "echo", "arguments": '{"text": "hi"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "echo:hi"},
    ]
    stub.script(FINAL, FINAL, FINAL)
    await make_client().run("go on", toolkit, history=old_thread)
    await make_client(dialect="openrouter").run("go on", toolkit, history=old_thread)
    async with dialect_client(stub, monkeypatch, "openrouter.ai") as client:
        await client.run("go on", toolkit, history=old_thread)
    sent = [request.json["messages"][1] for request in stub.requests]
    assert [m.get("reasoning_details") for m in sent] == [None, WHOLE_DETAILS, WHOLE_DETAILS]


async def test_an_unknown_dialect_is_refused_before_any_request(stub, make_client):
    with pytest.raises(ValueError, match="no dialect 'openruter'"):
        make_client(dialect="openruter")
    assert stub.requests == []


async def test_deepseek_reasoning_content_goes_back_with_its_tool_calls(stub, monkeypatch, toolkit):
    """DeepSeek's thinking mode: between two user messages, the reasoning_content of an
    assistant message that made tool calls must be passed back in every later request (the
    API answers 400 "The reasoning_content in the thinking mode must be passed back to the
    API"); that of one without tool calls is not needed (api-docs.deepseek.com, "Thinking
    Mode")."""
    stub.script(
        openai_stream(reasoning="I need the tool.", tool_calls=[("echo", {"text": "a"})]),
        openai_stream("Done.", reasoning="Now I can answer."),
        openai_stream("Again."),
    )
    async with dialect_client(stub, monkeypatch, "api.deepseek.com") as client:
        events = await stream(client, toolkit=toolkit)
        await client.run("more", toolkit, history=result_of(events).messages)
    in_loop = stub.requests[1].json["messages"]
    assert in_loop[1] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "I need the tool.",
        "tool_calls": in_loop[1]["tool_calls"],
    }
    later = stub.requests[2].json["messages"]
    assert [m.get("reasoning_content") for m in later if m["role"] == "assistant"] == [
        "I need the tool.",
        None,
    ]  # the finished turn's reasoning stays home


async def test_deepseek_reasoning_content_goes_back_to_a_self_hosted_deployment(
    stub, make_client, toolkit
):
    """The same rule for DeepSeek's reasoning_content of a tool-call turn: a deployment on
    any host gets it back as it came (api-docs.deepseek.com, "Thinking Mode": the API
    answers 400 without it); a turn without tool calls keeps its reasoning home."""
    stub.script(
        openai_stream(reasoning="I need the tool.", tool_calls=[("echo", {"text": "a"})]),
        openai_stream("Done.", reasoning="Now I can answer."),
        openai_stream("Again."),
    )
    client = make_client()
    events = await stream(client, toolkit=toolkit)
    await client.run("more", toolkit, history=result_of(events).messages)
    later = stub.requests[2].json["messages"]
    assert [m.get("reasoning_content") for m in later if m["role"] == "assistant"] == [
        "I need the tool.",
        None,
    ]


# ----------------------------------------------------------------------------- shapes of issue 38


MAGISTRAL_THINKING = [
    {"type": "text", "text": "The user greets me. "},
    {"type": "text", "text": "Answer."},
]


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_mistral_content_chunks_are_reasoning_and_text(stub, make_client, streamed):
    """Mistral's Magistral sends `content` as a list of chunks: `{"type": "thinking",
    "thinking": [{"type": "text", ...}]}` then `{"type": "text", "text": ...}`
    (docs.mistral.ai, "Reasoning"; the stream as reported in prism-php/prism#801 and
    spring-projects/spring-ai#5019). Thinking is reasoning, text is the answer."""
    if streamed:
        reply = sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": [{"type": "thinking", "thinking": MAGISTRAL_THINKING[:1]}]}),
            chunk({"content": [{"type": "thinking", "thinking": MAGISTRAL_THINKING[1:]}]}),
            chunk({"content": [{"type": "text", "text": "Hello"}]}),
            chunk({"content": " there"}, finish="stop"),
        )
    else:
        body = openai_text("")
        body["choices"][0]["message"]["content"] = [
            {"type": "thinking", "thinking": MAGISTRAL_THINKING},
            {"type": "text", "text": "Hello there"},
        ]
        reply = Reply.json(body)
    stub.script(reply)
    events = await stream(make_client())
    assert joined(events, "reasoning") == "The user greets me. Answer."
    assert joined(events, "text") == "Hello there"
    message = result_of(events).messages[-1]
    assert (message["content"], message["reasoning"]) == (
        "Hello there",
        "The user greets me. Answer.",
    )


async def test_gemini_error_array_shows_its_message(stub, make_client):
    """Gemini's OpenAI-compatible endpoint answers an error as a JSON array of one error
    (`[{'error': {'code': 400, 'message': ..., 'status': 'INVALID_ARGUMENT'}}]`, as
    quoted in Simpleyyt/ai-manus#101 and MinLL/SkyrimNet-GamePlugin#77)."""
    stub.script(
        Reply.json(
            [
                {
                    "error": {
                        "code": 400,
                        "message": "Function calling with a response mime type: "
                        "'application/json' is unsupported",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ],
            status=400,
        )
    )
    with pytest.raises(ProviderError) as caught:
        await make_client(retries=0).run("hi", None)
    assert caught.value.status == 400
    assert caught.value.provider_message.startswith("Function calling with a response mime")
    assert "'application/json' is unsupported" in str(caught.value)


async def test_deepseek_cache_hits_count_as_cached_tokens(stub, make_client):
    """DeepSeek reports cache hits as `usage.prompt_cache_hit_tokens` (and misses as
    `prompt_cache_miss_tokens`) at the top of usage (api-docs.deepseek.com, "Context
    Caching")."""
    body = openai_text("ok")
    body["usage"] = {
        "prompt_tokens": 1200,
        "completion_tokens": 10,
        "total_tokens": 1210,
        "prompt_cache_hit_tokens": 1024,
        "prompt_cache_miss_tokens": 176,
    }
    stub.script(Reply.json(body))
    result = await make_client().run("hi", None)
    assert result.usage["cached_tokens"] == 1024
    assert result.usage["prompt_tokens"] == 1200


async def test_llama_cpp_error_line_then_done_is_an_error_with_its_message(stub, make_client):
    """llama.cpp's server (builds before ggml-org/llama.cpp#16109, issue #16104) reports a
    failure inside a stream as an SSE `error:` field, then `data: [DONE]` (the bytes as
    quoted in coddy-project/coddy-agent#106)."""
    stub.script(
        Reply.raw(
            [
                b'error: {"code":400,"message":"the request exceeds the available context '
                b'size. try increasing the context size or enable context shift",'
                b'"type":"invalid_request_error"}\n\n',
                b"data: [DONE]\n\n",
            ]
        )
    )
    with pytest.raises(ProviderError) as caught:
        await stream(make_client(retries=0))
    assert caught.value.status == 400
    assert caught.value.provider_message.startswith("the request exceeds the available context")
    assert caught.value.context_overflow is not None


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
async def test_repeated_tool_call_ids_are_made_unique_for_call_and_result(
    stub, make_client, toolkit, streamed
):
    """Servers that repeat a call id in one reply (the repeated ids of
    huggingface/smolagents#2683, fixed in its PR #2768) would have two calls and two
    results under one id sent back, which OpenAI-style servers refuse: the second becomes
    `call_0_2`, on its call and on its result, in the thread and on the wire."""
    if streamed:
        first = sse(
            calls(frag(0, "call_0", "echo", '{"text": "a"}')),
            calls(frag(1, "call_0", "echo", '{"text": "b"}')),
            chunk(finish="tool_calls"),
        )
    else:
        body = openai_tool_call([("echo", {"text": "a"}), ("echo", {"text": "b"})])
        for call in body["choices"][0]["message"]["tool_calls"]:
            call["id"] = "call_0"
        first = Reply.json(body)
    stub.script(first, FINAL)
    events = await stream(make_client(), toolkit=toolkit)
    assert [e["id"] for e in of_type(events, "tool_call")] == ["call_0", "call_0_2"]
    assert [c["id"] for c in wire_calls(stub)] == ["call_0", "call_0_2"]
    assert [(r["tool_call_id"], r["content"]) for r in wire_results(stub)] == [
        ("call_0", "echo:a"),
        ("call_0_2", "echo:b"),
    ]
    messages = result_of(events).messages
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_0", "call_0_2"]
    assert [m["tool_call_id"] for m in messages[2:4]] == ["call_0", "call_0_2"]
