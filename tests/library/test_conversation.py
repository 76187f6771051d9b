"""toolnexus.conversation promises a multi-turn chat kept in memory over anything with a
`run` (a Client): each send() goes on from `.messages`, which the caller may read, replace
or reset(); the toolkit, the cancel event, and each send's own schema and reasoning are
handed to the run; a run that fails keeps the transcript it reached (the prompt, any
partial answer), while a send refused before it starts leaves `.messages` as they were.

Partial answers kept after a dropped stream and cancelled sends are in
tests/library/test_retries.py and tests/library/test_cancel.py; schemas and attachments through a
conversation in tests/library/test_structured_output.py and tests/library/test_attachments.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.scripted import scripted_client
from toolnexus import ProviderError, ToolnexusError
from toolnexus.conversation import Conversation
from toolnexus.testing import ScriptedModel, failure
from toolnexus.tools.toolkit import Toolkit
from toolnexus.types import RunResult


def said(model: ScriptedModel) -> list[list[tuple[str, Any]]]:
    """Each request's messages as (role, content), as the openai style sent them."""
    return [[(m["role"], m["content"]) for m in r.body["messages"]] for r in model.requests]


async def test_each_send_goes_on_from_the_turns_before(scripted):
    scripted.add("Hello Ada.", "You are Ada.")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        await conversation.send("I am Ada.")
        result = await conversation.send("Who am I?")
    assert result.text == "You are Ada."
    assert said(scripted) == [
        [("user", "I am Ada.")],
        [("user", "I am Ada."), ("assistant", "Hello Ada."), ("user", "Who am I?")],
    ]
    assert conversation.messages == result.messages


async def test_reset_starts_over(scripted):
    scripted.add("one", "two")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        await conversation.send("first")
        conversation.reset()
        assert conversation.messages == []
        await conversation.send("second")
    assert said(scripted)[1] == [("user", "second")]


async def test_messages_set_by_the_caller_are_what_the_next_send_goes_on_from(scripted):
    scripted.add("Noted.")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        conversation.messages = [
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": "ok"},
        ]
        await conversation.send("now")
    assert said(scripted) == [[("user", "earlier"), ("assistant", "ok"), ("user", "now")]]


async def test_reasoning_is_for_the_one_send_it_is_given_to(scripted):
    scripted.add("a", "b")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        await conversation.send("think", reasoning="high")
        await conversation.send("quick")
    assert scripted.requests[0].body["reasoning_effort"] == "high"
    assert "reasoning_effort" not in scripted.requests[1].body


async def test_a_failed_run_keeps_the_prompt_it_reached(scripted):
    scripted.add(failure(400, "bad request"), "fine now")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        with pytest.raises(ProviderError, match="bad request"):
            await conversation.send("lost?")
        assert conversation.messages == [{"role": "user", "content": "lost?"}]
        await conversation.send("again")
    assert said(scripted)[1] == [("user", "lost?"), ("user", "again")]


@pytest.mark.parametrize(
    ("send", "error"),
    [
        ({"prompt": ["text", b"raw bytes"]}, ToolnexusError),
        ({"prompt": "list", "schema": {"type": "array"}}, ToolnexusError),
        ({"prompt": "hm", "reasoning": "extreme"}, ValueError),
    ],
    ids=["bad-prompt-part", "bad-schema", "bad-reasoning"],
)
async def test_a_send_refused_before_it_starts_leaves_the_messages_as_they_were(
    scripted, send, error
):
    scripted.add("first answer", "still fine")
    async with scripted_client(scripted) as client:
        conversation = client.conversation(Toolkit())
        await conversation.send("first")
        before = list(conversation.messages)
        with pytest.raises(error):
            await conversation.send(**send)
        assert conversation.messages == before
        assert (await conversation.send("next")).text == "still fine"
    assert len(scripted.requests) == 2


class Recording:
    """Not a Client: anything with a `run` will do."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, prompt: Any, toolkit: Any, **options: Any) -> RunResult:
        self.calls.append(
            {"prompt": prompt, "toolkit": toolkit, **options, "history": list(options["history"])}
        )
        reply = {"role": "assistant", "content": f"re: {prompt}"}
        return RunResult(messages=[*options["history"], {"role": "user", "content": prompt}, reply])


async def test_any_runner_gets_the_toolkit_the_cancel_event_and_each_sends_options():
    runner, toolkit, cancel = Recording(), Toolkit(), asyncio.Event()
    conversation = Conversation(runner, toolkit, cancel)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    await conversation.send("one", schema=schema)
    await conversation.send("two", reasoning="low")
    first, second = runner.calls
    assert (first["toolkit"], first["cancel"], first["schema"], first["reasoning"]) == (
        toolkit,
        cancel,
        schema,
        None,
    )
    assert (second["schema"], second["reasoning"], second["cancel"]) == (None, "low", cancel)
    assert first["history"] == [] and [m["content"] for m in second["history"]] == [
        "one",
        "re: one",
    ]
