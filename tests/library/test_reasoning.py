"""Reasoning levels as each style asks for them, reasoning token counts in usage, and user
request options over the style's defaults (loopback stub); what is refused before any
request, on the scripted model."""

from __future__ import annotations

import pytest

from tests.support.resilience_helpers import single_try_client
from tests.support.scripted import scripted_client
from tests.support.stub_provider import (
    Reply,
    anthropic_text,
    openai_stream,
    openai_text,
    responses_reply,
    responses_stream,
)
from toolnexus import ToolnexusError, create_client
from toolnexus._params import parse_option_value

REPLY = {
    "openai": openai_text("ok"),
    "anthropic": anthropic_text("ok"),
    "responses": responses_reply("ok"),
}
ASKED = {
    "openai": {"reasoning_effort": "medium"},
    "responses": {"reasoning": {"effort": "medium", "summary": "auto"}},
    "anthropic": {
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "max_tokens": 4096 + 4096,
    },
}
REASONING_KEYS = ("reasoning_effort", "reasoning", "thinking")


async def body_for(stub, style: str, **options) -> dict:
    """The body a run sends from a client made with `options`."""
    stub.script(Reply.json(REPLY[style]))
    async with single_try_client(stub, style, **options) as client:
        await client.run("think", None)
    return stub.requests[-1].json


@pytest.mark.parametrize("style", ["openai", "responses", "anthropic"])
async def test_each_style_asks_for_reasoning_in_its_own_terms(stub, style):
    body = await body_for(stub, style, reasoning="medium")
    assert {k: body[k] for k in ASKED[style]} == ASKED[style]


@pytest.mark.parametrize("style", ["openai", "responses", "anthropic"])
async def test_off_sends_nothing(stub, style):
    body = await body_for(stub, style, reasoning="off")
    assert not set(REASONING_KEYS) & body.keys()
    if style == "anthropic":
        assert body["max_tokens"] == 4096


@pytest.mark.parametrize(("level", "budget"), [("low", 1024), ("high", 16384)])
async def test_anthropic_budgets_and_a_per_run_override(stub, level, budget):
    stub.script(Reply.json(anthropic_text("ok")))
    async with single_try_client(
        stub, "anthropic", reasoning="off", request_params={"max_tokens": 500}
    ) as client:
        await client.run("think", None, reasoning=level)
    body = stub.requests[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 500 + budget  # the user's reply size, plus the budget


async def test_openrouter_takes_reasoning_as_an_object(stub, monkeypatch):
    # the request goes to openrouter.ai by its name, through the stub as an HTTP proxy
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", stub.url)
    stub.script(Reply.json(openai_text("ok")))
    client = create_client(
        base_url="http://openrouter.ai/api/v1",
        style="openai",
        model="m",
        api_key="sk-or",
        reasoning="high",
        retries=0,
    )
    async with client:
        await client.run("think", None)
    [request] = stub.requests
    assert request.path == "http://openrouter.ai/api/v1/chat/completions"
    assert request.json["reasoning"] == {"effort": "high"}
    assert "reasoning_effort" not in request.json


async def test_an_unknown_level_is_refused(scripted):
    with pytest.raises(
        ValueError, match="reasoning must be one of off, low, medium, high, not 'max'"
    ):
        scripted_client(scripted, reasoning="max")
    async with scripted_client(scripted) as client:
        with pytest.raises(ValueError, match="not 'extreme'"):
            await client.run("think", None, reasoning="extreme")
    assert scripted.requests == []


# ----------------------------------------------------------------------------- user options


async def test_user_options_win_over_the_styles_defaults(stub):
    body = await body_for(
        stub,
        "openai",
        reasoning="low",
        request_params={"reasoning_effort": "minimal", "temperature": 0.2},
    )
    assert (body["reasoning_effort"], body["temperature"]) == ("minimal", 0.2)
    thinking = {"type": "enabled", "budget_tokens": 2000}
    body = await body_for(
        stub,
        "anthropic",
        reasoning="high",
        request_params={"thinking": thinking, "max_tokens": 3000},
    )
    assert (body["thinking"], body["max_tokens"]) == (thinking, 3000 + 16384)


async def test_a_max_tokens_thinking_cannot_add_to_fails_before_any_request(scripted):
    async with scripted_client(
        scripted, "anthropic", reasoning="low", request_params={"max_tokens": "lots"}
    ) as client:
        with pytest.raises(
            ToolnexusError, match="max_tokens must be a positive integer, not 'lots'"
        ):
            await client.run("think", None)
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.2", 0.2),
        ("500", 500),
        ("true", True),
        ("null", None),
        ('["\\n"]', ["\n"]),
        ('{"effort": "low"}', {"effort": "low"}),
        ("high", "high"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("", ""),
        ("01", "01"),
    ],
)
def test_option_values_are_typed_as_json_else_text(text, value):
    assert parse_option_value(text) == value


# ----------------------------------------------------------------------------- token counts


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_reasoning_tokens_are_in_the_usage(stub, streamed):
    reply = (
        openai_stream("ok", reasoning_tokens=7)
        if streamed
        else Reply.json(openai_text("ok", reasoning_tokens=7))
    )
    stub.script(reply)
    async with single_try_client(stub, reasoning="high") as client:
        if streamed:
            events = [e async for e in client.stream("think", None)]
            result = events[-1]["result"]
        else:
            result = await client.run("think", None)
    assert result.usage == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "reasoning_tokens": 7,
    }


async def test_responses_reasoning_tokens_are_in_the_usage(stub):
    stub.script(responses_stream("ok", reasoning="step one then two"))
    async with single_try_client(stub, "responses", reasoning="low") as client:
        events = [e async for e in client.stream("think", None)]
    assert events[-1]["result"].usage["reasoning_tokens"] == 4  # the stub counts words
    assert "".join(e["delta"] for e in events if e["type"] == "reasoning") == ("step one then two")
