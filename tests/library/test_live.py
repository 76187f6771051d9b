"""Optional: the three styles against a real server (llama.cpp's llama-server, see
../shared/realserver/). Skipped unless TOOLNEXUS_LIVE_URL names one, e.g.
TOOLNEXUS_LIVE_URL=http://127.0.0.1:18081; TOOLNEXUS_LIVE_MODEL sets the model name."""

from __future__ import annotations

import os

import pytest

from tests.support.long_threads import note
from toolnexus import ProviderError, RunResult, create_client, create_toolkit, define_tool

LIVE_URL = os.environ.get("TOOLNEXUS_LIVE_URL", "").rstrip("/")
MODEL = os.environ.get("TOOLNEXUS_LIVE_MODEL", "local")
STYLES = ("openai", "anthropic", "responses")
# small answers keep a 2-core machine quick; the budget key differs per style
ANSWER_BUDGET = {
    "openai": {"max_tokens": 64},
    "anthropic": {"max_tokens": 64},
    "responses": {"max_output_tokens": 64},
}

pytestmark = pytest.mark.skipif(not LIVE_URL, reason="TOOLNEXUS_LIVE_URL is not set")


def live_client(style: str, **kw):
    base = LIVE_URL if style == "anthropic" else LIVE_URL + "/v1"
    return create_client(
        base_url=base, style=style, model=MODEL, api_key="live-test", idle_timeout_s=300, **kw
    )


@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("style", STYLES)
async def test_a_short_question(style, streamed):
    async with live_client(style, request_params=ANSWER_BUDGET[style]) as client:
        prompt = "What is 2 + 2? Reply with the number only."
        if streamed:
            events = [e async for e in client.stream(prompt, None)]
            result: RunResult = events[-1]["result"]
            assert "".join(e["delta"] for e in events if e["type"] == "text") == result.text
        else:
            result = await client.run(prompt, None)
    assert "4" in result.text, result
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0
    assert result.messages[-1]["role"] == "assistant"


async def test_a_tool_using_run_on_the_openai_style():
    seen: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append((a, b))
        return a + b

    toolkit = (await create_toolkit()).register(define_tool(add))

    def prefill_first_turn(request: dict) -> dict | None:
        # The small Qwen writes its first call as prose unless its turn starts with the tag
        # its template uses; llama.cpp then parses a real tool call (see realserver/README).
        if request["turn"] != 1:
            return None
        return {
            "messages": [*request["messages"], {"role": "assistant", "content": "<tool_call>\n"}]
        }

    async with live_client(
        "openai",
        request_params={"max_tokens": 128},
        max_turns=3,
        hooks={"before_llm": prefill_first_turn},
    ) as client:
        events = [e async for e in client.stream("Use the add tool to add 17 and 25.", toolkit)]
    result = events[-1]["result"]
    calls = [e for e in events if e["type"] == "tool_call"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert calls and calls[0]["name"] == "add" and calls[0]["args"] == {"a": 17, "b": 25}
    assert seen[0] == (17, 25)
    assert results[0]["output"] == "42" and not results[0]["is_error"]
    assert [m["role"] for m in result.messages][:3] == ["user", "assistant", "tool"]
    # the result went back and the model answered (what a 0.5B model says then varies)
    assert result.turns >= 2 and result.status in ("done", "incomplete")
    assert result.messages[-1]["role"] in ("assistant", "tool")


@pytest.mark.parametrize("style", STYLES)
async def test_a_prompt_over_the_window_reports_its_numbers(style):
    async with live_client(style, retries=0) as client:
        with pytest.raises(ProviderError) as caught:
            await client.run("hello " * 20000, None)
    overflow = caught.value.context_overflow
    assert overflow is not None, caught.value
    assert overflow.window and overflow.used and overflow.used > overflow.window


@pytest.mark.timeout(900)  # a small CPU model reads ~3,000-token prompts slowly
async def test_several_long_turns_on_one_thread_outgrow_the_window_and_all_succeed():
    async with live_client("openai", request_params={"max_tokens": 64}) as client:
        compactions = []
        # ~1,050 of Qwen's tokens each (note(n, 1100) was ~820: four of them and three short
        # replies could fit under the compaction limit): a 4,096-token window holds three
        for n in range(1, 5):
            events = [
                e
                async for e in client.stream(
                    note(n, 1400) + "\n\nReply with one short sentence.", None, id="long"
                )
            ]
            assert events[-1]["result"].messages[-1]["role"] == "assistant"
            compactions += [e for e in events if e["type"] == "compaction"]
        thread = await client.conversation_store.get("long")
    asked = [m["content"] for m in thread if m["role"] == "user" and "compaction" not in m]
    assert [a.split(":")[0] for a in asked] == [f"Note {n}" for n in range(1, 5)]
    assert compactions, "four long turns should not fit a 4,096-token window uncompacted"
