"""Structured output: each style's request for a schema (loopback stub), result.data and
the entry points that take a schema (scripted model), the strict-mode normalisation, the
validator's messages, and the short form."""

from __future__ import annotations

import json

import pytest

from tests.support.resilience_helpers import single_try_client
from tests.support.scripted import scripted_client
from tests.support.stub_provider import (
    Reply,
    anthropic_stream,
    anthropic_tool_use,
    openai_text,
    responses_reply,
)
from toolnexus import ProviderError, ToolnexusError, create_toolkit, define_tool
from toolnexus.schema import OutputSchema, check, multi, parse_short_schema

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
STRICT_PERSON = {**PERSON, "additionalProperties": False}
ANSWER = {"name": "Ada", "age": 36}


async def test_openai_sends_a_strict_json_schema_and_returns_the_data(stub):
    stub.script(Reply.json(openai_text(json.dumps(ANSWER))))
    async with single_try_client(stub) as client:
        result = await client.run("who?", None, schema=PERSON)
    assert result.data == ANSWER and result.text == json.dumps(ANSWER)
    assert stub.requests[0].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": STRICT_PERSON, "strict": True},
    }


async def test_responses_sends_text_format(stub):
    stub.script(Reply.json(responses_reply(json.dumps(ANSWER))))
    async with single_try_client(stub, "responses") as client:
        result = await client.run("who?", None, schema={**PERSON, "title": "person"})
    assert result.data == ANSWER
    assert stub.requests[0].json["text"] == {
        "format": {
            "type": "json_schema",
            "name": "person",
            "schema": {**STRICT_PERSON, "title": "person"},
            "strict": True,
        }
    }


async def test_anthropic_forces_a_tool_whose_input_is_the_data(stub):
    stub.script(Reply.json(anthropic_tool_use([("response", ANSWER)])))
    async with single_try_client(stub, "anthropic", prompt_cache=False) as client:
        events = [e async for e in client.stream("who?", None, schema=PERSON)]
    result = events[-1]["result"]
    assert result.data == ANSWER
    assert [e["type"] for e in events] == ["text", "usage", "done"]  # nothing ran as a tool
    assert json.loads(events[0]["delta"]) == ANSWER
    assert len(stub.requests) == 1
    body = stub.requests[0].json
    assert body["tools"] == [
        {
            "name": "response",
            "input_schema": STRICT_PERSON,
            "description": "Give your final answer by calling this tool.",
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "response"}
    # the transcript holds the answer as text: valid to continue on any style
    assert result.messages[-1] == {"role": "assistant", "content": json.dumps(ANSWER)}


async def test_anthropic_streamed_forced_tool(stub):
    stub.script(anthropic_stream(tool_calls=[("response", ANSWER)]))
    async with single_try_client(stub, "anthropic") as client:
        result = await client.ask("who?", None, schema=PERSON, on_text=lambda _: None)
    assert result.data == ANSWER


async def test_anthropic_with_tools_lets_the_model_use_them_first(stub):
    def lookup(name: str) -> str:
        """Look a person up."""
        return "born 1815"

    toolkit = await create_toolkit()
    toolkit.register(define_tool(lookup))
    stub.script(
        Reply.json(anthropic_tool_use([("lookup", {"name": "Ada"})])),
        Reply.json(anthropic_tool_use([("response", ANSWER)])),
    )
    async with single_try_client(stub, "anthropic") as client:
        result = await client.run("who?", toolkit, schema=PERSON)
    assert result.data == ANSWER and [c["name"] for c in result.tool_calls] == ["lookup"]
    assert stub.requests[0].json["tool_choice"] == {"type": "any"}


async def test_a_reply_that_breaks_the_schema_names_the_path(scripted):
    scripted.add('{"name": "Ada", "age": "36"}', "Ada, 36")
    async with scripted_client(scripted) as client:
        with pytest.raises(
            ProviderError,
            match=r"does not match the schema: "
            r"\$\.age: expected integer, got string",
        ):
            await client.run("who?", None, schema=PERSON)
        with pytest.raises(ProviderError, match="not the JSON the schema asks for: 'Ada, 36'"):
            await client.run("who?", None, schema=PERSON)


async def test_conversation_and_stream_take_a_schema(scripted):
    scripted.add(json.dumps(ANSWER), json.dumps(ANSWER))
    async with scripted_client(scripted) as client:
        conversation = client.conversation(await create_toolkit())
        assert (await conversation.send("who?", schema=PERSON)).data == ANSWER
        events = [e async for e in client.stream("who?", None, schema=PERSON)]
    assert events[-1]["result"].data == ANSWER
    assert all("response_format" in r.body for r in scripted.requests)


async def test_a_bad_schema_fails_before_any_request(scripted):
    async with scripted_client(scripted) as client:
        with pytest.raises(ToolnexusError, match="object at its root .* multi"):
            await client.run("list", None, schema={"type": "array"})
    async with scripted_client(scripted, "anthropic", reasoning="low") as client:
        with pytest.raises(ToolnexusError, match="cannot combine a schema with reasoning"):
            await client.run("who?", None, schema=PERSON)
    assert scripted.requests == []


async def test_no_schema_means_no_data(scripted):
    scripted.add("hi")
    async with scripted_client(scripted, "anthropic") as client:
        result = await client.run("hi", None)
    assert result.data is None and "tool_choice" not in scripted.requests[0].body


# ----------------------------------------------------------------------------- normalising


def test_strict_mode_closes_objects_and_makes_optional_fields_nullable():
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nick": {"type": "string"},
            "mood": {"enum": ["calm", "busy"], "type": "string"},
            "pets": {
                "type": "array",
                "items": {"type": "object", "properties": {"kind": {"type": "string"}}},
            },
            "any": {},
        },
        "required": ["name", "pets"],
    }
    assert OutputSchema.of(schema).schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nick": {"type": ["string", "null"]},
            "mood": {"enum": ["calm", "busy", None], "type": ["string", "null"]},
            "pets": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"kind": {"type": ["string", "null"]}},
                    "required": ["kind"],
                    "additionalProperties": False,
                },
            },
            "any": {},
        },
        "required": ["name", "nick", "mood", "pets", "any"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"name": "Ada", "age": 36, "tags": ["a", None]}, None),
        ({"name": "Ada", "age": 36.0, "tags": []}, None),
        ({"name": "Ada", "tags": []}, "$: missing required property 'age'"),
        ({"name": "Ada", "age": True, "tags": []}, "$.age: expected integer, got boolean"),
        (
            {"name": "Ada", "age": 1, "tags": ["a", 2]},
            "$.tags[1]: expected string or null, got integer",
        ),
        ({"name": "Ada", "age": 1, "tags": [], "x": 1}, "$.x: not a property the schema allows"),
        (
            {"name": "Ada", "age": 1, "tags": [], "level": "max"},
            '$.level: "max" is not one of "low", "high"',
        ),
        ([1], "$: expected object, got array"),
    ],
)
def test_the_validator_says_where_and_what(value, problem):
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "age"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}},
            "level": {"enum": ["low", "high"]},
        },
    }
    assert check(value, schema) == problem


# ----------------------------------------------------------------------------- short form


def test_the_short_form():
    assert parse_short_schema("name, age int, tags list") == {
        "type": "object",
        "required": ["name", "age", "tags"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    assert parse_short_schema("""
        title: the title, in a few words
        score float: from 0 to 1
        done bool
    """) == {
        "type": "object",
        "required": ["title", "score", "done"],
        "properties": {
            "title": {"type": "string", "description": "the title, in a few words"},
            "score": {"type": "number", "description": "from 0 to 1"},
            "done": {"type": "boolean"},
        },
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name, age integer",
            "unknown type 'integer' in the schema field 'age integer': use one "
            "of str, int, float, bool, list",
        ),
        ("name, two words here", "cannot read the schema field 'two words here'"),
        (" , ", "the schema names no fields"),
    ],
)
def test_the_short_form_refuses_what_it_cannot_read(text, message):
    with pytest.raises(ToolnexusError, match=message):
        parse_short_schema(text)


async def test_multi_asks_for_a_list_of_objects(stub):
    people = [ANSWER, {"name": "Alan", "age": 41}]
    stub.script(Reply.json(openai_text(json.dumps({"items": people}))))
    async with single_try_client(stub) as client:
        result = await client.run("who?", None, schema=multi(parse_short_schema("name, age int")))
    assert result.data == {"items": people}
    sent = stub.requests[0].json["response_format"]["json_schema"]["schema"]
    assert sent == {
        "type": "object",
        "required": ["items"],
        "additionalProperties": False,
        "properties": {"items": {"type": "array", "items": STRICT_PERSON}},
    }
