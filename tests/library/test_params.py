"""toolnexus._params: request options a user passes through. `check_request_params` hands back
a copy and refuses the keys the loop writes itself (messages, tools, stream);
`parse_option_value` types a command line's text as JSON when it is JSON a request body
can carry, else keeps it as the very text typed."""

from __future__ import annotations

import json

import pytest

from toolnexus._params import RESERVED_PARAMS, check_request_params, parse_option_value


def test_the_params_come_back_as_a_copy_the_caller_can_go_on_changing():
    given = {"temperature": 0.2, "stop": ["\n"]}
    checked = check_request_params(given)
    assert checked == given and checked is not given
    given["temperature"] = 1.5
    checked["seed"] = 7
    assert checked["temperature"] == 0.2 and "seed" not in given


@pytest.mark.parametrize("empty", [None, {}])
def test_no_params_are_an_empty_dict(empty):
    assert check_request_params(empty) == {}


def test_every_reserved_key_given_is_named_in_order():
    with pytest.raises(ValueError) as caught:
        check_request_params({"tools": [], "temperature": 1, "stream": False, "messages": []})
    assert str(caught.value) == "request_params may not set messages, stream, tools"


@pytest.mark.parametrize("key", sorted(RESERVED_PARAMS))
@pytest.mark.parametrize("value", [None, False, "", [], {}])
def test_a_reserved_key_is_refused_whatever_its_value(key, value):
    with pytest.raises(ValueError, match=f"may not set {key}$"):
        check_request_params({key: value})


def test_keys_that_only_look_reserved_are_sent_as_given():
    near = {
        "Messages": 1,
        "stream_options": {"include_usage": True},
        "tool_choice": "auto",
        " tools": 2,
    }
    assert check_request_params(near) == near


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-0.5", -0.5),
        ("1e3", 1000.0),
        ("-7", -7),
        (" 42 ", 42),
        ("true\n", True),
        ('"0.2"', "0.2"),  # quoted: the string, not the number
        ('{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]}),
        ('"\\u001b[2J"', "\x1b[2J"),
    ],
)
def test_json_text_becomes_its_value(text, value):
    assert parse_option_value(text) == value
    assert type(parse_option_value(text)) is type(value)


@pytest.mark.parametrize(
    "text",
    [
        "True",
        "None",
        "0x10",
        "1_000",
        ".5",
        "+1",
        "1.",
        "'single'",
        "[1,",
        '{"a": 1}{}',
        "{a: 1}",
        "[1, 2,]",
        "low high",
        "-",
        "--",
        "\x1b[2J",
        "1" * 5000,
    ],
)
def test_text_that_is_not_json_is_kept_as_typed(text):
    assert parse_option_value(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "-Infinity",
        "[NaN]",
        '{"t": Infinity}',
        "1e400",
        "-1e400",
        "[1e999]",
        '{"top_p": 1e309}',  # too large for a float: infinite
    ],
)
def test_a_number_json_cannot_carry_stays_text(text):
    """A value that would make the request body invalid JSON is not a number."""
    value = parse_option_value(text)
    assert value == text
    json.dumps({"option": value}, allow_nan=False)  # the body can carry it
