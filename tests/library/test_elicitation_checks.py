"""What a person types into an MCP server's form, checked against the field as the
protocol's restricted schema describes it (2025-06-18 and 2025-11-25): strings with a
format or a length, numbers and integers in a range, booleans, single choices titled by
`enumNames` or `oneOf`, and multi-selects of `enum` or titled `anyOf` items. A value that
fails says why in one line naming the field; one that passes is what the server gets."""

from __future__ import annotations

import pytest

from toolnexus.mcp.elicitation import field_hint, field_value, form_fields, shown_default

SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "title": "Email", "format": "email"},
        "site": {"type": "string", "title": "Site", "format": "uri"},
        "born": {"type": "string", "title": "Born", "format": "date"},
        "meet": {"type": "string", "title": "Meeting", "format": "date-time"},
        "code": {"type": "string", "title": "Code", "minLength": 2, "maxLength": 4},
        "score": {"type": "integer", "title": "Score", "minimum": 0, "maximum": 1000},
        "ratio": {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 1},
        "agree": {"type": "boolean", "title": "Agree", "default": True},
        "size": {
            "type": "string",
            "title": "Size",
            "enum": ["s", "m", "l"],
            "enumNames": ["Small", "Medium", "Large"],
            "default": "m",
        },
        "color": {
            "type": "string",
            "title": "Color",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "toppings": {
            "type": "array",
            "title": "Toppings",
            "minItems": 1,
            "maxItems": 2,
            "items": {
                "anyOf": [
                    {"const": "ham", "title": "Ham"},
                    {"const": "egg", "title": "Egg"},
                    {"const": "kale", "title": "Kale"},
                ]
            },
            "default": ["egg"],
        },
        "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b"]}},
        "nested": {"type": "object", "title": "Not allowed"},
        "loose": {"type": "array", "title": "No choices", "items": {"type": "string"}},
    },
    "required": ["email", "toppings"],
}


@pytest.fixture
def field():
    fields = {f.name: f for f in form_fields(SCHEMA)}
    return fields.__getitem__


def test_every_field_the_protocol_allows_is_read_and_no_other():
    fields = form_fields(SCHEMA)
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("email", "string", True),
        ("site", "string", False),
        ("born", "string", False),
        ("meet", "string", False),
        ("code", "string", False),
        ("score", "integer", False),
        ("ratio", "number", False),
        ("agree", "boolean", False),
        ("size", "string", False),
        ("color", "string", False),
        ("toppings", "array", True),
        ("tags", "array", False),
    ]


@pytest.mark.parametrize(
    ("name", "typed", "value"),
    [
        ("email", " ann@example.org ", "ann@example.org"),
        ("site", "https://example.org/a", "https://example.org/a"),
        ("born", "1990-02-28", "1990-02-28"),
        ("meet", "2025-01-31T09:30:00Z", "2025-01-31T09:30:00Z"),
        ("meet", "2025-01-31T09:30:00.5+02:00", "2025-01-31T09:30:00.5+02:00"),
        ("code", "ab", "ab"),
        ("code", "abcd", "abcd"),
        ("score", "1000", 1000),
        ("score", "0", 0),
        ("ratio", "0.25", 0.25),
        ("ratio", "1", 1),
        ("agree", "no", False),
        ("agree", "Y", True),
        ("size", "Large", "l"),
        ("size", "m", "m"),
        ("color", "green", "g"),
        ("toppings", "Ham, egg", ["ham", "egg"]),
        ("toppings", "kale, Kale", ["kale"]),
        ("tags", "b, a", ["b", "a"]),
    ],
)
def test_a_value_that_fits_its_field_is_what_the_server_gets(field, name, typed, value):
    assert field_value(field(name), typed) == value


@pytest.mark.parametrize(
    ("name", "typed", "error"),
    [
        ("email", "ann", "Email: an email address is needed"),
        ("email", "ann@example", "Email: an email address is needed"),
        ("site", "example.org", "Site: a URI (https://...) is needed"),
        ("born", "28.02.1990", "Born: a date (YYYY-MM-DD) is needed"),
        ("born", "1990-02-31", "Born: a date (YYYY-MM-DD) is needed"),
        ("meet", "2025-01-31 09:30", "Meeting: a date and time (YYYY-MM-DDTHH:MM:SSZ) is needed"),
        ("code", "a", "Code: 2 to 4 characters are needed"),
        ("code", "abcde", "Code: 2 to 4 characters are needed"),
        ("score", "5000", "Score: 5000 is not from 0 to 1000"),
        ("score", "-1", "Score: -1 is not from 0 to 1000"),
        ("score", "2.5", "Score: a whole number is needed"),
        ("ratio", "1.5", "Ratio: 1.5 is not from 0 to 1"),
        ("ratio", "nan", "Ratio: a number is needed"),
        ("agree", "maybe", "Agree: answer yes or no"),
        ("size", "huge", "Size: choose one of Small, Medium, Large"),
        ("color", "blue", "Color: choose one of Red, Green"),
        ("toppings", "ham, egg, kale", "Toppings: choose 1 to 2 of: Ham, Egg, Kale"),
        ("toppings", "", "Toppings: choose 1 to 2 of: Ham, Egg, Kale"),
        ("toppings", "ham, bacon", "Toppings: choose one of Ham, Egg, Kale"),
    ],
)
def test_a_value_that_does_not_fit_says_why_naming_the_field(field, name, typed, error):
    with pytest.raises(ValueError) as caught:
        field_value(field(name), typed)
    assert str(caught.value) == error


def test_choices_show_their_titles_and_each_field_its_limits(field):
    assert field_hint(field("size")) == "one of: Small | Medium | Large"
    assert field_hint(field("color")) == "one of: Red | Green"
    assert field_hint(field("toppings")) == "1 to 2 of: Ham, Egg, Kale (separated by commas)"
    assert field_hint(field("tags")) == "any of: a, b (separated by commas)"
    assert field_hint(field("score")) == "a whole number from 0 to 1000"
    assert field_hint(field("ratio")) == "a number from 0 to 1"
    assert field_hint(field("code")) == "text, 2 to 4 characters"
    assert field_hint(field("born")) == "a date (YYYY-MM-DD)"
    assert field_hint(field("agree")) == "yes or no"


def test_a_default_shows_as_the_person_would_type_it_and_reads_back(field):
    for name, shown, value in [
        ("size", "Medium", "m"),
        ("toppings", "Egg", ["egg"]),
        ("agree", "yes", True),
    ]:
        assert shown_default(field(name)) == shown
        assert field_value(field(name), shown) == value
    assert shown_default(field("email")) == ""


def test_a_choice_whose_value_would_not_show_as_it_is_is_left_out():
    [choice] = form_fields(
        {
            "type": "object",
            "properties": {
                "pick": {
                    "type": "string",
                    "oneOf": [{"const": "ok", "title": "Fine"}, {"const": "\x1b[2J", "title": "x"}],
                }
            },
        }
    )
    assert choice.choices == ("ok",) and choice.titles == ("Fine",)
