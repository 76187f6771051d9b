"""A failed tool call reads as a failure to the model in every style: anthropic has a flag,
the openai and responses styles carry text only, so the text says it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.stub_provider import Reply, anthropic_text, openai_text, responses_reply
from toolnexus import create_client

pytestmark = pytest.mark.usefixtures("no_keys_in_env")


def _history(output: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": output, "is_error": True},
    ]


async def _sent(stub, style: str, output: str) -> dict[str, Any]:
    reply = {"openai": openai_text, "anthropic": anthropic_text, "responses": responses_reply}
    stub.script(Reply.json(reply[style]("ok")))
    client = create_client(base_url=stub.base_url, style=style, model="m", api_key="sk-test")
    try:
        await client.run("go on", None, history=_history(output))
    finally:
        await client.aclose()
    return stub.requests[-1].json


async def test_openai_style_error_result_starts_with_a_marker(stub):
    body = await _sent(stub, "openai", "server exploded")
    result = next(m for m in body["messages"] if m["role"] == "tool")
    assert result["content"] == "Error: server exploded"


async def test_responses_style_error_result_starts_with_a_marker(stub):
    body = await _sent(stub, "responses", "server exploded")
    result = next(i for i in body["input"] if i.get("type") == "function_call_output")
    assert result["output"] == "Error: server exploded"


async def test_anthropic_style_error_result_carries_the_flag(stub):
    body = await _sent(stub, "anthropic", "server exploded")
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    result = next(b for b in blocks if b.get("type") == "tool_result")
    assert result["is_error"] is True


async def test_output_that_already_says_error_is_not_marked_twice(stub):
    body = await _sent(stub, "openai", "error: unknown tool 'x'")
    result = next(m for m in body["messages"] if m["role"] == "tool")
    assert result["content"] == "error: unknown tool 'x'"
