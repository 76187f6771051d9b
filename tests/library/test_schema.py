"""toolnexus.schema promises structured output's schema handling: `OutputSchema.of` takes
only a JSON object describing an object (else a ToolnexusError saying what it got), names
it by a usable title or "response", and makes it strict without touching the caller's
dict; `check` says where a value breaks the schema and what is wrong, for the subset it
covers, leaving other keywords (`$ref`...) to the endpoint; `OutputSchema.read` turns a
reply that is cut off, not JSON or off the schema into a ProviderError quoting only its
beginning; `parse_short_schema` reads 'name [type][: description]' fields.

The request each style sends and the validator's basic messages are in
tests/library/test_structured_output.py; this file is the edge cases."""

from __future__ import annotations

import copy
import json
import re

import pytest

from toolnexus.errors import ProviderError, ToolnexusError
from toolnexus.schema import DEFAULT_NAME, OutputSchema, check, multi, parse_short_schema, strict

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "nick": {"type": "string"}},
    "required": ["name"],
}


# ----------------------------------------------------------------------------- OutputSchema.of


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        ([PERSON], "array"),
        ("object", "string"),
        (None, "null"),
        (3, "integer"),
        (True, "boolean"),
    ],
)
def test_a_schema_that_is_not_a_json_object_is_refused_naming_what_it_is(schema, kind):
    with pytest.raises(ToolnexusError, match=f"a schema must be a JSON object, not {kind}$"):
        OutputSchema.of(schema)


@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "string"}, {"type": "array", "items": PERSON}, {"type": ["string", "null"]}],
)
def test_a_root_that_is_not_an_object_is_refused_pointing_at_multi(schema):
    with pytest.raises(ToolnexusError, match=r"object at its root .*wrap a list with multi\(\)"):
        OutputSchema.of(schema)


def test_an_object_root_may_be_nullable_or_untyped_with_properties():
    assert OutputSchema.of({"type": ["object", "null"]}).schema["additionalProperties"] is False
    untyped = OutputSchema.of({"properties": {"a": {"type": "integer"}}}).schema
    assert untyped == {
        "properties": {"a": {"type": ["integer", "null"]}},
        "required": ["a"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("person_v2-x", "person_v2-x"),
        ("p" * 64, "p" * 64),
        ("p" * 65, DEFAULT_NAME),
        ("a person", DEFAULT_NAME),
        ("", DEFAULT_NAME),
        ("ünï", DEFAULT_NAME),
        (7, DEFAULT_NAME),
        (None, DEFAULT_NAME),
    ],
)
def test_the_name_is_the_title_only_when_an_endpoint_takes_it(title, name):
    assert OutputSchema.of({**PERSON, "title": title}).name == name


def test_making_a_schema_strict_leaves_the_callers_dict_as_it_was():
    schema = {
        "type": "object",
        "properties": {"pets": {"type": "array", "items": PERSON}, "best": PERSON},
    }
    before = copy.deepcopy(schema)
    OutputSchema.of(schema)
    assert schema == before


PROPERTIES = 'a schema\'s "properties" must be an object (name -> schema), not '
REQUIRED = 'a schema\'s "required" must be a list of property names, not '


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": ["name", "age"]}, PROPERTIES + "array"),
        (
            {"type": "object", "properties": {"pets": {"type": "object", "properties": "dog"}}},
            PROPERTIES + "string",
        ),
        ({"type": "object", "properties": {"name": {}}, "required": "name"}, REQUIRED + '"name"'),
        ({"type": "object", "properties": {"name": {}}, "required": 1}, REQUIRED + "1"),
        (
            {"type": "object", "properties": {"name": {}}, "required": [{"name": True}]},
            REQUIRED + '[{"name": true}]',
        ),
        (
            {"type": "object", "properties": {"name": {}}, "required": {"name"}},
            REQUIRED + "\"{'name'}\"",
        ),
    ],
    ids=[
        "properties-list",
        "nested-properties-string",
        "required-string",
        "required-int",
        "required-objects",
        "required-set",
    ],
)
def test_malformed_properties_or_required_are_refused_saying_which(schema, message):
    with pytest.raises(ToolnexusError, match=re.escape(message)):
        OutputSchema.of(schema)


def test_required_may_be_a_python_tuple():
    schema = OutputSchema.of({**PERSON, "required": ("name",)}).schema
    assert schema["properties"] == {
        "name": {"type": "string"},
        "nick": {"type": ["string", "null"]},
    }


# ----------------------------------------------------------------------------- strict


def test_strict_reaches_into_any_of_and_keeps_what_it_cannot_read():
    made = strict({"anyOf": [PERSON, "junk", {"type": "string"}]})
    assert made["anyOf"][1:] == ["junk", {"type": "string"}]
    assert made["anyOf"][0]["required"] == ["name", "nick"]
    assert made["anyOf"][0]["additionalProperties"] is False


def test_an_optional_field_already_nullable_is_not_made_nullable_twice():
    made = strict(
        {
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": ["string", "null"], "enum": ["x", None]},
                "c": {"enum": ["x", "y"]},
                "d": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            },
        }
    )
    assert made["properties"] == {
        "a": {"type": ["string", "null"]},
        "b": {"type": ["string", "null"], "enum": ["x", None]},
        "c": {"anyOf": [{"enum": ["x", "y"]}, {"type": "null"}]},
        "d": {"anyOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]},
    }
    for value in ("x", None):
        assert check({"a": value, "b": value, "c": value, "d": value}, made) is None


def test_a_recursive_schema_by_ref_is_left_to_the_endpoint_and_not_followed():
    tree = {
        "type": "object",
        "required": ["name", "children"],
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    schema = OutputSchema.of(tree)
    assert schema.schema["properties"]["children"]["items"] == {"$ref": "#"}
    deep = {"name": "root", "children": [{"name": "kid", "children": ["anything"]}]}
    assert schema.read(json.dumps(deep)) == deep


# ----------------------------------------------------------------------------- check


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (True, "boolean"),
        (1.5, "number"),
        (float("inf"), "number"),
        ("7", "string"),
        (None, "null"),
        ({}, "object"),
        ([], "array"),
    ],
)
def test_only_a_whole_number_is_an_integer(value, kind):
    assert check(value, {"type": "integer"}) == f"$: expected integer, got {kind}"


def test_a_boolean_is_not_a_number_but_integers_are():
    assert check(True, {"type": "number"}) == "$: expected number, got boolean"
    assert check(3, {"type": "number"}) is None and check(2.0, {"type": "integer"}) is None


def test_the_path_goes_down_through_objects_and_lists():
    schema = {
        "type": "object",
        "properties": {
            "x": {
                "type": "object",
                "properties": {
                    "y": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"z": {"type": "string"}}},
                    }
                },
            }
        },
    }
    value = {"x": {"y": [{"z": "ok"}, {"z": "ok"}, {"z": 3}]}}
    assert check(value, schema) == "$.x.y[2].z: expected string, got integer"


def test_extra_properties_are_checked_against_an_additional_properties_schema():
    counts = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert check({"a": 1, "b": 2}, counts) is None
    assert check({"a": 1, "b": "two"}, counts) == "$.b: expected integer, got string"
    assert check({"anything": [1]}, {"type": "object"}) is None  # open by default


def test_any_of_passes_when_one_fits_and_otherwise_says_the_first_problem():
    schema = {"anyOf": [{"type": "integer"}, {"type": "null"}, "not a schema"]}
    assert check(None, schema) is None and check(4, schema) is None
    assert check("x", schema) == "$: expected integer, got string"
    assert check("x", {"anyOf": ["not a schema"]}) is None


def test_type_names_that_are_not_strings_are_ignored():
    assert check("x", {"type": ["string", 5, None]}) is None
    assert check(1, {"type": ["string", 5]}) == "$: expected string, got integer"


def test_a_huge_value_outside_an_enum_is_quoted_short():
    problem = check("x" * 10_000, {"enum": ["a", "b"]})
    assert problem.startswith('$: "xxx') and problem.endswith(' is not one of "a", "b"')
    assert len(problem) < 120


# ----------------------------------------------------------------------------- read


@pytest.mark.parametrize("reply", ['{"name": "Ada"', "", "   ", "Sure! Here it is:", "[1, 2"])
def test_a_reply_that_is_cut_off_or_not_json_is_a_provider_error_quoting_it(reply):
    with pytest.raises(ProviderError, match="not the JSON the schema asks for: ") as caught:
        OutputSchema.of(PERSON).read(reply)
    assert repr(reply) in str(caught.value)


def test_a_huge_reply_that_is_not_json_is_quoted_by_its_first_200_characters():
    with pytest.raises(ProviderError) as caught:
        OutputSchema.of(PERSON).read("y" * 1_000_000)
    assert str(caught.value) == f"the reply is not the JSON the schema asks for: {'y' * 200!r}"


def test_a_strict_reply_may_leave_an_optional_field_null_but_add_none():
    schema = OutputSchema.of(PERSON)
    assert schema.read('{"name": "Ada", "nick": null}') == {"name": "Ada", "nick": None}
    with pytest.raises(ProviderError, match=r"\$: missing required property 'nick'"):
        schema.read('{"name": "Ada"}')
    with pytest.raises(ProviderError, match=r"\$.age: not a property the schema allows"):
        schema.read('{"name": "Ada", "nick": null, "age": 3}')


# ----------------------------------------------------------------------------- short form


def test_a_description_keeps_every_colon_after_the_first():
    assert parse_short_schema("when: at 10:30: sharp")["properties"] == {
        "when": {"type": "string", "description": "at 10:30: sharp"}
    }


def test_a_field_named_twice_is_one_field_the_last_one():
    assert parse_short_schema("age, age int") == {
        "type": "object",
        "properties": {"age": {"type": "integer"}},
        "required": ["age"],
    }


def test_an_empty_description_is_no_description_and_blank_lines_are_skipped():
    assert parse_short_schema("\n\n  title:  \n\n  done bool\n") == {
        "type": "object",
        "required": ["title", "done"],
        "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}},
    }


def test_names_may_hold_dashes_and_digits_after_the_first_letter():
    assert list(parse_short_schema("first-name, line_2")["properties"]) == ["first-name", "line_2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("age Int", "unknown type 'Int'"),
        ("2nd", "cannot read the schema field '2nd'"),
        ("na.me", "cannot read the schema field 'na.me'"),
        ("\n \n", "the schema names no fields"),
        ("", "the schema names no fields"),
    ],
    ids=["type-case", "leading-digit", "dot", "blank-lines", "empty"],
)
def test_the_short_form_refuses_names_and_types_it_cannot_read(text, message):
    with pytest.raises(ToolnexusError, match=message):
        parse_short_schema(text)


def test_multi_of_a_list_item_schema_reads_a_list_of_those():
    schema = OutputSchema.of(multi({"type": "string"}))
    assert schema.read('{"items": ["a", "b"]}') == {"items": ["a", "b"]}
    with pytest.raises(ProviderError, match=r"\$.items\[1\]: expected string, got integer"):
        schema.read('{"items": ["a", 1]}')
