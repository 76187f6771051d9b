"""toolnexus.testing: the scripted model a user tests an agent with, as the style (no HTTP)
and as an httpx2 transport under the real openai style."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from tests.support.stub_provider import responses_reply, responses_stream
from toolnexus import (
    ContextOverflow,
    ContextPolicy,
    Overloaded,
    RateLimited,
    RunCancelled,
    ToolnexusError,
    create_client,
    create_toolkit,
    define_tool,
)
from toolnexus.testing import (
    ModelRequest,
    ScriptedCall,
    ScriptedModel,
    ScriptedReply,
    context_overflow,
    overloaded,
    rate_limited,
)

pytestmark = pytest.mark.usefixtures("no_keys_in_env")

NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens: any HTTP request would fail


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def _toolkit():
    return (await create_toolkit()).register(define_tool(weather))


def _as_style(model: ScriptedModel, **kwargs):
    return create_client(base_url=NOWHERE, style=model, model="m", **kwargs)


def _over_http(model: ScriptedModel, **kwargs):
    http = httpx2.AsyncClient(transport=model.transport())
    return create_client(base_url=NOWHERE, style="openai", model="m", http_client=http, **kwargs)


def _over_anthropic_wire(model: ScriptedModel, **kwargs):
    http = httpx2.AsyncClient(transport=model.transport())
    return create_client(base_url=NOWHERE, style="anthropic", model="m", http_client=http, **kwargs)


def _over_responses_wire(model: ScriptedModel, **kwargs):
    http = httpx2.AsyncClient(transport=model.transport())
    return create_client(base_url=NOWHERE, style="responses", model="m", http_client=http, **kwargs)


MODES = [_as_style, _over_http, _over_anthropic_wire, _over_responses_wire]
IDS = ["style", "openai-wire", "anthropic-wire", "responses-wire"]


@pytest.mark.parametrize("plug", MODES, ids=IDS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_tool_call_runs_and_every_request_is_recorded(plug, stream):
    model = ScriptedModel(
        [
            ScriptedReply(tool_calls=[ScriptedCall("weather", {"city": "Oslo"}, id="c1")]),
            ScriptedReply(text="Sunny.", usage={"prompt_tokens": 12, "completion_tokens": 2}),
        ]
    )
    client = plug(model, system_prompt="Be brief.")
    toolkit = await _toolkit()
    if stream:
        events = [event async for event in client.stream("Weather in Oslo?", toolkit)]
        result = events[-1]["result"]
    else:
        result = await client.run("Weather in Oslo?", toolkit)
    assert result.text == "Sunny."
    assert result.tool_calls == [{"id": "c1", "name": "weather", "args": {"city": "Oslo"}}]
    assert result.usage["prompt_tokens"] == 12
    first, second = model.requests
    assert first.system == "Be brief."
    assert first.tool_names == ["weather"]
    assert first.tools[0].parameters["properties"]["city"]["type"] == "string"
    assert first.stream is stream
    assert first.messages == [{"role": "user", "content": "Weather in Oslo?"}]  # as sent then
    assert second.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}
    assert model.unused == 0


@pytest.mark.parametrize("plug", MODES, ids=IDS)
async def test_chunks_stream_as_text_events_in_order(plug):
    model = ScriptedModel([ScriptedReply(text=["Hel", "lo", " there"], reasoning="hm")])
    events = [event async for event in plug(model).stream("hi", None)]
    assert [(e["type"], e["delta"]) for e in events if e["type"] in ("text", "reasoning")] == [
        ("reasoning", "hm"),
        ("text", "Hel"),
        ("text", "lo"),
        ("text", " there"),
    ]
    assert events[-1]["result"].text == "Hello there"


@pytest.mark.parametrize("plug", MODES, ids=IDS)
async def test_rate_limits_and_overloads_are_retried_as_from_a_server(plug):
    model = ScriptedModel([rate_limited(retry_after=0), overloaded(), "at last"])
    events = [event async for event in plug(model, retries=2).stream("hi", None)]
    retries = [e for e in events if e["type"] == "retry"]
    assert [e["attempt"] for e in retries] == [1, 2]
    assert retries[0]["delay"] == 0  # what the "server" asked for
    assert events[-1]["result"].text == "at last"
    assert len(model.requests) == 3


@pytest.mark.parametrize("plug", MODES, ids=IDS)
async def test_retries_used_up_raise_the_librarys_own_error(plug):
    model = ScriptedModel([overloaded()] * 3)
    with pytest.raises(Overloaded):
        await plug(model, retries=1, retry_base_ms=1).run("hi", None)
    assert len(model.requests) == 2


@pytest.mark.parametrize("plug", MODES, ids=IDS)
async def test_an_overflow_without_a_context_policy_is_the_error(plug):
    model = ScriptedModel([context_overflow(used=9000, window=8192)])
    with pytest.raises(ContextOverflow) as info:
        await plug(model, context=None).run("hi", None)
    # the Responses API says the input exceeds the window, and names no counts
    said = (None, None) if plug is _over_responses_wire else (9000, 8192)
    assert (info.value.used, info.value.window) == said


@pytest.mark.parametrize("plug", MODES, ids=IDS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_reply_cut_off_at_its_length_limit_leaves_the_run_incomplete(plug, stream):
    model = ScriptedModel([ScriptedReply(text=["The answer is"], finish_reason="length")])
    client = plug(model)
    if stream:
        result = [event async for event in client.stream("hi", None)][-1]["result"]
    else:
        result = await client.run("hi", None)
    assert (result.text, result.status, result.incomplete_reason) == (
        "The answer is",
        "incomplete",
        "max_tokens",
    )


ERRORS = [
    (rate_limited, RateLimited),
    (overloaded, Overloaded),
    (context_overflow, ContextOverflow),
]
ERROR_IDS = ["rate-limited", "overloaded", "overflow"]


@pytest.mark.parametrize("plug", MODES, ids=IDS)
@pytest.mark.parametrize(("error", "raised"), ERRORS, ids=ERROR_IDS)
async def test_each_scripted_error_is_the_librarys_error_of_its_kind(plug, error, raised):
    model = ScriptedModel([error()])
    with pytest.raises(raised):
        await plug(model, retries=0, context=None).run("hi", None)


@pytest.mark.parametrize(("error", "raised"), ERRORS, ids=ERROR_IDS)
async def test_a_responses_stream_failing_midway_is_the_librarys_error(error, raised):
    model = ScriptedModel([ScriptedReply(text=["Half ", "an answer"], error=error())])
    seen = []
    with pytest.raises(raised) as info:
        async for event in _over_responses_wire(model, context=None).stream("hi", None):
            seen.append(event)
    assert [e["delta"] for e in seen if e["type"] == "text"] == ["Half ", "an answer"]
    assert info.value.result.messages[-1]["content"] == "Half an answer"
    assert len(model.requests) == 1  # output had begun: not retried


async def test_the_responses_wire_reads_the_thread_back_as_canonical_messages():
    call = ScriptedCall("weather", {"city": "Oslo"}, id="c1")
    model = ScriptedModel(
        [ScriptedReply(text="Let me look.", reasoning="wants weather", tool_calls=[call]), "Sunny."]
    )
    client = _over_responses_wire(model, system_prompt="Be brief.", reasoning="high")
    result = await client.run("Weather in Oslo?", await _toolkit())
    assert result.text == "Sunny."
    first, second = model.requests
    assert (first.system, first.reasoning, first.tool_names) == ("Be brief.", "high", ["weather"])
    assert first.body is not None and first.body["store"] is False
    user, assistant, tool = second.messages
    assert user == {"role": "user", "content": "Weather in Oslo?"}
    assert assistant["content"] == "Let me look."
    assert assistant["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    # the reasoning went back as the API sent it: sealed, with its summary
    (reasoning,) = assistant["reasoning_items"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "wants weather"}]
    assert reasoning["encrypted_content"]
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "sunny in Oslo"}


def _shape(value):
    """A JSON value with every leaf replaced by its type's name: what a decoder relies on."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__


def _events(raw: bytes) -> list[tuple[str, object]]:
    """A stream's events as (name, shape), runs of the same event (deltas) as one."""
    events: list[tuple[str, object]] = []
    for block in raw.decode().strip().split("\n\n"):
        name_line, data_line = block.split("\n")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name_line.removeprefix("event: ")
        event = (data["type"], _shape(data))
        if not events or events[-1] != event:
            events.append(event)
    return events


async def test_the_responses_transport_answers_in_the_shape_the_api_sends():
    reply = ScriptedReply(
        text=["Hello", " big", " world"],
        tool_calls=[ScriptedCall("weather", {"city": "Oslo"})],
        reasoning="hm",
        usage={"prompt_tokens": 10, "completion_tokens": 5},
    )
    like_the_api = {
        "text": "Hello big world",
        "tool_calls": [("weather", {"city": "Oslo"})],
        "reasoning": "hm",
        "encrypted": "c2VhbGVk",
        "model": "m",
    }
    model = ScriptedModel([reply, reply])
    request = {"model": "m", "input": [{"type": "message", "role": "user", "content": "yo"}]}
    async with httpx2.AsyncClient(transport=model.transport()) as http:
        whole = await http.post("http://model.test/v1/responses", json=request)
        streamed = await http.post(
            "http://model.test/v1/responses", json={**request, "stream": True}
        )
    assert _shape(whole.json()) == _shape(responses_reply(**like_the_api))
    assert _events(streamed.content) == _events(b"".join(responses_stream(**like_the_api).parts))
    assert model.requests[0].messages == [{"role": "user", "content": "yo"}]


async def test_an_overflow_compacts_the_older_turns_and_tries_again():
    history = []
    for n in range(4):
        history += [
            {"role": "user", "content": f"question {n} " + "words " * 200},
            {"role": "assistant", "content": f"answer {n}"},
        ]
    model = ScriptedModel([context_overflow(used=9000, window=8192), "the summary", "the answer"])
    client = _as_style(model, context=ContextPolicy(keep_last=1))
    result = await client.run("and now?", None, history=history)
    assert result.text == "the answer"
    overflowed, summary, retried = model.requests
    assert summary.last_text.startswith("Summarize the conversation") and summary.tools == ()
    assert len(retried.messages) < len(overflowed.messages)
    assert retried.last_text == "and now?"


async def test_a_stream_broken_midway_raises_and_keeps_the_partial_answer():
    model = ScriptedModel([ScriptedReply(text=["Half ", "an answer"], error=overloaded())])
    client = _as_style(model)
    seen = []
    with pytest.raises(Overloaded) as info:
        async for event in client.stream("hi", None):
            seen.append(event)
    assert [e["delta"] for e in seen if e["type"] == "text"] == ["Half ", "an answer"]
    assert info.value.result.messages[-1]["content"] == "Half an answer"
    assert info.value.result.messages[-1]["interrupted"] is True
    assert len(model.requests) == 1  # output had begun: not retried


async def test_a_slow_stream_is_cancelled_at_once():
    model = ScriptedModel([ScriptedReply(text=["never"], delay_s=3600)])
    cancel = asyncio.Event()
    run = asyncio.ensure_future(_as_style(model).ask("hi", None, on_text=print, cancel=cancel))
    while not model.requests:
        await asyncio.sleep(0.01)
    cancel.set()
    with pytest.raises(RunCancelled):
        await run


async def test_a_function_of_the_request_makes_each_reply():
    async def respond(request: ModelRequest) -> ScriptedReply | str:
        if request.messages[-1]["role"] == "user":
            return ScriptedReply(tool_calls=[ScriptedCall("weather", {"city": request.last_text})])
        return f"told: {request.last_text}"

    model = ScriptedModel(respond=respond)
    result = await _as_style(model).run("Rome", await _toolkit())
    assert result.text == "told: sunny in Rome"


async def test_a_script_that_runs_out_says_so():
    model = ScriptedModel(["only one"])
    client = _as_style(model)
    assert (await client.run("a", None)).text == "only one"
    with pytest.raises(ToolnexusError, match="no reply left for request 2"):
        await client.run("b", None)
    model.add("more")
    assert (await client.run("c", None)).text == "more"


async def test_arguments_that_are_not_json_reach_the_loop_as_a_model_wrote_them():
    model = ScriptedModel(
        [ScriptedReply(tool_calls=[ScriptedCall("weather", '{"city": ')]), "sorry"]
    )
    result = await _as_style(model).run("hi", await _toolkit())
    assert result.text == "sorry"
    told = model.requests[1].messages[-1]
    assert told["role"] == "tool" and "not valid JSON" in told["content"]


async def test_the_transport_answers_the_openai_wire_format_and_nothing_else():
    model = ScriptedModel(["hi"])
    async with httpx2.AsyncClient(transport=model.transport()) as http:
        listing = await http.get("http://model.test/v1/models")
        assert listing.status_code == 404
        reply = await http.post(
            "http://model.test/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "yo"}]},
        )
    assert reply.json()["choices"][0]["message"] == {"role": "assistant", "content": "hi"}
    assert model.requests[0].last_text == "yo"
