"""The event dicts a run yields: each carries exactly the keys its TypedDict declares."""

from __future__ import annotations

from typing import get_args, get_type_hints

from tests.support.scripted import calling, scripted_client, usage
from toolnexus import create_toolkit, define_tool, events
from toolnexus.context import _marks as marks
from toolnexus.events import add_usage, tool_result_event
from toolnexus.testing import ScriptedReply, failure
from toolnexus.types import DropReason, Event, EventType, IncompleteReason


async def test_every_event_of_a_streamed_tool_run_has_the_keys_of_its_type(scripted):
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    scripted.add(
        failure(503, "busy"),
        calling(("add", {"a": 1, "b": 2})),
        ScriptedReply("three", reasoning="adding", usage=usage(10, 2)),
    )
    toolkit = (await create_toolkit()).register(define_tool(add))
    types = {get_args(get_type_hints(t)["type"])[0]: t for t in get_args(Event)}
    async with scripted_client(scripted, retries=1, retry_base_ms=1) as client:
        events = [event async for event in client.stream("add 1 and 2", toolkit)]
    assert {e["type"] for e in events} == {
        "retry",
        "tool_call",
        "tool_result",
        "usage",
        "text",
        "reasoning",
        "done",
    }
    for event in events:
        declared = types[event["type"]]
        assert (
            declared.__required_keys__
            <= set(event)
            <= (declared.__required_keys__ | declared.__optional_keys__)
        ), event


def test_attachments_appear_on_a_tool_result_only_when_there_are_some():
    assert "attachments" not in tool_result_event("c1", "t", "out", False)
    assert tool_result_event("c1", "t", "out", False, ["image 2x2 png"])["attachments"] == [
        "image 2x2 png"
    ]


def test_usage_adds_every_numeric_key_of_both_sides():
    total = {"prompt_tokens": 1, "completion_tokens": 2}
    add_usage(total, {"prompt_tokens": 3, "reasoning_tokens": 4, "model": "x"})
    assert total == {"prompt_tokens": 4, "completion_tokens": 2, "reasoning_tokens": 4}


def test_event_type_names_the_type_of_every_event():
    declared = {get_args(get_type_hints(t)["type"])[0] for t in get_args(Event)}
    assert set(get_args(EventType)) == declared


def test_the_named_reasons_are_the_declared_ones():
    """A run's incomplete_reason and a message's drop mark are each one of their Literal's
    values, and the library names every one of them."""
    named = {events.MAX_TURNS, events.MAX_TOKENS, events.CONTEXT_FULL, events.FILTERED}
    named |= {events.REFUSED, events.CUT_OFF}
    assert named == set(get_args(IncompleteReason))
    dropped = {marks.UNDONE, marks.RETRIED, marks.FAILED, marks.REFUSED, marks.SYSTEM_PROMPT}
    assert dropped == set(get_args(DropReason))
