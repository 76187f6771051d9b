"""A client's tuning as one frozen ClientOptions value; every old keyword still works, and a
keyword passed beside `options` wins over its field."""

from __future__ import annotations

import dataclasses

import pytest

from toolnexus import ClientOptions, Retries, Timeouts, create_client, create_toolkit, define_tool
from toolnexus.testing import ScriptedCall, ScriptedModel, ScriptedReply

pytestmark = pytest.mark.usefixtures("no_keys_in_env")


def ping() -> str:
    """Answer pong."""
    return "pong"


def _calling_model(turns: int) -> ScriptedModel:
    """A model that calls `ping` every turn."""
    return ScriptedModel([ScriptedReply(tool_calls=[ScriptedCall("ping")])] * turns)


def _client(model: ScriptedModel, **kwargs):
    return create_client(base_url="http://model.test", style=model, model="m", **kwargs)


async def _turns(client) -> tuple[int, str]:
    toolkit = (await create_toolkit()).register(define_tool(ping))
    result = await client.run("go", toolkit)
    return result.turns, result.status


async def test_the_options_value_sets_how_a_client_runs():
    options = ClientOptions(max_turns=2, reasoning="low")
    model = _calling_model(5)
    assert await _turns(_client(model, options=options)) == (2, "incomplete")
    assert [r.reasoning for r in model.requests] == ["low", "low"]


async def test_a_keyword_passed_beside_options_wins_over_its_field():
    options = ClientOptions(max_turns=2, reasoning="low")
    model = _calling_model(5)
    client = _client(model, options=options, max_turns=3)
    assert await _turns(client) == (3, "incomplete")
    assert {r.reasoning for r in model.requests} == {"low"}  # the other fields stay


async def test_the_old_keywords_still_work_alone():
    model = _calling_model(5)
    assert await _turns(_client(model, max_turns=1)) == (1, "incomplete")


def test_timeouts_and_retries_come_from_options_unless_given():
    options = ClientOptions(timeouts=Timeouts(run_s=30), retries=Retries(count=7))
    client = _client(ScriptedModel(), options=options)
    assert client.settings.run_timeout_s == 30
    assert client.settings.transport.retries.count == 7
    client = _client(ScriptedModel(), options=options, retries=1, timeout_ms=5000)
    assert client.settings.transport.retries.count == 1
    assert client.settings.run_timeout_s == 5
    # an older single keyword sets its field over the options' value
    client = _client(ScriptedModel(), options=options, connect_timeout_s=2)
    assert client.settings.transport.timeouts == Timeouts(connect_s=2, run_s=30)


def test_none_given_for_context_overrides_the_options_policy():
    assert _client(ScriptedModel(), options=ClientOptions()).settings.context is not None
    assert _client(ScriptedModel(), options=ClientOptions(context=None)).settings.context is None
    client = _client(ScriptedModel(), options=ClientOptions(), context=None, tool_search=None)
    assert client.settings.context is None and client.settings.tool_search is None


def test_options_are_frozen_and_checked_when_made():
    options = ClientOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_turns = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_turns must be a whole number of at least 1"):
        ClientOptions(max_turns=0)
    with pytest.raises(ValueError, match="reasoning must be one of off, low, medium, high"):
        ClientOptions(reasoning="max")
    with pytest.raises(ValueError, match="tool_search must be a share from 0 to 1"):
        ClientOptions(tool_search=2)
    with pytest.raises(ValueError, match="request_params may not set"):
        ClientOptions(request_params={"messages": []})
    # the params handed in are copied: changing the dict later changes nothing
    params = {"temperature": 0.2}
    options = ClientOptions(request_params=params)
    params["temperature"] = 1.0
    assert options.request_params["temperature"] == 0.2
    assert dataclasses.replace(options, max_turns=4).max_turns == 4


def test_a_bad_keyword_beside_options_is_still_one_clear_error():
    with pytest.raises(ValueError, match="max_tool_calls_per_run must be a whole number"):
        _client(ScriptedModel(), options=ClientOptions(), max_tool_calls_per_run=0)
