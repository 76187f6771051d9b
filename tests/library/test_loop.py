"""The one agent loop (toolnexus/_loop.py) on toolnexus.testing's scripted model: turns,
usage, the turn limit, bad tool calls, and how the calls of one turn run."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.support.resilience_helpers import echo_toolkit
from tests.support.scripted import calling, scripted_client, sent_results, usage
from tests.support.stream_events import of_type, result_of, stream
from toolnexus import ToolContext, ToolnexusError, create_toolkit, define_tool
from toolnexus.testing import ScriptedCall, ScriptedReply


@pytest.fixture
async def client(scripted):
    async with scripted_client(scripted) as client:
        yield client


@pytest.fixture
async def toolkit():
    return await echo_toolkit()


async def test_usage_is_summed_over_turns(scripted, client, toolkit):
    scripted.add(
        ScriptedReply(tool_calls=[ScriptedCall("now")], usage=usage(10, 5)),
        ScriptedReply(text="it is noon", usage=usage(20, 7)),
    )
    result = await client.run("time?", toolkit)
    assert result.turns == 2
    assert result.usage == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}


async def test_max_turns_reached_is_incomplete(scripted, client, toolkit):
    scripted.add(*[calling(("now", {})) for _ in range(3)])
    async with scripted_client(scripted, max_turns=2) as client:
        result = await client.run("loop", toolkit)
    assert result.status == "incomplete" and result.turns == 2
    assert len(scripted.requests) == 2
    assert toolkit.seen == [{}, {}]
    assert result.messages[-1]["role"] == "tool"  # every call still has its result


@pytest.mark.parametrize(
    ("name", "args", "problem"),
    [
        ("echo", '{"text": "unterminated', "not valid JSON"),
        ("echo", '["a list"]', "must be a JSON object"),
        ("teleport", "{}", "unknown tool 'teleport'"),
        ("boom", "{}", "RuntimeError: the reactor is down"),
    ],
    ids=["invalid-json", "not-an-object", "unknown-tool", "tool-raises"],
)
async def test_bad_calls_become_error_results_and_the_run_continues(
    scripted, client, toolkit, name, args, problem
):
    def boom() -> str:
        raise RuntimeError("the reactor is down")

    toolkit.register(define_tool(boom))
    scripted.add(ScriptedReply(tool_calls=[ScriptedCall(name, args, id="call_bad")]), "recovered")
    events = await stream(client, toolkit=toolkit)
    [tool_result] = of_type(events, "tool_result")
    assert tool_result["is_error"] is True and problem in tool_result["output"]
    [sent] = sent_results(scripted)
    assert sent["tool_call_id"] == "call_bad" and problem in sent["content"]
    assert set(sent) == {"role", "tool_call_id", "content"}
    assert result_of(events).text == "recovered" and result_of(events).status == "done"
    assert toolkit.seen == []


async def test_tool_calls_of_one_turn_run_concurrently(scripted, client):
    first_started, second_done = asyncio.Event(), asyncio.Event()

    async def first() -> str:
        """Waits for `second`, so it cannot finish unless both run at once."""
        first_started.set()
        await second_done.wait()
        return "first"

    async def second() -> str:
        """Waits for `first` to have started, then finishes first."""
        await first_started.wait()
        second_done.set()
        return "second"

    tk = await create_toolkit(timeout=5)  # one after the other, they would time out
    tk.register(define_tool(first), define_tool(second))
    scripted.add(calling(("first", {}), ("second", {})), "both")
    events = await stream(client, toolkit=tk)
    results = of_type(events, "tool_result")
    assert [(r["id"], r["output"], r["is_error"]) for r in results] == [
        ("call_1", "first", False),
        ("call_2", "second", False),
    ]
    assert [(r["tool_call_id"], r["content"]) for r in sent_results(scripted)] == [
        ("call_1", "first"),
        ("call_2", "second"),
    ]


async def test_sync_tool_runs_in_a_worker_thread(scripted, client):
    threads: list[int] = []

    def where() -> str:
        """Record the thread it runs on."""
        threads.append(threading.get_ident())
        return "here"

    tk = await create_toolkit()
    tk.register(define_tool(where))
    scripted.add(calling(("where", {})), "ok")
    result = await client.run("hi", tk)
    assert result.text == "ok"
    assert len(threads) == 1 and threads[0] != threading.get_ident()


async def test_progress_a_sync_tool_reports_from_its_thread_comes_before_its_result(
    scripted, client
):
    def count(ctx: ToolContext) -> str:
        """Count to two, saying so."""
        ctx.report("one", 1, 2)
        ctx.report("two", 2, 2)
        return "counted"

    tk = await create_toolkit()
    tk.register(define_tool(count))
    scripted.add(calling(("count", {})), "ok")
    events = await stream(client, toolkit=tk)
    tool_events = [e for e in events if e["type"].startswith("tool_")]
    assert [e["type"] for e in tool_events] == [
        "tool_call",
        "tool_progress",
        "tool_progress",
        "tool_result",
    ]
    assert [(e["message"], e["progress"]) for e in of_type(events, "tool_progress")] == [
        ("one", 1),
        ("two", 2),
    ]
    assert of_type(events, "tool_result")[0]["output"] == "counted"


async def test_the_same_failing_call_twice_in_a_row_ends_the_run(scripted, client, toolkit):
    bad = [("echo", {"text": "hi", "loud": True})]  # echo has no parameter "loud"
    scripted.add(*[calling(*bad) for _ in range(5)])
    with pytest.raises(ToolnexusError) as caught:
        await client.run("go", toolkit)  # max_turns is 10
    assert str(caught.value) == (
        "the model repeated a failing call to echo (same arguments, it failed again); stopping"
    )
    assert len(scripted.requests) == 2  # not max_turns of the same error
    told = [m["content"] for m in caught.value.result.messages if m["role"] == "tool"]
    assert told == ["error: echo has no parameter 'loud'; its parameters are: text"] * 2


async def test_a_failing_call_with_new_arguments_goes_on(scripted, client, toolkit):
    scripted.add(
        calling(("echo", {"txt": "a"})),
        calling(("echo", {"text": "a"})),
        calling(("echo", {"txt": "a"})),
        "done",
    )
    result = await client.run("go", toolkit)
    assert result.text == "done" and len(scripted.requests) == 4
